//go:build unix

package tray

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// startEngine is newTestEngine with deps of the test's making, and tweak
// applied before the engine starts.
func startEngine(t *testing.T, dir string, u ui, d deps, tweak func(*engine)) *engine {
	t.Helper()
	opts := Options{Socket: filepath.Join(dir, "s.sock"), LogDir: dir, ConfigFile: filepath.Join(dir, "agents.yaml")}
	e := newEngine(context.Background(), opts, d, u)
	if tweak != nil {
		tweak(e)
	}
	e.start()
	t.Cleanup(func() {
		if !e.stop(10 * time.Second) {
			t.Error("the engine's goroutines did not end")
		}
	})
	return e
}

func (o *fakeOS) allNotices() []notice {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.notices)
}

func failedRow(id string) api.Agent {
	a := agent(id, api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: fmt.Sprintf(`starting guardian for "%s@relay": spawn: command "/nonexistent" not found`, id)})
	a.Since = time.Now()
	return a
}

// TestEngineBurstNamesEveryAgent: eight agents failing at once give three
// notices of their own and one summary, and every agent is named.
func TestEngineBurstNamesEveryAgent(t *testing.T) {
	dir := shortDir(t)
	var agents []api.Agent
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("agent%d", i)
		ids = append(ids, id)
		agents = append(agents, agent(id, api.StateRunning, time.Minute, nil))
	}
	f := startFake(t, filepath.Join(dir, "s.sock"), agents...)
	u, o := &fakeUI{}, &fakeOS{}
	newTestEngine(t, dir, u, o)
	u.waitMenu(t, "8 running", firstLine("8 running"))
	for _, id := range ids {
		f.send(failedRow(id))
	}
	testproc.Eventually(t, 10*time.Second, func() bool {
		return slices.ContainsFunc(o.allNotices(), func(n notice) bool { return strings.Contains(n.Title, "5 more agents failed") })
	}, "never: a summary")
	got := o.allNotices()
	if missing := named(got, ids); len(missing) > 0 {
		t.Errorf("never named: %v in %+v", missing, got)
	}
	if len(got) != 4 {
		var titles []string
		for _, n := range got {
			titles = append(titles, n.Title)
		}
		t.Errorf("%d notices, want 3 and a summary: %q", len(got), titles)
	}
}

// TestEngineNoticeActions: the actions a notice offers do what they say,
// whether the desktop reports them (noticeActions) or not.
func TestEngineNoticeActions(t *testing.T) {
	dir := shortDir(t)
	f := startFake(t, filepath.Join(dir, "s.sock"), agent("bob", api.StateRunning, time.Minute, nil))
	u, o := &fakeUI{}, &fakeOS{}
	var run func(action)
	var mu sync.Mutex
	d := o.deps()
	d.noticeActions = func(r func(action)) { mu.Lock(); run = r; mu.Unlock() }
	e := startEngine(t, dir, u, d, nil)
	u.waitMenu(t, "1 running", firstLine("1 running"))
	f.send(failedRow("bob"))
	n := o.waitNotice(t, "bob failed")
	if got := labels(n); !slices.Equal(got, []string{labelOpenLog, labelStartAgain, labelOpenConfig}) {
		t.Fatalf("actions %v", got)
	}
	mu.Lock()
	r := run
	mu.Unlock()
	if r == nil {
		t.Fatal("the engine did not hand its actions to the notifier")
	}
	r(n.Actions[1].Do) // Start again
	testproc.Eventually(t, 10*time.Second, func() bool { return slices.Contains(f.didActions(), "start bob") }, "never: start bob")
	r(n.Actions[0].Do) // Open log: there is none yet
	if n := o.waitNotice(t, "no log for bob yet"); n.Urgency != urgencyLow {
		t.Errorf("no-log notice %+v, want an informational one", n)
	}
	e.act(n.Actions[2].Do) // Open config
	testproc.Eventually(t, 10*time.Second, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return slices.Contains(o.opened, filepath.Join(dir, "agents.yaml"))
	}, "never: the config opened")
}

