package service

import (
	"net"
	"os"
	"syscall"

	pwindows "github.com/tether-dev/tether/platform/windows"
)

// stopSignals make the service stop every agent and exit: Go delivers
// Ctrl-C and Ctrl-Break as os.Interrupt, and the console's close, logoff
// and shutdown events as SIGTERM (after which Windows ends the process
// within seconds; the guardians then see their owner die and stop the
// agents themselves). There is no reload signal: tether reload asks over
// the API.
var (
	stopSignals   = []os.Signal{os.Interrupt, syscall.SIGTERM}
	reloadSignals []os.Signal
)

// secureStateDir makes the state directory the user's own, with a DACL
// that lets no one else in.
func secureStateDir(dir string) error { return pwindows.SecureDir(dir) }

// listenAPI listens on the local API's named pipe.
func listenAPI(name string) (net.Listener, error) { return pwindows.ListenPipe(name) }

// The service lock is LockFileEx on the file's first byte. Windows locks
// are mandatory, so no other handle may read that byte: the pid follows
// it.
var (
	openLockFile = pwindows.OpenLockFile
	tryLock      = pwindows.TryLockFile
	errLocked    = pwindows.ErrFileLocked
)

const pidOffset = 1

// newOrphans has nothing to look after on Windows: a guardian's job
// object ends its tree when the guardian dies.
func newOrphans() (Orphans, error) { return nil, nil }
