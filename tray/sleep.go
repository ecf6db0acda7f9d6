package tray

import (
	"slices"
	"time"
)

// settleAfterResume is how long after a resume the tray still holds back
// notices: the service's event stream reconnects, and agents whose
// connections died with the suspend restart, within it.
const settleAfterResume = 10 * time.Second

// sleepGate holds back the notices that arrive while the machine suspends
// and resumes, when crashes and a lost service are the suspend's doing
// and mostly mend themselves. Once the machine has settled, the engine
// shows the held notices that are still true, and drops the others.
type sleepGate struct {
	asleep   bool
	settling bool
	held     []notice // one per Key, the newest, in order of arrival
}

// sleep: the machine is about to suspend.
func (g *sleepGate) sleep() { g.asleep, g.settling = true, false }

// resume: it is back; it settles until release.
func (g *sleepGate) resume() {
	if g.asleep {
		g.asleep, g.settling = false, true
	}
}

// holding reports whether notices are held back now.
func (g *sleepGate) holding() bool { return g.asleep || g.settling }

// gated reports whether n is one a suspend may have caused: about an
// agent, or about the service going and coming back. The results of the
// user's own clicks are never held.
func gated(n notice) bool {
	return n.Agent != "" || n.Subject == subjectService
}

// hold keeps n until release; a newer notice of the same Key replaces an
// older one.
func (g *sleepGate) hold(n notice) {
	g.held = slices.DeleteFunc(g.held, func(h notice) bool { return h.Key == n.Key })
	g.held = append(g.held, n)
}

// release ends the settling and returns what was held.
func (g *sleepGate) release() []notice {
	if g.asleep {
		return nil // suspended again meanwhile
	}
	out := g.held
	g.held, g.settling = nil, false
	return out
}
