//go:build unix

package tray

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/internal/testproc"
)

func TestMain(m *testing.M) {
	testproc.Main(m, testproc.NoLeaks())
}

// fakeService serves the parts of the local API the tray uses, on a unix
// socket, with agents and events the test controls.
type fakeService struct {
	t    *testing.T
	path string
	srv  *http.Server
	done chan struct{}

	mu      sync.Mutex
	status  api.Status
	subs    map[chan api.Event]bool
	actions []string // "stop alice"
	// reloadErr is what a reload answers; the status event after it
	// carries it as the config error.
	reloadErr *api.Error
	// usage is what a status with usage says each agent costs;
	// usageAsked counts those statuses.
	usage      map[string]api.Usage
	usageAsked int
}

func startFake(t *testing.T, path string, agents ...api.Agent) *fakeService {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeService{t: t, path: path, done: make(chan struct{}), subs: map[chan api.Event]bool{},
		status: api.Status{Profile: "default", ServicePID: 42, Agents: agents}}
	mux := http.NewServeMux()
	mux.HandleFunc(api.PathEvents, f.events)
	mux.HandleFunc(api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.status
		if r.URL.Query().Get(api.QueryUsage) == "1" {
			f.usageAsked++
			st.Agents = slices.Clone(st.Agents)
			for i, a := range st.Agents {
				if u, ok := f.usage[a.ID]; ok {
					st.Agents[i].Usage = &u
				}
			}
		}
		json.NewEncoder(w).Encode(st)
	})
	for verb, path := range map[string]string{"start": api.PathStart, "stop": api.PathStop, "restart": api.PathRestart} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			var req api.IDsRequest
			json.NewDecoder(r.Body).Decode(&req)
			var res api.Results
			f.mu.Lock()
			for _, id := range req.IDs {
				f.actions = append(f.actions, verb+" "+id)
				res.Results = append(res.Results, api.Result{ID: id})
			}
			f.mu.Unlock()
			json.NewEncoder(w).Encode(res)
		})
	}
	mux.HandleFunc(api.PathReload, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		e := f.reloadErr
		f.actions = append(f.actions, "reload")
		f.mu.Unlock()
		if e != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(e)
		}
	})
	f.srv = &http.Server{Handler: mux}
	go func() { f.srv.Serve(l); close(f.done) }()
	t.Cleanup(f.stop)
	return f
}

func (f *fakeService) events(w http.ResponseWriter, r *http.Request) {
	ch := make(chan api.Event, 64)
	f.mu.Lock()
	st := f.status
	st.Agents = slices.Clone(f.status.Agents)
	hello := api.Event{Type: api.EventHello, Status: &st}
	f.subs[ch] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}()
	enc := json.NewEncoder(w)
	enc.Encode(hello)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			enc.Encode(ev)
			w.(http.Flusher).Flush()
		}
	}
}

// send publishes a's new row.
func (f *fakeService) send(a api.Agent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.IndexFunc(f.status.Agents, func(b api.Agent) bool { return b.ID == a.ID }); i >= 0 {
		f.status.Agents[i] = a
	}
	for ch := range f.subs {
		ch <- api.Event{Type: api.EventAgent, Agent: &a}
	}
}

// reload publishes a whole new status, as the service does after a
// reload.
func (f *fakeService) reload(agents ...api.Agent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.Agents = slices.Clone(agents)
	st := f.status
	for ch := range f.subs {
		ch <- api.Event{Type: api.EventStatus, Status: &st}
	}
}

// handover ends every event stream with a handover event, as a service
// does when its successor takes over, and answers from then on as the
// successor that runs s.
func (f *fakeService) handover(s api.Service) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.Service = &s
	for ch := range f.subs {
		ch <- api.Event{Type: api.EventHandover}
		close(ch)
		delete(f.subs, ch)
	}
}

func (f *fakeService) stop() {
	f.srv.Close()
	<-f.done
	os.Remove(f.path)
}

func (f *fakeService) didActions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.actions)
}

// fakeUI records the menus rendered. With a gate, each render waits for
// the gate to be released.
type fakeUI struct {
	mu    sync.Mutex
	menus []menu
	ctxs  []context.Context
	gate  chan struct{}
}