// TestEngineServiceBack: a "service is back" notice follows a "service
// stopped" one, and replaces it.
func TestEngineServiceBack(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	f := startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil))
	u, o := &fakeUI{}, &fakeOS{}
	newTestEngine(t, dir, u, o)
	u.waitMenu(t, "1 running", firstLine("1 running"))
	if slices.ContainsFunc(o.allNotices(), func(n notice) bool { return strings.Contains(n.Title, "is back") }) {
		t.Fatal("a back notice at the first connection")
	}
	f.stop()
	lost := o.waitNotice(t, "service stopped")
	startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil))
	back := o.waitNotice(t, "service is back")
	if back.Subject != lost.Subject {
		t.Errorf("the back notice (%q) does not replace the lost one (%q)", back.Subject, lost.Subject)
	}
}

// TestEngineServiceUpdated: a service that hands over to another binary
// (an upgrade, as a package's) is announced as updated, once, with the
// new version; a reload of the same binary is not.
func TestEngineServiceUpdated(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	f := startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil))
	f.mu.Lock()
	f.status.Service = &api.Service{Version: "1.2.3", Build: "b1"}
	f.mu.Unlock()
	u, o := &fakeUI{}, &fakeOS{}
	newTestEngine(t, dir, u, o)
	u.waitMenu(t, "1 running", firstLine("1 running"))
	f.reload(agent("a", api.StateRunning, time.Minute, nil))
	f.handover(api.Service{Version: "1.2.4", Build: "b2"})
	n := o.waitNotice(t, "updated")
	if !strings.Contains(n.Body, "tether 1.2.4 (from 1.2.3)") || n.Urgency != urgencyLow {
		t.Errorf("updated notice %+v, want tether 1.2.4 (from 1.2.3), informational", n)
	}
	for _, n := range o.allNotices() {
		if strings.Contains(n.Title, "stopped") || strings.Contains(n.Title, "is back") {
			t.Errorf("a handover announced as %q", n.Title)
		}
	}
	if got := len(slices.DeleteFunc(o.allNotices(), func(n notice) bool { return !strings.Contains(n.Title, "updated") })); got != 1 {
		t.Errorf("%d updated notices, want 1", got)
	}
}

// TestEngineServiceUpdatedSameBuild: two reproducible builds of one
// commit (a release candidate and its release) have the same size and
// time, so the same Build: the new version alone says it was updated.
func TestEngineServiceUpdatedSameBuild(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	f := startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil))
	f.mu.Lock()
	f.status.Service = &api.Service{Version: "1.2.3-rc.1", Build: "b1"}
	f.mu.Unlock()
	u, o := &fakeUI{}, &fakeOS{}
	newTestEngine(t, dir, u, o)
	u.waitMenu(t, "1 running", firstLine("1 running"))
	f.handover(api.Service{Version: "1.2.3", Build: "b1"})
	n := o.waitNotice(t, "updated")
	if !strings.Contains(n.Body, "tether 1.2.3 (from 1.2.3-rc.1)") {
		t.Errorf("updated notice %+v, want tether 1.2.3 (from 1.2.3-rc.1)", n)
	}
}

