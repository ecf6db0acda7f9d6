package tray

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"git.sr.ht/~jackmordaunt/go-toast"
	"github.com/tether-dev/tether/assets"
)

// desktopNotifier shows notices as Windows toasts, through go-toast (the
// library beeep uses there) so that they can carry buttons. A toast
// button that runs code in tether needs tether registered with Windows
// as a COM activator; tether registers nothing of the kind, so its
// buttons are the ones Windows carries out by itself: "Open log" and
// "Open config" open the file (a file: URI, protocol activation). "Start
// again" and "Start service" stay in the tray's menu. Critical notices
// are long toasts with a sound; Windows has no replacement of an older
// toast here.
type desktopNotifier struct {
	mu    sync.Mutex
	files func(action) string
	icons map[assets.State]string
}

func newNotifier() *desktopNotifier {
	return &desktopNotifier{icons: map[assets.State]string{}}
}

// withdraw: a toast stays in the Action Center until the person clears
// it; this tray keeps no handle of its toasts to remove them by.
func (d *desktopNotifier) withdraw(string) error { return nil }

// onAction: toasts run no code of tether's (see desktopNotifier).
func (d *desktopNotifier) onAction(func(action)) {}

// fileOf says which file an action opens, for toasts' buttons.
func (d *desktopNotifier) fileOf(f func(action) string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files = f
}

func (d *desktopNotifier) notify(n notice) error {
	d.mu.Lock()
	files, icon := d.files, d.iconLocked(n.Icon)
	d.mu.Unlock()
	t := toast.Notification{AppID: "tether", Title: n.Title, Body: n.Body, Icon: icon, Duration: toast.Short, Audio: toast.Silent}
	if n.Urgency == urgencyCritical {
		t.Duration, t.Audio = toast.Long, toast.Default
	}
	for _, a := range n.Actions {
		if files == nil {
			break
		}
		if path := files(a.Do); path != "" {
			u := url.URL{Scheme: "file", Path: "/" + filepath.ToSlash(path)}
			t.Actions = append(t.Actions, toast.Action{Type: toast.Protocol, Content: a.Label, Arguments: u.String()})
		}
	}
	if err := t.Push(); err != nil {
		return fmt.Errorf("showing a toast: %w", err)
	}
	return nil
}

// iconLocked writes the icon of s where toasts can read it (they take a
// file), once.
func (d *desktopNotifier) iconLocked(s assets.State) string {
	if p, ok := d.icons[s]; ok {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "tether", "icons", s.String()+".png")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return ""
	}
	if err := os.WriteFile(p, assets.PNG(s), 0o600); err != nil {
		return ""
	}
	d.icons[s] = p
	return p
}

func (d *desktopNotifier) close() {}
