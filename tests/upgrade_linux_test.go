package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// inotifyFDs counts the inotify instances process pid holds.
func inotifyFDs(t *testing.T, pid int) int {
	t.Helper()
	return len(fdsTo(t, pid, "anon_inode:inotify"))
}

// upgradeWorld is a service running three agents: x ignores SIGTERM and
// has a worker and an escapee, y and z are polite.
func upgradeWorld(t *testing.T, stop time.Duration, extraEnv ...string) (w *world, svc *service, m string) {
	t.Helper()
	w, bash, script := crashWorld(t)
	m = uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" +
		misbehavingYAML("x", bash, script, m+"-x", true, stop) +
		politeYAML("y", bash, m+"-y", true) +
		politeYAML("z", bash, m+"-z", true))
	ws := *w
	ws.env = append(slices.Clone(w.env), extraEnv...)
	svc = ws.startService("default")
	for _, id := range []string{"x", "y", "z"} {
		w.waitState("default", id, api.StateRunning)
	}
	waitTrees(t, m+"-x", 1)
	exactlyOnce(t, 0, map[string]int{m + "-y": 1, m + "-z": 1})
	return w, svc, m
}

// rowsByID returns the service's rows and its status.
func rowsByID(t *testing.T, c *client.Client) (map[string]api.Agent, api.Status) {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	rows := map[string]api.Agent{}
	for _, a := range st.Agents {
		rows[a.ID] = a
	}
	return rows, st
}

// sameAgents fails unless every agent of before is, in after, the same
// tree: the same agent and guardian pids, the same since, no restart.
func sameAgents(t *testing.T, before, after map[string]api.Agent) {
	t.Helper()
	for id, b := range before {
		a := after[id]
		if a.State != b.State || a.PID != b.PID || a.GuardianPID != b.GuardianPID || !a.Since.Equal(b.Since) || a.Restarts != b.Restarts {
			t.Errorf("%s changed: before %s pid %d guardian %d since %v restarts %d; after %s pid %d guardian %d since %v restarts %d",
				id, b.State, b.PID, b.GuardianPID, b.Since, b.Restarts, a.State, a.PID, a.GuardianPID, a.Since, a.Restarts)
		}
	}
}

// hammer asks for the status as fast as it can until stop is called, and
// then returns how many requests were made and the errors.
func hammer(c *client.Client) (stop func() (int, []error)) {
	var n atomic.Int64
	var mu sync.Mutex
	var errs []error
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.Status(ctx)
				cancel()
				n.Add(1)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	return func() (int, []error) {
		close(done)
		wg.Wait()
		return int(n.Load()), errs
	}
}

