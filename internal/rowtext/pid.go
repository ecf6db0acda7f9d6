package rowtext

import "github.com/tether-dev/tether/api"

// PID is the agent's own pid as a row shows it: while its process may be
// alive (starting, running, stopping, adoptable); 0 in every other
// state, where a pid would name a process that has ended, or one that is
// no longer the agent's (a cleanup that failed names what is left in
// its error).
func PID(a api.Agent) int {
	switch a.State {
	case api.StateStarting, api.StateRunning, api.StateStopping, api.StateAdoptable:
		return a.PID
	}
	return 0
}
