package service

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/probe"
)

// waits maps a readiness check's kind onto the API's wait.
var waits = map[probe.Kind]api.Wait{
	probe.KindNotify: api.WaitNotify,
	probe.KindFD:     api.WaitFD,
	probe.KindHTTP:   api.WaitHTTP,
	probe.KindTCP:    api.WaitTCP,
	probe.KindExec:   api.WaitExec,
	probe.KindLog:    api.WaitLog,
}

// waiting is what the row of a starting agent says it waits for, read
// from the actor: the agents it starts after (set by agentsWait, while
// it waits for them), or its readiness check while its tree runs and the
// check has not passed; nil for an agent that waits for neither.
func (a *actor) waiting() *api.Waiting {
	switch {
	case a.depWait:
		if w := a.row.Waiting; w != nil && w.For == api.WaitAgents {
			return w
		}
		return nil
	case a.session != nil && a.pending && !a.stopAsked && a.cfg.Ready != nil:
		r := a.cfg.Ready
		w := &api.Waiting{For: waits[r.Kind], Since: a.startedAt.UTC()}
		switch r.Kind {
		case probe.KindFD:
			w.What = strconv.Itoa(r.FD)
		case probe.KindHTTP:
			w.What = r.URL
		case probe.KindTCP:
			w.What = r.Addr
		case probe.KindExec:
			w.What = strings.Join(r.Argv, " ")
		case probe.KindLog:
			w.What = r.Pattern
		}
		limit := a.cfg.StartTimeout
		if limit <= 0 {
			limit = guardian.DefaultStartTimeout
		}
		w.Deadline = w.Since.Add(limit)
		return w
	}
	return nil
}

// agentsWait puts on the row that the agent waits for the agents ids
// (after:, requires:). A wait that goes on keeps its Since.
func (a *actor) agentsWait(ids []string) {
	w := &api.Waiting{For: api.WaitAgents, Agents: slices.Clone(ids), Since: time.Now().UTC()}
	if prev := a.row.Waiting; prev != nil && prev.For == api.WaitAgents {
		w.Since = prev.Since
	}
	a.row.Waiting = w
}

// agentGone takes the agent's pid off its row once the agent has
// exited: its guardian may still be stopping what it left (for up to
// its stop timeout), and the row must not name a process that has
// ended.
func (a *actor) agentGone() {
	if a.row.PID != 0 {
		a.row.PID = 0
		a.c.publish(a.row)
	}
}
