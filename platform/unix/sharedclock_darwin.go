//go:build darwin

package unix

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
)

// SharedClock needs a memfd (Linux); here there is none, and every
// process keeps its own time.
type SharedClock struct{}

// NewSharedClockFile fails with errors.ErrUnsupported outside Linux.
func NewSharedClockFile(name string) (*os.File, error) {
	return nil, fmt.Errorf("a shared clock on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// OpenSharedClock finds no clock outside Linux.
func OpenSharedClock(fd int, name string) *SharedClock { return nil }

// Earliest returns now.
func (c *SharedClock) Earliest(now time.Time, window time.Duration) time.Time { return now }

// ID is 0: there is no clock.
func (c *SharedClock) ID() uint64 { return 0 }

// Begin does nothing: there is no count to share.
func (c *SharedClock) Begin() {}

// End does nothing.
func (c *SharedClock) End() {}

// WaitEnded has nobody to wait for.
func (c *SharedClock) WaitEnded(limit time.Duration) bool { return true }

// Leave does nothing.
func (c *SharedClock) Leave() {}

// Delegate names self: without a shared clock every process acts.
func (c *SharedClock) Delegate(self int, alive func(pid int) bool) (int, bool) { return self, true }