func (u *fakeUI) render(ctx context.Context, m menu) {
	u.mu.Lock()
	gate := u.gate
	u.menus = append(u.menus, m)
	u.ctxs = append(u.ctxs, ctx)
	u.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

func (u *fakeUI) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.menus)
}

func (u *fakeUI) last() menu {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.menus[len(u.menus)-1]
}

// waitMenu waits until the last menu satisfies ok.
func (u *fakeUI) waitMenu(t *testing.T, what string, ok func(menu) bool) menu {
	t.Helper()
	var m menu
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		if u.count() == 0 {
			return false
		}
		m = u.last()
		return ok(m)
	}) {
		var titles []string
		if u.count() > 0 {
			titles = titlesOf(u.last().Items)
		}
		t.Fatalf("no menu with %s; last: %q", what, titles)
	}
	return m
}

func firstLine(want string) func(menu) bool {
	return func(m menu) bool { return len(m.Items) > 0 && m.Items[0].Title == want }
}

type fakeOS struct {
	mu       sync.Mutex
	notices  []notice
	opened   []string
	starts   int
	loginOn  bool
	loginErr error
}

func (o *fakeOS) deps() deps {
	return deps{
		now: time.Now,
		notify: func(n notice) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.notices = append(o.notices, n)
			return nil
		},
		open: func(p string) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.opened = append(o.opened, p)
			return nil
		},
		startService: func(Options) (string, <-chan error, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.starts++
			return "the fake service", nil, nil
		},
		loginInstalled: func(Options) (bool, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.loginOn, nil
		},
		setLogin: func(_ Options, on bool) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.loginErr != nil {
				return o.loginErr
			}
			o.loginOn = on
			return nil
		},
		configInit: func(Options) error { return nil },
	}
}

func (o *fakeOS) waitNotice(t *testing.T, title string) notice {
	t.Helper()
	var n notice
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		i := slices.IndexFunc(o.notices, func(n notice) bool { return strings.Contains(n.Title, title) })
		if i >= 0 {
			n = o.notices[i]
		}
		return i >= 0
	}) {
		t.Fatalf("no notice %q", title)
	}
	return n
}

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ttray")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newTestEngine(t *testing.T, dir string, u ui, o *fakeOS) *engine {
	t.Helper()
	opts := Options{Socket: filepath.Join(dir, "s.sock"), LogDir: dir, ConfigFile: filepath.Join(dir, "agents.yaml")}
	e := newEngine(context.Background(), opts, o.deps(), u)
	e.start()
	t.Cleanup(func() {
		if !e.stop(10 * time.Second) {
			t.Error("the engine's goroutines did not end")
		}
	})
	return e
}

// findAction returns the action of the item reached by titles.
func findAction(t *testing.T, m menu, titles ...string) action {
	t.Helper()
	it := find(t, m.Items, titles...)
	if !it.Enabled {
		t.Fatalf("%v is disabled", titles)
	}
	return it.Action
}

