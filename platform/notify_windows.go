//go:build windows

package platform

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// No service manager listens for notifications here.
func notifyManager(string, string) error {
	return fmt.Errorf("service manager notifications on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func monotonic() time.Duration { return 0 }