// TestEngineSleep: while the machine suspends and resumes, a lost service
// that comes back is not announced at all, and an agent's failure that
// outlasts the resume is announced after it.
func TestEngineSleep(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	f := startFake(t, sock, agent("a", api.StateRunning, time.Minute, nil), agent("b", api.StateRunning, time.Minute, nil))
	u, o := &fakeUI{}, &fakeOS{}
	sleeps := make(chan chan<- bool, 1)
	d := o.deps()
	d.watchSleep = func(ctx context.Context, ev chan<- bool) { sleeps <- ev; <-ctx.Done() }
	startEngine(t, dir, u, d, func(e *engine) { e.settle = 300 * time.Millisecond })
	ev := <-sleeps
	u.waitMenu(t, "2 running", firstLine("2 running"))

	ev <- true // suspending
	crash := func(id string) api.Agent {
		a := agent(id, api.StateFailed, 0, &api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row"})
		a.Since = time.Now()
		return a
	}
	f.send(crash("a"))
	f.send(crash("b"))
	u.waitMenu(t, "2 failed", firstLine("2 failed"))
	recovered := agent("b", api.StateRunning, 0, nil)
	recovered.Since = time.Now()
	f.send(recovered)
	u.waitMenu(t, "b recovered", firstLine("1 running, 1 failed"))
	f.stop()
	u.waitMenu(t, "service not running", firstLine("service not running"))
	f = startFake(t, sock, crash("a"), recovered)
	u.waitMenu(t, "connected again", firstLine("1 running, 1 failed"))
	ev <- false // resumed
	if n := o.waitNotice(t, "a keeps crashing"); n.Urgency != urgencyCritical {
		t.Errorf("after the resume: %+v", n)
	}
	// Give anything else that was held time to come out: nothing may.
	var said string
	if testproc.UntilEvery(500*time.Millisecond, 10*time.Millisecond, func() bool {
		for _, n := range o.allNotices() {
			if strings.Contains(n.Title, "service") || strings.Contains(n.Title, "b keeps") {
				said = n.Title
				return true
			}
		}
		return false
	}) {
		t.Errorf("notice %q, for something the suspend caused and the resume mended", said)
	}
	// Awake, notices flow at once again.
	f.send(crash("b"))
	o.waitNotice(t, "b keeps crashing")
}

// TestEngineSleepOneNotice: agents that fail while the machine sleeps,
// and still fail once it has settled, make one notice between them, that
// names each; the one that recovered is not named; one alone keeps its
// own notice. A bubble whose problem ended while the machine slept is
// taken down.
func TestEngineSleepOneNotice(t *testing.T) {
	dir := shortDir(t)
	ids := []string{"a", "b", "c", "d"}
	var rows []api.Agent
	for _, id := range ids {
		rows = append(rows, agent(id, api.StateRunning, time.Minute, nil))
	}
	f := startFake(t, filepath.Join(dir, "s.sock"), rows...)
	u, o := &fakeUI{}, &fakeOS{}
	sleeps := make(chan chan<- bool, 1)
	d := o.deps()
	d.watchSleep = func(ctx context.Context, ev chan<- bool) { sleeps <- ev; <-ctx.Done() }
	var withdrawn []string
	var mu sync.Mutex
	d.withdraw = func(subject string) error { mu.Lock(); withdrawn = append(withdrawn, subject); mu.Unlock(); return nil }
	startEngine(t, dir, u, d, func(e *engine) { e.settle = 300 * time.Millisecond })
	ev := <-sleeps
	u.waitMenu(t, "4 running", firstLine("4 running"))
	count := func() int { return len(o.allNotices()) }

	// Awake, d fails: its own notice.
	f.send(failedRow("d"))
	o.waitNotice(t, "d failed")

	ev <- true // suspending
	for _, id := range []string{"a", "b", "c"} {
		f.send(failedRow(id))
	}
	recovered := agent("d", api.StateRunning, 0, nil)
	recovered.Since = time.Now()
	f.send(recovered)
	u.waitMenu(t, "3 failed", firstLine("1 running, 3 failed"))
	testproc.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(withdrawn, "agent/d")
	}, "d runs again during the sleep, and its bubble stays up")
	ev <- false // resumed
	n := o.waitNotice(t, "3 agents failed")
	if missing := named([]notice{n}, []string{"a", "b", "c"}); len(missing) > 0 || strings.Contains(n.Title, "more") {
		t.Errorf("the notice after the resume %q / %q: not named %v", n.Title, n.Body, missing)
	}
	if named([]notice{n}, []string{"d"}) == nil {
		t.Errorf("the notice after the resume names d, which recovered: %q", n.Title)
	}
	if !slices.Equal(labels(n), []string{labelStartAgain}) || !slices.Equal(n.Actions[0].Do.IDs, []string{"a", "b", "c"}) {
		t.Errorf("its actions %+v, want Start again for a, b and c", n.Actions)
	}
	// d's notice from before the sleep, and this one: no other comes.
	if testproc.UntilEvery(time.Second, 10*time.Millisecond, func() bool { return count() > 2 }) {
		t.Errorf("notices after the resume: %+v", o.allNotices()[2:])
	}

	// One agent alone keeps its own notice.
	ev <- true
	f.send(failedRow("d"))
	ev <- false
	if n := o.waitNotice(t, "d failed"); n.Agent != "d" || !slices.Equal(labels(n), []string{labelOpenLog, labelStartAgain, labelOpenConfig}) {
		t.Errorf("d alone after a resume: %+v", n)
	}
	if testproc.UntilEvery(time.Second, 10*time.Millisecond, func() bool { return count() > 3 }) {
		t.Errorf("notices after the second resume: %+v", o.allNotices()[3:])
	}
}

