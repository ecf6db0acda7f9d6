package service

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/netwatch"
	"github.com/tether-dev/tether/service/config"
)

// What an agent needs (its config's needs) is checked before each start
// and when it ends. While it is unreachable the agent waits offline: a
// goroutine looks again at each network change the OS reports, and every
// needsRecheck besides, for what raises no event (a loopback target, a
// relay that comes back on a network that never left).
const (
	needsRecheck     = 2 * time.Second
	needsDialTimeout = 2 * time.Second
)

// unreachable checks n now and says what of it is unreachable, and why;
// "" when all of it is reachable. It takes at most needsDialTimeout.
func unreachable(n *config.Needs) string {
	var (
		mu      sync.Mutex
		missing []string
		wg      sync.WaitGroup
	)
	if n.Network && !netwatch.Up() {
		missing = append(missing, "the network: no interface is up with an address")
	}
	for _, addr := range n.TCP {
		wg.Go(func() {
			conn, err := net.DialTimeout("tcp", addr, needsDialTimeout)
			if err == nil {
				conn.Close()
				return
			}
			mu.Lock()
			missing = append(missing, addr+": "+dialCause(err))
			mu.Unlock()
		})
	}
	wg.Wait()
	return strings.Join(missing, "; ")
}

// dialCause is a failed dial's reason without the op and addresses the
// row already names.
func dialCause(err error) string {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// unmet checks what the agent needs, if anything, before a start or
// after an ending (last: how it ended). When something is unreachable
// the agent goes offline, and unmet reports true: no start, and the
// ending does not count toward a crash loop.
func (a *actor) unmet(last *api.Error) bool {
	if a.cfg.Needs == nil {
		return false
	}
	missing := unreachable(a.cfg.Needs)
	if missing == "" {
		return false
	}
	e := &api.Error{Code: api.CodeUnreachable, Message: "unreachable: " + missing, Last: last}
	a.row.Status = "waiting for what it needs"
	a.setState(api.StateOffline, e)
	a.answerStarts(e)
	a.goOffline()
	return true
}

// goOffline waits, on its own goroutine, until what the agent needs is
// reachable, and then tells the actor (reachc).
func (a *actor) goOffline() {
	a.stopOffline()
	ctx, cancel := context.WithCancel(context.Background())
	reach := make(chan struct{}, 1)
	a.offline, a.reachc = cancel, reach
	needs := a.cfg.Needs
	go func() {
		changes, _ := netwatch.Changes(ctx)
		t := time.NewTimer(needsRecheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changes:
			case <-t.C:
			}
			if ctx.Err() == nil && unreachable(needs) == "" {
				reach <- struct{}{}
				return
			}
			t.Reset(needsRecheck)
		}
	}()
}

// stopOffline ends the wait, if any.
func (a *actor) stopOffline() {
	if a.offline != nil {
		a.offline()
		a.offline, a.reachc = nil, nil
	}
}

// reachable: what the agent needs is back; it starts at once, with no
// backoff.
func (a *actor) reachable() {
	a.stopOffline()
	if a.want && a.session == nil {
		a.backoff = 0
		a.row.Status = ""
		a.start()
	}
}

// crashLoop counts a failure at now and reports whether the agent's
// failures now make a crash loop (its config's crash_loop; never when
// it has none).
func (a *actor) crashLoop(now time.Time) bool {
	cl := a.cfg.Retry.CrashLoop
	if cl.Failures == 0 {
		a.failures = nil
		return false
	}
	a.failures = append(a.failures, now)
	for len(a.failures) > 0 && now.Sub(a.failures[0]) > cl.Within {
		a.failures = a.failures[1:]
	}
	if len(a.failures) > cl.Failures {
		a.failures = a.failures[len(a.failures)-cl.Failures:]
	}
	return len(a.failures) >= cl.Failures
}