// I9: an upgrade restarts no agent. The service, asked to become the
// binary on disk, does so in place: the same pid, every tree, guardian
// and pid as before, the API answering throughout (no request refused:
// they wait in the listener's queue), and an event stream going on
// across it. Twice in a row, and then the successor stops and quits as
// any service does.
func TestUpgradeRestartsNoAgent(t *testing.T) {
	w, svc, m := upgradeWorld(t, time.Second)
	c := w.client("default")
	before, st0 := rowsByID(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hellos := make(chan api.Event, 16)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			if ev.Type == api.EventHello {
				hellos <- ev
			}
		}
	}()
	<-hellos
	watches := inotifyFDs(t, st0.ServicePID)
	for round := range 2 {
		stop := hammer(c)
		r := w.run(time.Minute, "service", "upgrade")
		n, errs := stop()
		if r.code != 0 {
			t.Fatalf("round %d: service upgrade: exit %d: %s%s\nservice log:\n%s", round, r.code, r.stdout, r.stderr, svc.output())
		}
		if len(errs) > 0 {
			t.Errorf("round %d: %d of %d status requests failed during the upgrade, first: %v", round, len(errs), n, errs[0])
		}
		after, st := rowsByID(t, c)
		sameAgents(t, before, after)
		if st.ServicePID != st0.ServicePID {
			t.Errorf("round %d: the service's pid changed from %d to %d", round, st0.ServicePID, st.ServicePID)
		}
		if st.Service == nil || st.Service.Upgrade == nil || st.Service.Upgrade.Error != nil || st.Service.Upgrade.Took <= 0 {
			t.Fatalf("round %d: status says of the upgrade %+v", round, st.Service)
		}
		exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
		// Each guardian is told of its new owner.
		logPath := filepath.Join(w.dir, "state", "tether", "default", "logs", "z.log")
		var b []byte
		if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
			b, _ = os.ReadFile(logPath)
			return strings.Count(string(b), "the tether has a new owner") == round+1
		}) {
			t.Fatalf("round %d: the guardian of z was not sent attach:\n%s", round, b)
		}
		select {
		case <-hellos:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the event stream did not go on after the upgrade", round)
		}
		// The watches of the service before, handed over so that the
		// exec does not close them, are closed once it serves.
		if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool { return inotifyFDs(t, st.ServicePID) == watches }) {
			t.Fatalf("round %d: the successor holds %d inotify instances, the service before %d: the ones handed over were kept", round, inotifyFDs(t, st.ServicePID), watches)
		}
		t.Logf("round %d: %s; %d status requests during it, none refused; handover %v", round, strings.TrimSpace(r.stdout), n, st.Service.Upgrade.Took)
	}
	// Nothing handed over reaches an agent started after the upgrades,
	// or its guardian (I6).
	w.mustRun("restart", "z")
	w.waitState("default", "z", api.StateRunning)
	zrow, _ := rowsByID(t, c)
	for _, pid := range []int{zrow["z"].PID, zrow["z"].GuardianPID} {
		if n := inotifyFDs(t, pid); n != 0 {
			t.Errorf("process %d of z's tree holds %d inotify instances", pid, n)
		}
	}
	w.mustRun("stop", "y")
	exactlyOnce(t, 0, map[string]int{m + "-y": 0})
	if err := c.Quit(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-svc.done
	w.waitOwnerGone("default", m, time.Now(), 5*time.Second)
	if _, err := os.Stat(w.socket("default")); !os.IsNotExist(err) {
		t.Errorf("the successor left its socket behind: %v", err)
	}
}

// An upgrade that cannot be made leaves the service as it was and says
// why: a binary that is not there, not executable, not a tether, a
// tether that cannot take over (it reads no handover of this version, or
// rejects the config), or a check that answers yes and then does not
// exit 0, or does not exit.
func TestUpgradeRefused(t *testing.T) {
	w, svc, m := upgradeWorld(t, time.Second)
	c := w.client("default")
	before, st0 := rowsByID(t, c)
	script := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(w.dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	future := `#!/bin/sh
cat >/dev/null
echo '{"version":"99","build":"f","handover":7,"protocol":[5,5],"error":"it writes handover records of version 1; this tether reads version 7"}'
exit 1
`
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(w.dir, "nothing-here"), "no such file"},
		{"not executable", script("plain", "#!/bin/sh\nexit 0\n", 0o600), "not executable"},
		{"not a tether", script("other", "#!/bin/sh\necho hello\n", 0o700), "cannot take over"},
		{"a tether that cannot", script("future", future, 0o700), "reads version 7"},
		{"a check that fails after its answer", script("liar", fmt.Sprintf("#!/bin/sh\n%q \"$@\"\nexit 3\n", tether), 0o700), "handover check: exit status 3"},
		{"a check that does not exit after its answer", script("lingering", fmt.Sprintf("#!/bin/sh\n%q \"$@\"\nexec sleep 60\n", tether), 0o700), "had not exited"},
		{"a tether that rejects the config", script("strict", fmt.Sprintf("#!/bin/sh\n%q \"$@\" | sed '1s/.*/{\"error\":\"agent x: refused by this build\"}/'\nexit 1\n", tether), 0o700), "refused by this build"},
	} {
		r := w.run(time.Minute, "service", "upgrade", c.path)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 saying %q\n%s", c.name, r.code, r.stderr, c.want, svc.output())
		}
	}
	after, st := rowsByID(t, c)
	sameAgents(t, before, after)
	if st.ServicePID != st0.ServicePID || st.Service.Build != st0.Service.Build {
		t.Errorf("the service changed: %+v, was %+v", st.Service, st0.Service)
	}
	if u := st.Service.Upgrade; u == nil || u.Error == nil || u.Error.Code != api.CodeUpgrade {
		t.Errorf("status says of the last upgrade %+v, want its error", u)
	}
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
}

