package tray

import (
	"context"
	"testing"
)

type recordUI struct{ menus []menu }

func (r *recordUI) render(_ context.Context, m menu) { r.menus = append(r.menus, m) }

// Before a binding is attached, the latest menu is kept; attaching shows
// it, and every menu after goes straight through.
func TestLateUI(t *testing.T) {
	var u lateUI
	ctx := context.Background()
	u.render(ctx, menu{Tooltip: "first"})
	u.render(ctx, menu{Tooltip: "second"})
	r := &recordUI{}
	u.attach(r)
	u.render(ctx, menu{Tooltip: "third"})
	if len(r.menus) != 2 || r.menus[0].Tooltip != "second" || r.menus[1].Tooltip != "third" {
		t.Errorf("the binding got %+v, want second, third", r.menus)
	}
	var empty lateUI
	r = &recordUI{}
	empty.attach(r)
	if len(r.menus) != 0 {
		t.Errorf("attaching with no menu yet showed %+v", r.menus)
	}
}
