package history

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// Now grows as time passes, at the rate of Go's own monotonic clock.
func TestNow(t *testing.T) {
	a, t0 := Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	b, el := Now(), time.Since(t0)
	if d := time.Duration(b - a); d < 20*time.Millisecond || d > el+5*time.Millisecond {
		t.Fatalf("Now moved %v while %v passed", d, el)
	}
}

// Boot tells two processes apart, and fails for a process that is gone.
func TestBoot(t *testing.T) {
	self, err := Boot(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("Boot(self) = %d, %v", self, err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Boot(cmd.Process.Pid); err == nil {
		t.Errorf("Boot of a process that is gone and reaped succeeded")
	}
}
