package guardian

import (
	"errors"

	"github.com/tether-dev/tether/probe"
)

// errNotifyUnsupported: Windows has no unix datagram sockets, so no
// $NOTIFY_SOCKET; the config refuses ready: notify there.
var errNotifyUnsupported = errors.New("ready: notify needs unix datagram sockets, which Windows does not have")

func listenNotify(string) (notifySource, error) { return nil, errNotifyUnsupported }

// member: no notify socket, so no sender to check.
func (g *guardian) member(int) bool { return false }

// withWatchdogPID: a watchdog needs notify, which Windows does not have.
func (c *agentCommand) withWatchdogPID() {}

// checkRunner: os/exec, since nothing else reaps the guardian's children.
func (g *guardian) checkRunner() probe.Runner { return nil }
