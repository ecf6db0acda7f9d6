//go:build unix

package platform

import (
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
)

func notifyManager(socket, state string) error { return punix.NotifyManager(socket, state) }
func monotonic() time.Duration                 { return punix.Monotonic() }
