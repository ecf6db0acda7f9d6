package human

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute:                    "1m",
		90 * time.Second:               "1m30s",
		time.Hour:                      "1h",
		time.Hour + 30*time.Minute:     "1h30m",
		time.Hour + time.Second:        "1h0m1s",
		2 * time.Second:                "2s",
		300 * time.Millisecond:         "300ms",
		time.Minute + time.Second/2:    "1m0.5s",
		0:                              "0s",
		24 * time.Hour:                 "24h",
		-time.Minute:                   "-1m",
		10*time.Minute + 0*time.Second: "10m",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", time.Duration(d), got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 agents"}, {1, "1 agent"}, {2, "2 agents"}} {
		if got := Count(c.n, "agent", "agents"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
