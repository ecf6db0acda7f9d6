package tray

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"strconv"
	"strings"
	"sync"

	"github.com/esiqveland/notify"
	"github.com/godbus/dbus/v5"
	"github.com/tether-dev/tether/assets"
)

// desktopNotifier shows notices through the freedesktop notification
// service (org.freedesktop.Notifications) on the session bus, with what
// beeep cannot send: actions (answered by ActionInvoked), urgency, an
// icon per notice, and replaces_id, so that a newer notice of the same
// subject takes the place of its older bubble. Critical notices never
// expire. It connects on the first notice, and again after the bus or
// the server went away; it only waits on the connection, with no timer.
type desktopNotifier struct {
	mu     sync.Mutex
	conn   *dbus.Conn
	server notify.Notifier
	caps   map[string]bool
	ids    map[string]uint32 // subject -> its bubble
	shown  map[uint32]notice // bubble -> its notice, while on screen
	run    func(action)
	icons  map[assets.State]*image.RGBA
}

func newNotifier() *desktopNotifier {
	return &desktopNotifier{ids: map[string]uint32{}, shown: map[uint32]notice{}, icons: map[assets.State]*image.RGBA{}}
}

// onAction sets what runs the action the user picks on a notice.
func (d *desktopNotifier) onAction(run func(action)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.run = run
}

// connectLocked connects to the session bus and subscribes to the
// server's signals.
func (d *desktopNotifier) connectLocked() error {
	if d.conn != nil {
		return nil
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return fmt.Errorf("connecting to the session bus: %w", err)
	}
	server, err := notify.New(conn, notify.WithOnAction(d.actionInvoked), notify.WithOnClosed(d.closed), notify.WithLogger(quiet{}))
	if err != nil {
		conn.Close()
		return err
	}
	caps, err := server.GetCapabilities()
	if err != nil {
		server.Close()
		conn.Close()
		return fmt.Errorf("asking the notification server what it supports: %w", err)
	}
	d.conn, d.server, d.caps = conn, server, map[string]bool{}
	for _, c := range caps {
		d.caps[c] = true
	}
	return nil
}

func (d *desktopNotifier) notify(n notice) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.connectLocked(); err != nil {
		return err
	}
	note := notify.Notification{
		AppName:       "tether",
		ReplacesID:    d.ids[n.Subject],
		Summary:       n.Title,
		Body:          n.Body,
		ExpireTimeout: notify.ExpireTimeoutSetByNotificationServer,
	}
	if d.caps["body-markup"] {
		note.Body = escapeMarkup(n.Body)
	}
	switch n.Urgency {
	case urgencyCritical:
		note.SetUrgency(notify.UrgencyCritical)
		note.ExpireTimeout = notify.ExpireTimeoutNever
	case urgencyLow:
		note.SetUrgency(notify.UrgencyLow)
	default:
		note.SetUrgency(notify.UrgencyNormal)
	}
	if img := d.iconLocked(n.Icon); img != nil {
		note.AddHint(notify.HintImageDataRGBA(img))
	}
	if d.caps["actions"] {
		// The first is the default action too: what clicking the
		// bubble does (servers that show the default as a button show
		// it once, with its label).
		for i, a := range n.Actions {
			note.Actions = append(note.Actions, notify.Action{Key: actionKey(i), Label: a.Label})
		}
	}
	id, err := d.server.SendNotification(note)
	if err != nil {
		// The bus or the server may have gone: connect afresh next time.
		d.server.Close()
		d.conn.Close()
		d.conn, d.server = nil, nil
		clear(d.ids)
		clear(d.shown)
		return err
	}
	if old := d.ids[n.Subject]; old != 0 && old != id {
		delete(d.shown, old)
	}
	d.ids[n.Subject] = id
	d.shown[id] = n
	return nil
}

// withdraw closes the bubble of subject's last notice, if it is still
// up (CloseNotification).
func (d *desktopNotifier) withdraw(subject string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.ids[subject]
	if id == 0 || d.server == nil {
		return nil
	}
	delete(d.ids, subject)
	delete(d.shown, id)
	_, err := d.server.CloseNotification(id)
	return err
}

// actionKey is the key of the i-th action: "default" for the first.
func actionKey(i int) string {
	if i == 0 {
		return "default"
	}
	return "tether-" + strconv.Itoa(i)
}

// actionInvoked runs the action the user picked on one of our bubbles
// (the server announces every application's).
func (d *desktopNotifier) actionInvoked(s *notify.ActionInvokedSignal) {
	d.mu.Lock()
	n, ok := d.shown[s.ID]
	run := d.run
	d.mu.Unlock()
	if !ok || run == nil || len(n.Actions) == 0 {
		return
	}
	for i, a := range n.Actions {
		if actionKey(i) == s.ActionKey {
			run(a.Do)
			return
		}
	}
}

// closed forgets a bubble that is gone.
func (d *desktopNotifier) closed(s *notify.NotificationClosedSignal) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.shown[s.ID]; ok {
		delete(d.shown, s.ID)
		if d.ids[n.Subject] == s.ID {
			delete(d.ids, n.Subject)
		}
	}
}

// iconLocked is the icon of s as image data, decoded once. The
// specification's image data is RGBA with straight (not premultiplied)
// alpha, which is Go's NRGBA layout; the library's hint takes it in an
// image.RGBA's clothes.
func (d *desktopNotifier) iconLocked(s assets.State) *image.RGBA {
	if img, ok := d.icons[s]; ok {
		return img
	}
	src, err := png.Decode(bytes.NewReader(assets.PNG(s)))
	if err != nil {
		return nil // embedded and tested: cannot happen
	}
	n := image.NewNRGBA(image.Rect(0, 0, src.Bounds().Dx(), src.Bounds().Dy()))
	draw.Draw(n, n.Bounds(), src, src.Bounds().Min, draw.Src)
	img := &image.RGBA{Pix: n.Pix, Stride: n.Stride, Rect: n.Rect}
	d.icons[s] = img
	return img
}

func (d *desktopNotifier) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		d.server.Close()
		d.conn.Close()
		d.conn, d.server = nil, nil
	}
}

// escapeMarkup keeps a body that is plain text from being read as the
// server's markup (a subset of HTML).
func escapeMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// quiet discards the notification library's log lines (it logs every
// signal it does not handle, such as the bus's NameAcquired).
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// fileOf: the freedesktop server reports actions back, so the tray runs
// them itself (see onAction).
func (d *desktopNotifier) fileOf(func(action) string) {}
