//go:build linux || windows || (darwin && cgo)

package tray

import (
	"context"
	"runtime"
	"strings"
	"time"

	"fyne.io/systray"
	"github.com/tether-dev/tether/assets"
)

// runUI runs the tray on systray's event loop until the engine's context
// is done (its menu's Quit, a signal). On macOS it must be called on the
// main thread (systray's init locks main there; cli.Main runs on it). The
// engine runs already: attach makes the binding the destination of its
// menus, and shows it the latest.
func runUI(e *engine, attach func(ui)) error {
	b := &binding{act: e.act}
	systray.Run(func() {
		b.started = time.Now()
		attach(b)
		// The render that settles the icon (see settleTime).
		settle := time.AfterFunc(settleTime+100*time.Millisecond, e.changed)
		go func() {
			for {
				select {
				case <-e.ctx.Done():
					settle.Stop()
					systray.Quit()
					return
				case <-systray.TrayOpenedCh:
					// The menu opens (macOS; dbusmenu hosts that
					// send "opened"): its ages are those of now.
					e.opened()
				}
			}
		}()
	}, nil)
	return nil
}

// binding maps the menu model onto systray. The library cannot move or
// reorder items, removing them (ResetMenu) closes their channels under the
// feet of a click, and a submenu added after the host's first look may
// show up empty (see build). So a menu of the same shape as the one shown
// is applied in place: only what changed is set, item ids stay, and a menu
// that is open stays open. build keeps the shape; only more agents than
// its slots make a new one, which replaces the whole tree.
type binding struct {
	act     func(action)
	shape   string
	root    []*slot
	icon    assets.State
	tooltip string
	started time.Time
	settled bool
}

// slot is one systray item and the model item last applied to it.
type slot struct {
	mi   *systray.MenuItem // nil for a separator
	it   item
	kids []*slot
}

// settleTime bounds fyne.io/systray's start. It runs onReady (and so
// the first renders) while it is still exporting the item on the bus, and
// an icon, tooltip or title set at the wrong moment in that time is kept
// but never published. Until a render at least settleTime after the start
// has set them again, every render sets them.
const settleTime = 2 * time.Second

func (b *binding) render(ctx context.Context, m menu) {
	force := !b.settled
	b.settled = b.settled || time.Since(b.started) >= settleTime
	if force && runtime.GOOS == "linux" {
		// The item's accessible name; on macOS a title would be shown
		// beside the icon.
		systray.SetTitle("tether")
	}
	if force || m.Icon != b.icon {
		systray.SetIcon(assets.Tray(m.Icon))
		b.icon = m.Icon
	}
	if force || m.Tooltip != b.tooltip {
		systray.SetTooltip(m.Tooltip)
		b.tooltip = m.Tooltip
	}
	if sh := shape(m.Items); b.root == nil || sh != b.shape {
		if b.root != nil {
			systray.ResetMenu()
		}
		b.root, b.shape = create(nil, m.Items), sh
	} else {
		update(b.root, m.Items)
	}
	b.listen(ctx, b.root)
}

// listen carries clicks on the items of the menu just rendered to their
// actions until ctx is done: the next render's listeners take over.
func (b *binding) listen(ctx context.Context, slots []*slot) {
	for _, s := range slots {
		b.listen(ctx, s.kids)
		if s.mi == nil || !s.it.Enabled || s.it.Hidden || s.it.Action.Kind == noAction {
			continue
		}
		go func(ch <-chan struct{}, a action) {
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-ch:
					if !ok { // removed by ResetMenu
						return
					}
					b.act(a)
				}
			}
		}(s.mi.ClickedCh, s.it.Action)
	}
}

func create(parent *systray.MenuItem, items []item) []*slot {
	var out []*slot
	for _, it := range items {
		s := &slot{}
		out = append(out, s)
		if it.Separator {
			if parent == nil {
				systray.AddSeparator()
			} else {
				parent.AddSeparator()
			}
			continue
		}
		title := label(it.Title)
		switch {
		case parent == nil && it.Checkable:
			s.mi = systray.AddMenuItemCheckbox(title, it.Tooltip, it.Checked)
		case parent == nil:
			s.mi = systray.AddMenuItem(title, it.Tooltip)
		case it.Checkable:
			s.mi = parent.AddSubMenuItemCheckbox(title, it.Tooltip, it.Checked)
		default:
			s.mi = parent.AddSubMenuItem(title, it.Tooltip)
		}
		if !it.Enabled {
			s.mi.Disable()
		}
		if it.Hidden {
			s.mi.Hide()
		}
		s.it = it
		s.kids = create(s.mi, it.Children)
	}
	return out
}

func update(slots []*slot, items []item) {
	for i, it := range items {
		s := slots[i]
		if s.mi == nil {
			continue
		}
		old := s.it
		if it.Title != old.Title {
			s.mi.SetTitle(label(it.Title))
		}
		if it.Tooltip != old.Tooltip {
			s.mi.SetTooltip(it.Tooltip)
		}
		if it.Enabled != old.Enabled {
			if it.Enabled {
				s.mi.Enable()
			} else {
				s.mi.Disable()
			}
		}
		if it.Checked != old.Checked {
			if it.Checked {
				s.mi.Check()
			} else {
				s.mi.Uncheck()
			}
		}
		if it.Hidden != old.Hidden {
			if it.Hidden {
				s.mi.Hide()
			} else {
				s.mi.Show()
			}
		}
		s.it = it
		update(s.kids, it.Children)
	}
}

// label escapes what the platform's menus would read as a mnemonic
// marker: '_' in dbusmenu labels (Linux), '&' in Windows menus.
func label(s string) string {
	switch runtime.GOOS {
	case "windows":
		return strings.ReplaceAll(s, "&", "&&")
	case "darwin":
		return s
	}
	return strings.ReplaceAll(s, "_", "__")
}
