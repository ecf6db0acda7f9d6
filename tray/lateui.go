package tray

import (
	"context"
	"sync"
)

// lateUI takes the engine's menus while there is nothing to show them in
// yet (the tray waits for a tray host), and hands the latest to the real
// binding once it is attached; from then on it passes every menu through.
type lateUI struct {
	mu     sync.Mutex
	target ui
	ctx    context.Context
	menu   menu
	have   bool
}

func (u *lateUI) render(ctx context.Context, m menu) {
	u.mu.Lock()
	t := u.target
	if t == nil {
		u.ctx, u.menu, u.have = ctx, m, true
	}
	u.mu.Unlock()
	if t != nil {
		t.render(ctx, m)
	}
}

// attach makes t the menus' destination and shows it the latest menu.
func (u *lateUI) attach(t ui) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.target = t
	if u.have {
		t.render(u.ctx, u.menu)
		u.ctx, u.have = nil, false
	}
}