// TestEngineReloadAndCopy: Reload config asks the service, and a rejected
// config is announced by its cause; Copy error copies, or says why not.
func TestEngineReloadAndCopy(t *testing.T) {
	dir := shortDir(t)
	f := startFake(t, filepath.Join(dir, "s.sock"), agent("a", api.StateRunning, time.Minute, nil))
	u, o := &fakeUI{}, &fakeOS{}
	var copied []string
	var mu sync.Mutex
	d := o.deps()
	d.copy = func(s string) error { mu.Lock(); copied = append(copied, s); mu.Unlock(); return nil }
	e := startEngine(t, dir, u, d, nil)
	m := u.waitMenu(t, "1 running", firstLine("1 running"))
	e.act(findAction(t, m, titleReload))
	testproc.Eventually(t, 10*time.Second, func() bool { return slices.Contains(f.didActions(), "reload") }, "never: a reload")

	f.mu.Lock()
	f.reloadErr = &api.Error{Code: api.CodeConfig, Message: "config: /x/agents.yaml:3: agents[0]: unknown key \"comand\""}
	f.mu.Unlock()
	e.act(findAction(t, m, titleReload))
	n := o.waitNotice(t, "config not applied")
	if !strings.HasPrefix(n.Body, "agents.yaml:3: agents[0]: unknown key") || !slices.Equal(labels(n), []string{labelOpenConfig}) {
		t.Errorf("notice %+v", n)
	}

	e.act(action{Kind: actCopy, Text: "a (a@relay): spawn: it broke"})
	testproc.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(copied, []string{"a (a@relay): spawn: it broke"})
	}, "never: the copy")

	// No clipboard: the error is shown instead.
	e2 := startEngine(t, dir, &fakeUI{}, o.deps(), nil)
	e2.act(action{Kind: actCopy, Text: "the whole error"})
	if n := o.waitNotice(t, "cannot copy"); !strings.Contains(n.Body, "the whole error") || !strings.Contains(n.Body, "xclip") && !strings.Contains(n.Body, "clipboard") {
		t.Errorf("notice %+v", n)
	}
}

// TestEngineAgesFollowRebuilds: a rebuild (as the binding asks for when
// the menu opens) shows the ages of that moment; with nothing happening,
// nothing rebuilds: the engine has no timer.
func TestEngineAgesFollowRebuilds(t *testing.T) {
	dir := shortDir(t)
	base := time.Now()
	a := agent("a", api.StateRunning, 0, nil)
	a.Since = base
	startFake(t, filepath.Join(dir, "s.sock"), a)
	var mu sync.Mutex
	now := base
	u, o := &fakeUI{}, &fakeOS{}
	d := o.deps()
	d.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := startEngine(t, dir, u, d, nil)
	u.waitMenu(t, "a running <1m and the login state", func(m menu) bool {
		return firstLine("1 running")(m) && find(t, m.Items, "a").Title == "a: running <1m" && find(t, m.Items, titleStartAtLogin).Enabled
	})
	mu.Lock()
	now = base.Add(3*time.Hour + 5*time.Minute)
	mu.Unlock()
	before := u.count()
	if testproc.UntilEvery(300*time.Millisecond, 10*time.Millisecond, func() bool { return u.count() != before }) {
		t.Errorf("%d rebuilds with nothing happening", u.count()-before)
	}
	e.changed() // the menu opens
	u.waitMenu(t, "a running 3h", func(m menu) bool { return find(t, m.Items, "a").Title == "a: running 3h" })
}
