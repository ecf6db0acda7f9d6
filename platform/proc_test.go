package platform_test

import (
	"os"
	"testing"

	"github.com/tether-dev/tether/platform"
)

// TestRefOf: the reference of this process is Self; a PID nothing has
// is an error.
func TestRefOf(t *testing.T) {
	r, err := platform.RefOf(os.Getpid())
	if err != nil || r != platform.Self() {
		t.Errorf("RefOf(self) = %+v, %v; want %+v", r, err, platform.Self())
	}
	if r, err := platform.RefOf(1 << 30); err == nil {
		t.Errorf("RefOf of a PID nothing has = %+v, want an error", r)
	}
}