// A binary that refuses the config is refused before anything is
// paused: no event stream sees a handover, and the agents are as they
// were.
func TestUpgradeRefusedBeforeThePause(t *testing.T) {
	w, svc, m := upgradeWorld(t, time.Second)
	c := w.client("default")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A hello begins every stream: the first, and one after each pause
	// (the stream ends with a handover event, and the client opens it
	// again).
	hellos := make(chan struct{}, 16)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			if ev.Type == api.EventHello {
				hellos <- struct{}{}
			}
		}
	}()
	hello := func(within time.Duration) bool {
		select {
		case <-hellos:
			return true
		case <-time.After(within):
			return false
		}
	}
	if !hello(10 * time.Second) {
		t.Fatal("no hello on the event stream")
	}
	script := func(name, check string) string {
		p := filepath.Join(w.dir, name)
		body := fmt.Sprintf("#!/bin/sh\nif [ \"$3\" = service ] && [ \"$4\" = handover-check ]; then\n%s\nfi\nexec %q \"$@\"\n", check, tether)
		if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	strict := script("strict", fmt.Sprintf("%q \"$@\" | sed '1s/.*/{\"error\":\"agent x: refused by this build\"}/'\nexit 1", tether))

	before, _ := rowsByID(t, c)
	r := w.run(time.Minute, "service", "upgrade", strict)
	if r.code != 1 || !strings.Contains(r.stderr, "refused by this build") {
		t.Fatalf("upgrade to a binary that refuses the config: exit %d, %q; want exit 1 saying why\nservice log:\n%s", r.code, r.stderr, svc.output())
	}
	if hello(500 * time.Millisecond) {
		t.Errorf("the event stream began again: the service paused for an upgrade refused before the pause\nservice log:\n%s", svc.output())
	}
	after, _ := rowsByID(t, c)
	sameAgents(t, before, after)
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
}

