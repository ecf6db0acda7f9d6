package tray

import (
	"fmt"
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
	resumes  int      // resumes so far, for the subject of what follows one
}

// sleep: the machine is about to suspend.
func (g *sleepGate) sleep() { g.asleep, g.settling = true, false }

// resume: it is back; it settles until release.
func (g *sleepGate) resume() {
	if g.asleep {
		g.asleep, g.settling = false, true
		g.resumes++
	}
}

// holding reports whether notices are held back now.
func (g *sleepGate) holding() bool { return g.asleep || g.settling }

// gated reports whether n is one a suspend may have caused: about an
// agent, or about the service going and coming back. The results of the
// user's own clicks are never held, nor the taking down of a bubble whose
// problem has ended: that puts nothing new in front of the person.
func gated(n notice) bool {
	return !n.withdraw && (n.Agent != "" || n.Subject == subjectService)
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

// afterResume is what the person is told of the held notices still true
// once the machine has settled: the agents' become one notice, the
// agent's own when there is one, else one that names them all; a
// service still gone is said alone, its agents being gone with it. The
// service's other notices keep their one bubble, each replacing the last.
// A notice that names several agents has a subject of its own for each
// resume, so that it never takes the place of an earlier one.
func (g *sleepGate) afterResume(still []notice) []notice {
	var agents, out []notice
	for _, n := range still {
		switch {
		case n.Key == lostKey:
			return []notice{n}
		case n.Agent != "":
			agents = append(agents, n)
		default:
			out = append(out, n)
		}
	}
	switch len(agents) {
	case 0:
	case 1:
		out = append(out, agents[0])
	default:
		out = append(out, gather(agents, fmt.Sprintf("summary/resume/%d", g.resumes), ""))
	}
	return out
}
