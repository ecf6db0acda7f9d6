package upgrade

import (
	"context"
	"net"
	"os/exec"
	"sync"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
)

// A stand-in answers the API's status requests while the service hands
// over, from the moment the API pauses until the successor serves, so
// that a client asking what runs never waits on the freeze, the exec and
// the successor's start. It is the new binary's check (HandoverCheck),
// which, when the service offers a control socket (Offer.StandIn) and it
// can stand in (Answer.StandIn), stays after it has answered, instead of
// exiting:
//
//   - At the pause the service sends it, over the control socket, the
//     API's listening socket and the status as it is then (the upgrade
//     under way in it). The stand-in accepts from then on; it answers a
//     plain status itself, from what it was sent, once per connection,
//     and holds every other connection unread (it only peeks at the
//     request's first line): an action, an event stream, a status with
//     usage, a request not yet whole.
//   - The successor, before it serves, tells it to stop: the stand-in
//     stops accepting and hands back every connection it holds, their
//     requests still unread, and the successor serves them first. The
//     stand-in finishes the statuses under way and exits; the successor,
//     its parent since the exec, reaps it.
//   - A handover that fails takes the connections back the same way,
//     into the service that goes on.
//   - The control socket's end (the service died, or a successor that
//     never served was ended by its bound) makes it stop accepting,
//     close what it holds and exit: it never outlives the service.
//
// It is Unix's: the successor is the same process after execve. On
// Windows the service before answers until its successor's word, and
// the offer names no stand-in.

// StatusServer serves the local API on the connections l accepts,
// answering a status with status (the answer's body, encoded) and nothing
// else, once per connection, and
// closing each once answered: a stand-in's server. It serves until l is
// closed, and the answers under way go on after.
type StatusServer func(l net.Listener, status []byte)

// StandIn is a check that stands in, as the service holds it.
type StandIn struct {
	cmd  *exec.Cmd
	link *link
	// cancel ends the check's context, which kills its group: once it
	// has exited, or to end it.
	cancel context.CancelFunc
	once   sync.Once
}

// Serve hands the stand-in the API's listener l and the status st, which
// it answers from now on.
func (s *StandIn) Serve(l net.Listener, st api.Status) error {
	return s.link.serve(l, st)
}

// Recall stops the stand-in accepting and returns the connections it
// held, none of their requests read.
func (s *StandIn) Recall() ([]net.Conn, error) {
	return s.link.recall()
}

// Close lets the stand-in go: its control socket closes, which ends it,
// and it is reaped in the background. Nil does nothing.
func (s *StandIn) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.link.close()
		go func() {
			_ = platform.WaitChild(s.cmd)
			s.cancel()
		}()
	})
}
