//go:build unix

package service

import (
	"net"
	"os"
	"syscall"

	punix "github.com/tether-dev/tether/platform/unix"
)

// stopSignals make the service stop every agent and exit; reloadSignals
// make it apply its config again.
var (
	stopSignals   = []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	reloadSignals = []os.Signal{syscall.SIGHUP}
)

// secureStateDir makes the state directory 0700 and the user's own.
func secureStateDir(dir string) error { return punix.SecureDir(dir) }

// listenAPI listens on the local API's unix socket.
func listenAPI(path string) (net.Listener, error) { return punix.ListenUnix(path) }

// The service lock is a flock, which is advisory: the pid is read from
// the start of the file.
var (
	openLockFile = punix.OpenLockFile
	tryLock      = punix.TryLock
	errLocked    = punix.ErrLocked
)

const pidOffset = 0
