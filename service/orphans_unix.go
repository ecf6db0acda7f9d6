//go:build unix

package service

import (
	"strings"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
)

// orphanGrace is how long the kernel gets to finish off leftovers after
// SIGKILL, as a guardian's kill grace.
const orphanGrace = 2 * time.Second

// adopted is Orphans on Unix: the service is a child subreaper whose
// Adopter reaps what comes to it and stops it on request.
type adopted struct{ a *punix.Adopter }

// newOrphans makes the service a child subreaper. Where that fails, the
// leftovers of a dead guardian go to init and only a later guardian's
// scan of the session and the lock holders finds any of them.
func newOrphans() (Orphans, error) {
	a, err := punix.NewAdopter()
	if err != nil {
		return nil, err
	}
	return &adopted{a: a}, nil
}

// Stop counts each process by its identity as the stop finds it, just
// before signalling it: a walk of its own first would delay the stop of
// a tree whose guardian just died.
func (o *adopted) Stop(timeout time.Duration) (*OrphanReport, error) {
	r := &OrphanReport{ByIdentity: map[string]int{}}
	rep, err := o.a.Stop(timeout, orphanGrace, func(p punix.Proc) { r.ByIdentity[identityOf(p.Pid)]++ })
	if len(r.ByIdentity) == 0 {
		return nil, err
	}
	r.Terminated, r.Killed = rep.Terminated, rep.Killed
	return r, err
}

// identityOf is the TETHER_IDENTITY the process was started with, or "".
func identityOf(pid int) string {
	env, _ := punix.Environ(pid)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TETHER_IDENTITY="); ok {
			return v
		}
	}
	return ""
}

func (o *adopted) Close() { o.a.Close() }
