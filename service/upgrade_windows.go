//go:build windows

package service

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// On Windows the successor is another process: the tethers, the pipe's
// listening instances and the service lock are duplicated into it, and
// each guardian is told its new owner (attach) before this one exits.
const successorIsSeparate = true

// attachLater: the successor tells every guardian first, since this
// process exits once they all watch the successor.
const attachLater = false

// errNoWindowsHandover: this build cannot hand over on Windows.
var errNoWindowsHandover = errors.New("an upgrade in place is not available on Windows in this build: stop the service, replace the binary and start it again")

type inheritance struct {
	lock     *os.File
	listener net.Listener
}

func newInheritance(lock *os.File, l net.Listener) *inheritance {
	return &inheritance{lock: lock, listener: l}
}

func (in *inheritance) takeOver(target string, rec *handoverRecord, extraEnv []string, write func(*handoverRecord) (string, error)) error {
	return errNoWindowsHandover
}

func inherited(rec *handoverRecord) (*inheritance, error) {
	return nil, errNoWindowsHandover
}

func attachment(id string, t *tetherHandover) (guardian.Attachment, error) {
	return guardian.Attachment{}, errNoWindowsHandover
}

// stopSelf holds this process where a test asked (Windows has no
// SIGSTOP): a test kills it there.
func stopSelf() { time.Sleep(time.Hour) }