// TestEngineLifecycle: the tray connects, follows events, acts through
// the API, announces a lost service, shows it as not running, and
// reconnects when the service is back.
func TestEngineLifecycle(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	alice := agent("alice", api.StateRunning, time.Minute, nil)
	alice.Since = time.Now().Add(-time.Minute)
	f := startFake(t, sock, alice)
	u, o := &fakeUI{}, &fakeOS{}
	e := newTestEngine(t, dir, u, o)

	m := u.waitMenu(t, "1 running", firstLine("1 running"))
	if m.Icon != assets.Running {
		t.Errorf("icon %v", m.Icon)
	}
	e.act(findAction(t, m, "alice", titleStop))
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool { return slices.Contains(f.didActions(), "stop alice") }) {
		t.Fatalf("the service got %v, want stop alice", f.didActions())
	}

	crash := &api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row"}
	failed := alice
	failed.State, failed.Error, failed.Since = api.StateFailed, crash, time.Now()
	f.send(failed)
	m = u.waitMenu(t, "1 failed", firstLine("1 failed"))
	if line := lastLine(t, m, "alice"); !strings.Contains(line.Title, "crash_loop: ended 6 times") {
		t.Errorf("error line %q", line.Title)
	}
	if n := o.waitNotice(t, "alice keeps crashing"); !strings.Contains(n.Body, "ended 6 times") {
		t.Errorf("notice %+v", n)
	}

	// The service goes away.
	f.stop()
	m = u.waitMenu(t, "service not running", firstLine("service not running"))
	if m.Icon != assets.Unreachable || !strings.Contains(m.Items[0].Tooltip, sock) {
		t.Errorf("icon %v, tooltip %q", m.Icon, m.Items[0].Tooltip)
	}
	o.waitNotice(t, "service stopped")
	e.act(findAction(t, m, titleStartService))
	u.waitMenu(t, "a start under way", func(m menu) bool {
		return m.Items[len(m.Items)-1].Title == titleQuit && slices.ContainsFunc(m.Items, func(it item) bool { return it.Title == "Starting service…" })
	})

	// It comes back: the tray reconnects, the last error is remembered.
	back := alice
	back.Since = time.Now()
	startFake(t, sock, back)
	m = u.waitMenu(t, "1 running again", firstLine("1 running"))
	if line := lastLine(t, m, "alice"); !strings.HasPrefix(line.Title, "last error at") || !strings.Contains(line.Title, string(api.CodeCrashLoop)) {
		t.Errorf("after the reconnection the error line is %q, want the last error", line.Title)
	}
	o.mu.Lock()
	starts := o.starts
	o.mu.Unlock()
	if starts != 1 {
		t.Errorf("startService called %d times, want 1", starts)
	}

	// Every menu but the last has had its context cancelled.
	u.mu.Lock()
	for i, ctx := range u.ctxs[:len(u.ctxs)-1] {
		if ctx.Err() == nil {
			t.Errorf("menu %d of %d still live", i, len(u.ctxs))
		}
	}
	if u.ctxs[len(u.ctxs)-1].Err() != nil {
		t.Error("the last menu's context is cancelled")
	}
	u.mu.Unlock()
}

// An agent removed from the config by a reload leaves the menu.
func TestEngineDropsAgentsRemovedByReload(t *testing.T) {
	dir := shortDir(t)
	alice := agent("alice", api.StateRunning, time.Minute, nil)
	bob := agent("bob", api.StateRunning, time.Minute, nil)
	f := startFake(t, filepath.Join(dir, "s.sock"), alice, bob)
	u := &fakeUI{}
	newTestEngine(t, dir, u, &fakeOS{})
	u.waitMenu(t, "2 running", firstLine("2 running"))
	f.reload(alice)
	m := u.waitMenu(t, "1 running", firstLine("1 running"))
	if slices.ContainsFunc(m.Items, func(it item) bool { return strings.Contains(it.Title, "bob") }) {
		t.Errorf("bob is still in the menu after the reload: %v", titlesOf(m.Items))
	}
}

// TestEngineCoalescesBursts: however many events arrive during a rebuild,
// one more rebuild follows, and it shows the last state.
func TestEngineCoalescesBursts(t *testing.T) {
	dir := shortDir(t)
	a := agent("alice", api.StateRunning, 0, nil)
	f := startFake(t, filepath.Join(dir, "s.sock"), a)
	u := &fakeUI{}
	e := newTestEngine(t, dir, u, &fakeOS{})
	// Quiet: connected, and the login state read (its own rebuild).
	u.waitMenu(t, "1 running and the login state", func(m menu) bool {
		return firstLine("1 running")(m) && find(t, m.Items, titleStartAtLogin).Enabled
	})

	gate := make(chan struct{})
	var release sync.Once
	open := func() {
		release.Do(func() {
			u.mu.Lock()
			u.gate = nil
			u.mu.Unlock()
			close(gate)
		})
	}
	t.Cleanup(open) // before the engine's stop, should the test fail
	u.mu.Lock()
	u.gate = gate
	u.mu.Unlock()
	// Hold a rebuild in progress...
	a.State = api.StateStopping
	f.send(a)
	u.waitMenu(t, "stopping", firstLine("1 stopping"))
	before := u.count()
	// ...while a burst arrives.
	for i := range 50 {
		a.Restarts = i
		a.State = []api.State{api.StateStarting, api.StateRunning}[i%2]
		f.send(a)
	}
	a.State, a.Restarts = api.StateStopped, 99
	f.send(a)
	// Let the engine take in the whole burst, then release the rebuild.
	var in input
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		in = e.input()
		return len(in.Status.Agents) == 1 && in.Status.Agents[0].Restarts == 99
	}) {
		t.Fatalf("the engine never took in the burst: %+v", in.Status.Agents)
	}
	open()
	m := u.waitMenu(t, "the last state", firstLine("1 stopped"))
	if got := find(t, m.Items, "alice", "identity").Title; !strings.Contains(got, "99 restarts") {
		t.Errorf("info line %q, want the last row's", got)
	}
	if n := u.count() - before; n > 2 {
		t.Errorf("%d rebuilds after a burst of 51 events during one rebuild, want at most 2", n)
	}
}

