package service

import (
	"context"
	"errors"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// Adoption (survive_service_crash): when a service dies, the guardian of
// an agent that opted in keeps the tree and the identity for that long,
// waiting at its adopt socket (Paths.AdoptPath). This service, started
// again, looks there before each start of an agent: a tree that waits is
// adopted, never started a second time (the guardian still holds the
// identity, so a start would only meet contention). An agent that is
// not to run is adopted all the same, and stopped at once.

// adoptWait bounds an adoption: a dial, the attach and its answer.
const adoptWait = 5 * time.Second

// adopt takes over the tree of the agent's guardian if one waits to be
// adopted, and reports whether it did. The row is then that of the
// running agent, as its guardian describes it.
func (a *actor) adopt() bool {
	ctx, cancel := context.WithTimeout(context.Background(), adoptWait)
	defer cancel()
	spec := a.spec(nil)
	s, err := guardian.Adopt(ctx, spec, spec.AdoptPath)
	if err != nil {
		if !errors.Is(err, guardian.ErrNotWaiting) {
			// Another profile's tree (a start meets contention
			// then), or a guardian that did not answer in time.
			a.c.logf("agent %q: not adopted: %v", a.id, err)
		}
		return false
	}
	r := s.Ready()
	a.c.logf("agent %q: adopted its tree (agent pid %d, guardian pid %d, running since %s), which outlived the service before", a.id, r.AgentPID, r.GuardianPID, r.Since.Format(time.RFC3339))
	a.began(s, r.Since)
	return true
}

// adoptUnwanted adopts a waiting tree of an agent that is not to run, and
// stops it: it would otherwise run until its window closed.
func (a *actor) adoptUnwanted() {
	if !a.adoptIdle || a.session != nil {
		return
	}
	if a.adopt() {
		a.requestStop()
	}
}
