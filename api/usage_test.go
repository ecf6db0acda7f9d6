package api

import "testing"

func TestUsageText(t *testing.T) {
	for _, c := range []struct {
		secs float64
		want string
	}{{0, "0.00s"}, {0.421, "0.42s"}, {12.34, "12.3s"}, {245, "4m05s"}, {11220, "3h07m"}} {
		if got := (Usage{CPUSeconds: c.secs}).CPUText(); got != c.want {
			t.Errorf("CPUText of %v s = %q, want %q", c.secs, got, c.want)
		}
	}
	for _, c := range []struct {
		n    uint64
		want string
	}{{0, "0K"}, {512 << 10, "512K"}, {1000, "1K"}, {64<<20 + 200<<10, "64.2M"}, {3 << 29, "1.50G"}} {
		if got := (Usage{MemoryBytes: c.n}).MemoryText(); got != c.want {
			t.Errorf("MemoryText of %d = %q, want %q", c.n, got, c.want)
		}
	}
}
