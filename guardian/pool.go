package guardian

import (
	"context"
	"sync"
	"time"

	"github.com/tether-dev/tether/wire"
)

// A pool keeps poolSize guardians started ahead of need, so a start pays
// for the handshake but not for exec and the runtime's start-up. After a
// start it waits refillDelay before starting the next one: an exec of
// this binary would otherwise take the CPU the new agent needs to build
// its tree, and the second warm guardian serves a start that comes
// meanwhile.
const (
	poolSize    = 2
	refillDelay = 25 * time.Millisecond
)

// Pool keeps guardian processes started ahead of need. A warm guardian
// waits on its tether with no timer; if the owner dies, it sees EOF and
// exits like any other. Close releases them.
type Pool struct {
	exe string

	mu      sync.Mutex
	warm    []*spawned
	filling int         // spawns under way
	later   *time.Timer // a refill to come
	closed  bool
	wg      sync.WaitGroup
}

// NewPool returns a pool of guardians of the tether binary exe (empty:
// os.Executable), each running ProgramFor(exe) as it is when it starts.
// The first guardians are started in the background.
func NewPool(exe string) *Pool {
	p := &Pool{exe: exe}
	p.refill()
	return p
}

// NewPoolAfter is NewPool with the first guardians started after delay
// (or at the first Start): for a process with more urgent work at its
// start, such as an upgrade's successor.
func NewPoolAfter(exe string, delay time.Duration) *Pool {
	p := &Pool{exe: exe}
	p.mu.Lock()
	p.later = time.AfterFunc(delay, func() {
		p.mu.Lock()
		p.later = nil
		p.mu.Unlock()
		p.refill()
	})
	p.mu.Unlock()
	return p
}

// Start is Start with a warm guardian when one is ready; spec.Executable
// must be empty or the pool's.
func (p *Pool) Start(ctx context.Context, spec Spec) (*Session, error) {
	defer p.refillLater()
	g, req, err := p.claim(&spec, false)
	if err != nil {
		return nil, err
	}
	return g.handshake(ctx, spec, req)
}

// Begin is Start of a held start: the guardian prepares it and waits for
// the Held's Go, which starts the agent, or its Abort. spec.Deadline is
// not used: the deadline comes with Go.
func (p *Pool) Begin(spec Spec) (*Held, error) {
	spec.Deadline = time.Time{}
	defer p.refillLater()
	g, req, err := p.claim(&spec, true)
	if err != nil {
		return nil, err
	}
	return g.send(spec, req)
}

// claim builds spec's start request (held or not) and takes a guardian
// for it; the caller refills after its handshake.
func (p *Pool) claim(spec *Spec, hold bool) (*spawned, *request, error) {
	if spec.Executable == "" {
		spec.Executable = p.exe
	}
	req, prog, err := prepare(spec)
	if err != nil {
		return nil, nil, err
	}
	req.Hold = hold
	g, err := p.take(prog)
	if err != nil {
		return nil, nil, &StartError{Identity: spec.Identity, Code: wire.CodeInternal, Message: err.Error()}
	}
	return g, req, nil
}

// take is a warm guardian running prog, or a new one.
func (p *Pool) take(prog Program) (*spawned, error) {
	var g *spawned
	p.mu.Lock()
	if len(p.warm) > 0 {
		// The oldest: the one most surely done with its start-up and
		// prepare, which a start that comes too soon would wait for.
		g, p.warm = p.warm[0], p.warm[1:]
	}
	p.mu.Unlock()
	if g == nil || g.prog != prog {
		if g != nil {
			g.discard()
		}
		return spawn(prog)
	}
	return g, nil
}

// refillLater refills after refillDelay, unless a refill is due already.
func (p *Pool) refillLater() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.later != nil {
		return
	}
	p.later = time.AfterFunc(refillDelay, func() {
		p.mu.Lock()
		p.later = nil
		p.mu.Unlock()
		p.refill()
	})
}

// refill starts guardians in the background until poolSize are warm or
// on their way.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && p.exe != "" && len(p.warm)+p.filling < poolSize {
		p.filling++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			g, err := spawn(ProgramFor(p.exe))
			p.mu.Lock()
			defer p.mu.Unlock()
			p.filling--
			if err != nil {
				return // the next Start spawns one itself
			}
			if p.closed || len(p.warm) >= poolSize {
				g.discard()
				return
			}
			p.warm = append(p.warm, g)
		}()
	}
}

// Release lets the warm guardians go without waiting for them to exit,
// and returns their pids: a process that stays, such as one about to
// execve a successor, must reap them (they exit at once on EOF).
func (p *Pool) Release() []int {
	var pids []int
	for _, g := range p.shut() {
		g.conn.Close()
		pids = append(pids, g.proc.Pid())
	}
	return pids
}

// Close releases the warm guardians. Sessions already started are not
// affected.
func (p *Pool) Close() {
	for _, g := range p.shut() {
		g.conn.Close()
		_ = g.proc.Wait()
	}
}

// shut closes the pool to refills and returns the warm guardians, once
// no spawn is under way.
func (p *Pool) shut() []*spawned {
	p.mu.Lock()
	p.closed = true
	if p.later != nil {
		p.later.Stop()
		p.later = nil
	}
	warm := p.warm
	p.warm = nil
	p.mu.Unlock()
	p.wg.Wait()
	return warm
}
