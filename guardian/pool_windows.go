package guardian

import "context"

// Pool is the Windows face of the guardian pool; without a Windows
// guardian yet, it only forwards to Start.
type Pool struct{ exe string }

// NewPool returns a pool of guardians running exe.
func NewPool(exe string) *Pool { return &Pool{exe: exe} }

// Start forwards to Start.
func (p *Pool) Start(ctx context.Context, spec Spec) (*Session, error) {
	if spec.Executable == "" {
		spec.Executable = p.exe
	}
	return Start(ctx, spec)
}

// Close does nothing.
func (p *Pool) Close() {}