// The exec itself fails after the check passed (the binary is gone by
// then): the service goes back to serving as it was, with every agent,
// and a later upgrade goes through.
func TestUpgradeExecFails(t *testing.T) {
	w, svc, m := upgradeWorld(t, time.Second)
	c := w.client("default")
	before, _ := rowsByID(t, c)
	vanishing := filepath.Join(w.dir, "vanishing")
	body := fmt.Sprintf("#!/bin/sh\nif [ \"$3\" = service ] && [ \"$4\" = handover-check ]; then rm -f \"$0\"; exec %q \"$@\"; fi\nexec %q \"$@\"\n", tether, tether)
	if err := os.WriteFile(vanishing, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	r := w.run(time.Minute, "service", "upgrade", vanishing)
	if r.code != 1 || !strings.Contains(r.stderr, "exec "+vanishing) {
		t.Fatalf("upgrade to a binary gone before the exec: exit %d, %q\nservice log:\n%s", r.code, r.stderr, svc.output())
	}
	after, _ := rowsByID(t, c)
	sameAgents(t, before, after)
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
	w.mustRun("stop", "z") // the agents answer to the service as before
	w.mustRun("service", "upgrade")
	after, _ = rowsByID(t, c)
	delete(before, "z")
	sameAgents(t, before, after)
}

// A kill at each step of the handover: before the exec (the old service
// paused, frozen, its record written, its descriptors inheritable), and
// after it (the successor with the record read, serving, with half its
// tethers made sessions again, with half its guardians sent attach). Whatever the moment, it is a crash: every tree goes
// within its stop timeout (I2), nothing is left (no guardian, lock,
// private directory or record), and a relaunch brings every agent back
// exactly once: never two trees.
func TestUpgradeKilledAtEachStep(t *testing.T) {
	const stop = 300 * time.Millisecond
	for _, step := range []string{"paused", "stand-in", "frozen", "recorded", "exec", "successor", "recalled", "serving", "attaching", "announcing"} {
		t.Run(step, func(t *testing.T) {
			w, svc, m := upgradeWorld(t, stop, "TETHER_TEST_HANDOVER_STOP="+step)
			upgraded := make(chan result, 1)
			go func() { upgraded <- w.run(time.Minute, "service", "upgrade") }()
			if !waitStopped(svc.cmd.Process.Pid, 30*time.Second) {
				svc.kill()
				r := <-upgraded
				t.Fatalf("the service never stopped at %s; the upgrade: exit %d %s%s\nservice log:\n%s", step, r.code, r.stdout, r.stderr, svc.output())
			}
			begin := time.Now()
			svc.kill()
			took := w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
			if left := reapAdopted(5 * time.Second); len(left) > 0 {
				t.Fatalf("guardians still running after their teardown: %v", left)
			}
			w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
			// Once the successor serves, the upgrade is made, and the
			// command may say so before the kill.
			if r := <-upgraded; r.code == 0 && !slices.Contains([]string{"serving", "attaching", "announcing"}, step) {
				t.Errorf("the upgrade succeeded although its service was killed at %s, before it took over", step)
			}
			t.Logf("killed at %s: everything gone %v later", step, took)

			w.startService("default")
			for _, id := range []string{"x", "y", "z"} {
				w.waitState("default", id, api.StateRunning)
			}
			waitTrees(t, m+"-x", 1)
			exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
			if left, _ := filepath.Glob(filepath.Join(w.dir, "state", "tether", "default", "handover.json*")); len(left) > 0 {
				t.Errorf("handover records left: %v", left)
			}
		})
	}
}

// waitStopped waits, up to within, until pid is stopped by a signal
// (state T), and reports whether it was.
func waitStopped(pid int, within time.Duration) bool {
	return testproc.Until(within, func() bool {
		p, err := punix.Stat(pid)
		return err == nil && p.State == 'T'
	})
}

// fdsTo lists the descriptors of process pid that are open on target
// (as /proc names it).
func fdsTo(t *testing.T, pid int, target string) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the descriptors of %d: %v", pid, err)
	}
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == target {
			out = append(out, e.Name())
		}
	}
	return out
}

// landedWorld is upgradeWorld with the service running from a copy of
// the tether binary at bin, where new binaries can land.
func landedWorld(t *testing.T) (w *world, svc *service, m, bin string) {
	t.Helper()
	w, bash, script := crashWorld(t)
	m = uniqueMarker()
	cleanupTrees(t, m)
	bin = filepath.Join(w.dir, "bin", "tether")
	land(t, bin, readBinary(t))
	w.writeConfig("agents:\n" +
		misbehavingYAML("x", bash, script, m+"-x", true, time.Second) +
		politeYAML("y", bash, m+"-y", true) +
		politeYAML("z", bash, m+"-z", true))
	svc = w.startServiceWith(bin, "default")
	for _, id := range []string{"x", "y", "z"} {
		w.waitState("default", id, api.StateRunning)
	}
	return w, svc, m, bin
}

