//go:build unix

package tray

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

func (o *fakeOS) startCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.starts
}

// A managed service that its manager restarts within the restart window
// raises no "service stopped", and so no "service is back" either, but
// one quiet notice of what the restart did to the agents; one that stays
// gone past it is announced, and its return too.
func TestEngineWaitsOutTheRestartWindow(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	f := startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil))
	u, o := &fakeUI{}, &fakeOS{}
	d := o.deps()
	const window = 1500 * time.Millisecond
	d.restartWindow = func(Options) time.Duration { return window }
	startEngine(t, dir, u, d, nil)
	u.waitMenu(t, "1 running", firstLine("1 running"))

	f.stop()
	u.waitMenu(t, "not running", func(m menu) bool { return strings.Contains(m.Items[0].Title, "not running") })
	again := agent("a", api.StateRunning, time.Minute, nil)
	again.PID++ // a new tree: the restart took the old one down
	f = startFake(t, sock, again)
	u.waitMenu(t, "1 running again", firstLine("1 running"))
	restarted := o.waitNotice(t, "service restarted")
	if restarted.Urgency != urgencyLow || !strings.Contains(restarted.Body, "1 agent was restarted with it: a.") {
		t.Errorf("the restart's notice: %+v", restarted)
	}
	// Past the window, nothing else was said.
	var said string
	if testproc.UntilEvery(window+500*time.Millisecond, 10*time.Millisecond, func() bool {
		for _, n := range o.allNotices() {
			if strings.Contains(n.Title, "stopped") || strings.Contains(n.Title, "is back") {
				said = n.Title
				return true
			}
		}
		return false
	}) {
		t.Fatalf("a restart within the window raised %q", said)
	}

	f.stop()
	begin := time.Now()
	o.waitNotice(t, "service stopped")
	if took := time.Since(begin); took < window {
		t.Errorf("the service's loss was announced %v after it, within the %v restart window", took, window)
	}
	startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil))
	o.waitNotice(t, "service is back")
}

// A tray started by its login entry that finds no service starts one,
// once; a tray started otherwise does not.
func TestEngineAtLoginStartsTheService(t *testing.T) {
	for _, atLogin := range []bool{true, false} {
		dir := shortDir(t)
		u, o := &fakeUI{}, &fakeOS{}
		startEngine(t, dir, u, o.deps(), func(e *engine) { e.opts.AtLogin = atLogin })
		u.waitMenu(t, "not running", func(m menu) bool { return strings.Contains(m.Items[0].Title, "not running") })
		if atLogin {
			testproc.Eventually(t, 10*time.Second, func() bool { return o.startCount() == 1 }, "never: the service started")
		}
		if want := map[bool]int{true: 1, false: 0}[atLogin]; testproc.UntilEvery(500*time.Millisecond, 10*time.Millisecond, func() bool { return o.startCount() != want }) {
			t.Errorf("at login %v: %d starts, want %d", atLogin, o.startCount(), want)
		}
	}
}

// Ticking "Start at login" starts the service too when it does not run.
func TestEngineLoginOnStartsTheService(t *testing.T) {
	dir := shortDir(t)
	u, o := &fakeUI{}, &fakeOS{}
	e := startEngine(t, dir, u, o.deps(), nil)
	u.waitMenu(t, "not running", func(m menu) bool { return strings.Contains(m.Items[0].Title, "not running") })
	e.act(action{Kind: actToggleLogin})
	testproc.Eventually(t, 10*time.Second, func() bool { return o.startCount() == 1 }, "never: the service started")
	if n := o.allNotices(); slices.ContainsFunc(n, func(n notice) bool { return strings.Contains(n.Title, "cannot") }) {
		t.Errorf("notices %+v", n)
	}
}