func TestEngineLoginToggle(t *testing.T) {
	dir := shortDir(t)
	startFake(t, filepath.Join(dir, "s.sock"))
	u, o := &fakeUI{}, &fakeOS{loginErr: errors.New("no per-user service manager is available: systemd is not the init system here")}
	e := newTestEngine(t, dir, u, o)
	m := u.waitMenu(t, "a known login state", func(m menu) bool {
		return len(m.Items) > 3 && find(t, m.Items, titleStartAtLogin).Enabled
	})
	e.act(findAction(t, m, titleStartAtLogin))
	n := o.waitNotice(t, "cannot start at login")
	if !strings.Contains(n.Body, "systemd is not the init system") || !strings.Contains(n.Body, "stays off") {
		t.Errorf("notice %+v", n)
	}
	m = u.waitMenu(t, "the switch enabled again", func(m menu) bool { return find(t, m.Items, titleStartAtLogin).Enabled })
	if find(t, m.Items, titleStartAtLogin).Checked {
		t.Error("the switch is checked after a failed install")
	}

	o.mu.Lock()
	o.loginErr = nil
	o.mu.Unlock()
	e.act(findAction(t, m, titleStartAtLogin))
	u.waitMenu(t, "the switch checked", func(m menu) bool {
		it := find(t, m.Items, titleStartAtLogin)
		return it.Enabled && it.Checked
	})
}

func TestEngineOpen(t *testing.T) {
	dir := shortDir(t)
	startFake(t, filepath.Join(dir, "s.sock"), agent("alice", api.StateRunning, 0, nil), agent("bob", api.StateStopped, 0, nil))
	if err := os.WriteFile(filepath.Join(dir, "alice.log"), []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, o := &fakeUI{}, &fakeOS{}
	e := newTestEngine(t, dir, u, o)
	m := u.waitMenu(t, "agents", firstLine("1 running, 1 stopped"))
	e.act(findAction(t, m, "alice", titleOpenLog))
	e.act(findAction(t, m, "bob", titleOpenLog))
	if n := o.waitNotice(t, "no log for bob yet"); !strings.Contains(n.Body, "bob.log") {
		t.Errorf("notice %+v", n)
	}
	var opened []string
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		o.mu.Lock()
		opened = slices.Clone(o.opened)
		o.mu.Unlock()
		return len(opened) == 1 && opened[0] == filepath.Join(dir, "alice.log")
	}) {
		t.Fatalf("opened %v, want alice's log", opened)
	}
}

// When the menu opens, the tray asks the service what each agent costs
// (a status with usage) and shows it in the agent's submenu; it asks
// nothing while the menu stays shut, and once for a burst of opens.
func TestEngineShowsCostWhenTheMenuOpens(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	f := startFake(t, sock, agent("alice", api.StateRunning, time.Minute, nil))
	f.mu.Lock()
	f.usage = map[string]api.Usage{"alice": {CPUSeconds: 0.42, MemoryBytes: 12 << 20, Procs: 3, Source: api.UsageCgroup}}
	f.mu.Unlock()
	u, o := &fakeUI{}, &fakeOS{}
	e := newTestEngine(t, dir, u, o)
	u.waitMenu(t, "1 running", firstLine("1 running"))
	asked := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.usageAsked
	}
	if n := asked(); n != 0 {
		t.Fatalf("the tray asked for the agents' cost %d times before its menu opened", n)
	}
	for range 5 {
		e.opened()
	}
	want := "identity alice@relay, pid 4242, 0.42s CPU, 12.0M"
	u.waitMenu(t, "the cost in alice's submenu", func(m menu) bool {
		for _, it := range m.Items {
			if strings.HasPrefix(it.Title, "alice") {
				return slices.ContainsFunc(it.Children, func(c item) bool { return c.Title == want })
			}
		}
		return false
	})
	if n := asked(); n != 1 {
		t.Errorf("five opens in a row asked for the cost %d times, want once", n)
	}
}