// readBinary is the tether binary under test.
func readBinary(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(tether)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// land puts a new file with body at path, as an install does: written
// beside it, synced and renamed over it.
func land(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// An upgrade to a binary that an install landed where the service runs
// from goes through, and the binary the service ran before, replaced by
// the landing, is handed over open (so that the exec does not free it on
// its way), and closed once the successor serves.
func TestUpgradeToALandedBinary(t *testing.T) {
	w, svc, m, bin := landedWorld(t)
	c := w.client("default")
	before, _ := rowsByID(t, c)
	land(t, bin, readBinary(t))
	if r := w.run(time.Minute, "service", "upgrade", bin); r.code != 0 {
		t.Fatalf("upgrade: exit %d: %s%s\nservice log:\n%s", r.code, r.stdout, r.stderr, svc.output())
	}
	_, st := rowsByID(t, c)
	held := func() []string { return fdsTo(t, st.ServicePID, bin+" (deleted)") }
	if !testproc.Until(5*time.Second, func() bool { return len(held()) == 0 }) {
		t.Errorf("the successor still holds the binary before it: descriptors %v", held())
	}
	after, _ := rowsByID(t, c)
	sameAgents(t, before, after)
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
}

// successorScript writes a binary that is this tether for the handover
// check and runs successor (shell) otherwise: a successor that passes
// the check and then fails in its own way.
func successorScript(t *testing.T, w *world, name, successor string) string {
	t.Helper()
	p := filepath.Join(w.dir, name)
	body := fmt.Sprintf("#!/bin/sh\nif [ \"$3\" = service ] && [ \"$4\" = handover-check ]; then exec %q \"$@\"; fi\n%s\n", tether, successor)
	if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// A successor that dies before it answers (the requests that queued
// meanwhile see their connection reset) is a typed upgrade error on the
// command line, and a crash like any other (I2).
func TestUpgradeSuccessorDiesBeforeAnswering(t *testing.T) {
	w, svc, m := upgradeWorld(t, 300*time.Millisecond)
	dying := successorScript(t, w, "dying", "sleep 0.5\nexit 1")
	begin := time.Now()
	r := w.run(time.Minute, "service", "upgrade", dying)
	if r.code != 1 || !strings.Contains(r.stderr, "its successor died before it answered") {
		t.Errorf("upgrade to a successor that dies: exit %d, %q; want exit 1 naming the successor's end\nservice log:\n%s", r.code, r.stderr, svc.output())
	}
	w.waitOwnerGone("default", m, begin, 10*time.Second)
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
}

// A service that holds its socket and answers nothing (stopped here; a
// successor that hangs is the same to a client) is a service that cannot
// be reached: status exits 3 once it gives up.
func TestStatusOfAHungServiceExits3(t *testing.T) {
	w, svc, _ := upgradeWorld(t, 300*time.Millisecond)
	pid := svc.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	r := w.run(time.Minute, "status")
	if r.code != 3 || !strings.Contains(r.stderr, "did not answer") {
		t.Errorf("status of a hung service: exit %d, %q; want exit 3 saying it did not answer", r.code, r.stderr)
	}
}

// A successor that passes the check and then hangs (here a sleep) is
// bounded: past upgrade.ServeBound it ends as a crash does, every tree
// goes (I2), the command line says the upgrade failed, and a new
// service starts on the same socket and brings every agent back.
func TestUpgradeSuccessorThatHangsIsBounded(t *testing.T) {
	w, svc, m := upgradeWorld(t, 300*time.Millisecond)
	hung := successorScript(t, w, "hung", "exec sleep 1000")
	begin := time.Now()
	r := w.run(time.Minute, "service", "upgrade", hung)
	if r.code != 1 || !strings.Contains(r.stderr, "successor") {
		t.Errorf("upgrade to a successor that hangs: exit %d, %q; want exit 1 naming the successor", r.code, r.stderr)
	}
	select {
	case <-svc.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the hung successor still runs %v after the upgrade began", time.Since(begin))
	}
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("the hung successor ended %v after the upgrade began", took)
	}
	w.waitOwnerGone("default", m, begin, 15*time.Second)
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
	w.startService("default")
	for _, id := range []string{"x", "y", "z"} {
		w.waitState("default", id, api.StateRunning)
	}
	waitTrees(t, m+"-x", 1)
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
}

// While the successor starts (here it waits two seconds before it execs
// this tether), a stand-in answers every status at once, with the rows
// as the pause left them and the upgrade under way; a request that is
// not a status (a stop) waits, and the successor answers it; once the
// successor serves, the stand-in is gone.
func TestUpgradeStandInAnswersMeanwhile(t *testing.T) {
	w, svc, _ := upgradeWorld(t, 300*time.Millisecond)
	c := w.client("default")
	before, st0 := rowsByID(t, c)
	slow := successorScript(t, w, "slow", fmt.Sprintf("sleep 2\nexec %q \"$@\"", tether))
	upgraded := make(chan result, 1)
	go func() { upgraded <- w.run(time.Minute, "service", "upgrade", slow) }()
	standing := func(st api.Status) bool {
		u := st.Service.Upgrade
		return u != nil && u.Paused > 0 && u.Took == 0
	}
	var st api.Status
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		var err error
		st, err = c.Status(context.Background())
		return err == nil && st.Service != nil && standing(st)
	}) {
		t.Fatalf("no status answered during the handover\nservice log:\n%s", svc.output())
	}
	stopped := make(chan result, 1)
	go func() { stopped <- w.run(time.Minute, "stop", "z") }()
	for range 5 {
		begin := time.Now()
		st, err := c.Status(context.Background())
		if took := time.Since(begin); err != nil || took > time.Second || !standing(st) {
			t.Errorf("a status while the successor starts: %v after %v, upgrade %+v; want the stand-in's answer at once", err, took, st.Service)
		}
		after := map[string]api.Agent{}
		for _, a := range st.Agents {
			after[a.ID] = a
		}
		sameAgents(t, before, after)
		if st.ServicePID != st0.ServicePID {
			t.Errorf("the stand-in says the service is pid %d, want %d", st.ServicePID, st0.ServicePID)
		}
	}
	if r := <-upgraded; r.code != 0 {
		t.Fatalf("the upgrade: exit %d %s%s\nservice log:\n%s", r.code, r.stdout, r.stderr, svc.output())
	}
	if r := <-stopped; r.code != 0 {
		t.Errorf("a stop asked during the handover: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
	after, st := rowsByID(t, c)
	if z := after["z"]; z.State != api.StateStopped {
		t.Errorf("z after its stop: %s", z.State)
	}
	delete(before, "z")
	sameAgents(t, before, after)
	if u := st.Service.Upgrade; u == nil || u.Took == 0 {
		t.Errorf("the successor says of the upgrade %+v", u)
	}
	standIns := func() (left []int) {
		procs, _ := punix.Processes()
		for _, p := range procs {
			if p.PPid != st0.ServicePID || p.Zombie() {
				continue
			}
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid)); err == nil && strings.Contains(string(b), "handover-check") {
				left = append(left, p.Pid)
			}
		}
		return left
	}
	if !testproc.Until(5*time.Second, func() bool { return len(standIns()) == 0 }) {
		t.Errorf("stand-ins left: %v", standIns())
	}
}

// Two upgrades asked at once go one after the other: both succeed, each
// within seconds (the pause does not wait for the second, which waits
// for the first), and every agent is kept.
func TestUpgradesAskedAtOnceSerialise(t *testing.T) {
	w, svc, m := upgradeWorld(t, time.Second)
	c := w.client("default")
	before, _ := rowsByID(t, c)
	results := make(chan result, 2)
	took := make(chan time.Duration, 2)
	for range 2 {
		go func() {
			begin := time.Now()
			results <- w.run(time.Minute, "service", "upgrade")
			took <- time.Since(begin)
		}()
	}
	for range 2 {
		if r := <-results; r.code != 0 {
			t.Errorf("one of two upgrades at once: exit %d: %s%s\nservice log:\n%s", r.code, r.stdout, r.stderr, svc.output())
		}
		if d := <-took; d > 5*time.Second {
			t.Errorf("one of two upgrades at once took %v", d)
		}
	}
	after, _ := rowsByID(t, c)
	sameAgents(t, before, after)
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
}
