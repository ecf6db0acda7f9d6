package guardian

import (
	"os"
	"time"

	"github.com/tether-dev/tether/wire"
)

// orphanWait is a guardian whose owner died while its agent had
// survive_crash: it keeps the tree and the identity, and serves its adopt
// socket until an owner of its profile attaches or the window closes.
// Its methods are nil-safe: a nil wait has no channels.
type orphanWait struct {
	l     *adoptListener
	timer *time.Timer
}

// orphaned handles the owner's death: the tether is closed and the owner
// no longer watched; with survive_crash, the adopt socket is opened and
// the wait returned, and without it (or when the socket cannot be
// opened) nil: the tree goes down now.
func (g *guardian) orphaned(rw *readyWatch) *orphanWait {
	g.setConn(nil)
	_ = g.watchOwner(nil)
	d := g.req.SurviveCrash.Duration()
	if d <= 0 || g.req.AdoptPath == "" {
		return nil
	}
	now := time.Now().UTC()
	info := wire.Waiting{Identity: g.req.Identity, Profile: g.req.Profile, GuardianPID: os.Getpid(),
		AgentPID: g.agentPid, Since: g.since, Orphaned: now, Until: now.Add(d)}
	l, err := listenAdopt(g.req.AdoptPath, info, g.logf)
	if err != nil {
		g.logf("owner lost; the adopt socket %s cannot be opened (%v): stopping the tree now", g.req.AdoptPath, err)
		return nil
	}
	g.logf("owner lost; keeping the tree until %s (survive_crash %v), waiting to be adopted at %s", info.Until.Format(time.RFC3339), d, g.req.AdoptPath)
	return &orphanWait{l: l, timer: time.NewTimer(d)}
}

// adopted makes an adopter's connection the tether and answers its
// attach.
func (g *guardian) adopted(a adoption, rw *readyWatch) *tetherReader {
	g.setConn(a.conn)
	g.attach(a.attach, rw)
	return readTether(a.rd, g.ownerEOF)
}

// setConn replaces the tether, closing the one before.
func (g *guardian) setConn(c tetherConn) {
	g.outMu.Lock()
	defer g.outMu.Unlock()
	if g.conn != nil {
		g.conn.Close()
	}
	g.conn = c
}

func (o *orphanWait) found() <-chan adoption {
	if o == nil {
		return nil
	}
	return o.l.found
}

func (o *orphanWait) expired() <-chan time.Time {
	if o == nil {
		return nil
	}
	return o.timer.C
}

// close stops the wait: the timer, and the adopt socket, which is
// removed.
func (o *orphanWait) close() {
	if o == nil {
		return
	}
	o.timer.Stop()
	o.l.close()
}
