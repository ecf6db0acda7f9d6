package guardian

import (
	"context"
	"sync"
)

// Pool keeps one guardian process started ahead of need, so a start pays
// for the handshake but not for exec and the runtime's start-up. The warm
// guardian waits on its tether with no timer; if the owner dies, it sees
// EOF and exits like any other. Close releases it.
type Pool struct {
	exe string

	mu      sync.Mutex
	warm    *spawned
	filling bool
	closed  bool
	wg      sync.WaitGroup
}

// NewPool returns a pool of guardians running exe (empty: os.Executable).
// The first guardian is started in the background.
func NewPool(exe string) *Pool {
	p := &Pool{exe: exe}
	p.refill()
	return p
}

// Start is Start with a warm guardian when one is ready; spec.Executable
// must be empty or the pool's.
func (p *Pool) Start(ctx context.Context, spec Spec) (*Session, error) {
	if spec.Executable == "" {
		spec.Executable = p.exe
	}
	req, exe, err := prepare(&spec)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	g := p.warm
	p.warm = nil
	p.mu.Unlock()
	// The next warm guardian is started after this handshake, not beside
	// it: its exec and start-up would take the CPU the handshake needs.
	defer p.refill()
	if g == nil || g.exe != exe {
		if g != nil {
			g.discard()
		}
		if g, err = spawn(exe); err != nil {
			return nil, &StartError{Identity: spec.Identity, Code: CodeInternal, Message: err.Error()}
		}
	}
	return g.handshake(ctx, spec, req)
}

// refill starts a warm guardian in the background if none is ready.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.warm != nil || p.filling || p.exe == "" {
		return
	}
	p.filling = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		g, err := spawn(p.exe)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.filling = false
		if err != nil {
			return // the next Start spawns one itself
		}
		if p.closed || p.warm != nil {
			g.discard()
			return
		}
		p.warm = g
	}()
}

// Close releases the warm guardian. Sessions already started are not
// affected.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	g := p.warm
	p.warm = nil
	p.mu.Unlock()
	p.wg.Wait()
	if g != nil {
		g.conn.Close()
		_ = g.proc.Wait()
	}
}
