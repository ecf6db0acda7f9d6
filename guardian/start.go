package guardian

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// start takes the lock, makes the private directory and starts the agent;
// for a reclaim it stops after the lock; for a held start it waits on rd
// for the owner's go before the agent's start. On failure it leaves what
// it made for abort to undo.
//
// The owner record is locked throughout, so a contender never sees a
// holder without its record. It is written before the private directory
// is made and again once the agent runs, so that the next holder of the
// identity finds what a guardian that died part way left behind
// (clearEarlier).
func (g *guardian) start(rd *lineReader) *wire.Failure {
	if err := platform.SecureDir(g.req.LockDir); err != nil {
		return &wire.Failure{Code: wire.CodeLock, Path: g.req.LockDir, Message: "lock directory: " + err.Error()}
	}
	rec, err := openRecord(g.req.LockDir, g.key)
	if err != nil {
		return &wire.Failure{Code: wire.CodeLock, Path: recordPath(g.req.LockDir, g.key), Message: err.Error()}
	}
	g.rec = rec
	if err := rec.lock(recordWait); err != nil {
		prev, _ := rec.read()
		return &wire.Failure{Code: wire.CodeContention, Message: err.Error(), Holder: prev.holder()}
	}
	defer rec.unlock()
	prev, perr := rec.read()
	if perr != nil {
		g.logf("ignoring unreadable owner record %s: %v", rec.f.Name(), perr)
		prev = nil
	}

	if fl := g.acquire(prev); fl != nil {
		return fl
	}
	g.locked = true
	g.held = countSibling(g.siblings())
	if fl := g.clearEarlier(prev); fl != nil {
		return fl
	}
	if g.req.Reclaim {
		return nil // the identity is free again; nothing to start
	}

	g.since = time.Now().UTC()
	name, err := randomName(g.key)
	if err != nil {
		return &wire.Failure{Code: wire.CodeInternal, Message: err.Error()}
	}
	parent := identityDir(g.req.PrivateRoot, g.key)
	planned := filepath.Join(parent, name)
	self := &record{Version: recordVersion, Identity: g.req.Identity, Profile: g.req.Profile,
		Guardian: g.self, PrivateDir: planned, Since: g.since, StopTimeout: g.req.StopTimeout, KillGrace: g.req.KillGrace}
	if fl := g.contain(name, self); fl != nil {
		return fl
	}
	if err := rec.write(self); err != nil {
		return &wire.Failure{Code: wire.CodeLock, Path: rec.f.Name(), Message: "writing the owner record: " + err.Error()}
	}
	g.own = self
	for _, dir := range []string{g.req.PrivateRoot, parent} {
		if err := platform.SecureDir(dir); err != nil {
			return &wire.Failure{Code: wire.CodePrivateDir, Path: dir, Message: err.Error()}
		}
	}
	if err := platform.MkdirPrivate(planned); err != nil {
		return &wire.Failure{Code: wire.CodePrivateDir, Path: planned, Message: err.Error()}
	}
	g.privateDir = planned

	if g.req.Hold {
		if fl := g.awaitGo(rd); fl != nil {
			return fl
		}
	}
	c, fl := g.command()
	if fl != nil {
		return fl
	}
	defer c.stdin.Close()
	agent, exits, fl := g.spawn(c)
	if fl != nil {
		return fl
	}
	g.agentPid, g.agentExit = agent.Pid, exits
	g.output.start(g.log, g.readiness.logLine(), g.logf)
	if g.readiness != nil {
		if err := g.readiness.begin(g.member, c.dir, c.env); err != nil {
			return &wire.Failure{Code: wire.CodeConfig, Message: "readiness: " + err.Error()}
		}
	}
	self.Agent = agent
	if err := rec.write(self); err != nil {
		g.logf("writing the owner record: %v", err)
	}
	return nil
}

// awaitGo waits for the go of a held start: the agent's environment gets
// its additions, and the tree its deadline, counted from this read. EOF,
// or a broken tether, is the owner giving the start up (givenUp).
func (g *guardian) awaitGo(rd *lineReader) *wire.Failure {
	m, err := rd.next()
	read := time.Now()
	if err != nil {
		g.givenUp = true
		return &wire.Failure{Code: wire.CodeInternal, Message: "the owner gave the start up: " + err.Error()}
	}
	if m.Type != wire.MsgGo {
		return &wire.Failure{Code: wire.CodeConfig, Message: fmt.Sprintf("a held start got %q, want %q", m.Type, wire.MsgGo)}
	}
	if m.Deadline != nil {
		if *m.Deadline <= 0 {
			return &wire.Failure{Code: wire.CodeConfig, Message: fmt.Sprintf("deadline %v: already passed", time.Duration(*m.Deadline))}
		}
		g.deadline = read.Add(m.Deadline.Duration())
	}
	g.req.Env = append(g.req.Env, m.Env...)
	return nil
}
