package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"golang.org/x/sys/unix"
)

// pane is a program running in a detached tmux session of its own server,
// 80x24, read as a person sees it.
type pane struct {
	t    *testing.T
	sock string
}

// tmuxPane runs the shell command line cmd in a new 80x24 tmux session
// with env; the server is killed when the test ends.
func tmuxPane(t *testing.T, dir string, env []string, cmd string) *pane {
	t.Helper()
	p := &pane{t: t, sock: filepath.Join(dir, "tmux.sock")}
	args := []string{"new-session", "-d", "-x", "80", "-y", "24"}
	for _, kv := range env {
		if strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "NO_COLOR=") || strings.HasPrefix(kv, "PATH=") {
			args = append(args, "-e", kv)
		}
	}
	p.tmux(append(args, cmd)...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what the pane shows now.
func (p *pane) screen() string {
	out, err := exec.Command("tmux", "-S", p.sock, "capture-pane", "-p").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// keys types keys, one tmux key name each (a letter, Down, Escape).
func (p *pane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys"}, keys...)...)
}

// waitFor polls the screen until ok accepts it, failing the test (with
// the screen) at the deadline.
func (p *pane) waitFor(what string, ok func(screen string) bool) string {
	p.t.Helper()
	var s string
	if !testproc.UntilEvery(20*time.Second, 20*time.Millisecond, func() bool {
		s = p.screen()
		return ok(s)
	}) {
		p.t.Fatalf("the screen never showed %s:\n%s", what, s)
	}
	return s
}

// row returns the screen's line that begins with the agent id, or "".
func row(screen, id string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, id+" ") {
			return l
		}
	}
	return ""
}

// hasRow reports whether the screen shows id's row in state.
func hasRow(id string, state api.State) func(string) bool {
	return func(s string) bool { return strings.Contains(row(s, id), " "+string(state)+" ") }
}

// TestTopInTmux drives "tether top" as a person does, in an 80x24 tmux
// pane against a real service: it shows each agent's row with its state,
// the failed one first; u measures CPU and memory; ? shows the keys; l follows the selected agent's
// log; x then y stops the selected running agent; the view says so when the service goes away and shows
// the rows again when it is back; R reloads; q exits 0.
func TestTopInTmux(t *testing.T) {
	needTools(t, "tmux")
	m := marker(t)
	cleanupTrees(t, m)
	w := newWorld(t)
	w.writeConfig("agents:\n" + agentYAML("alpha", "alpha@top", m, true) + `  - id: broken
    identity: broken@top
    command: [/nonexistent/tether-top-test]
    autostart: true
`)
	s := w.startService("default")
	w.waitState("default", "alpha", api.StateRunning)
	w.waitState("default", "broken", api.StateFailed)

	exitFile := filepath.Join(w.dir, "top.exit")
	p := tmuxPane(t, w.dir, append(w.env, "NO_COLOR=1"), tether+" --config "+w.configPath()+" top; echo $? > "+exitFile)

	scr := p.waitFor("both rows", func(s string) bool {
		return hasRow("alpha", api.StateRunning)(s) && hasRow("broken", api.StateFailed)(s)
	})
	if strings.Index(scr, "\nbroken ") > strings.Index(scr, "\nalpha ") {
		t.Errorf("the failed agent is not first:\n%s", scr)
	}
	// The cause first, cut to the width of the pane.
	if !strings.Contains(row(scr, "broken"), `command "/nonexistent/tether-top`) {
		t.Errorf("the failed row does not say why:\n%s", scr)
	}
	for i, l := range strings.Split(strings.TrimRight(scr, "\n"), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line %d is %d wide: %q", i, n, l)
		}
	}

	p.keys("u")
	measured := p.waitFor("CPU and MEM measured", func(s string) bool {
		return strings.Contains(s, " CPU ") && strings.Contains(s, " MEM ") && strings.Contains(s, "measured at")
	})
	// With $TETHER_TOP_SCREENSHOT set, the screen rendered to a PNG
	// there (docs/top.png is one).
	if path := os.Getenv("TETHER_TOP_SCREENSHOT"); path != "" {
		screenshotText(t, measured, path)
	}

	p.keys("?")
	p.waitFor("the keys", func(s string) bool { return strings.Contains(s, "q          quit") && row(s, "alpha") == "" })
	p.keys("Escape")
	p.waitFor("the rows again", hasRow("alpha", api.StateRunning))

	// broken is first and selected: move to alpha, follow its log, and
	// stop it.
	p.keys("Down", "l")
	p.waitFor("alpha's log", func(s string) bool {
		// Each line as the log has it: after its time.
		return strings.Contains(s, "log of alpha") && strings.Contains(s, "Z started\n")
	})
	p.keys("l")
	p.waitFor("the log pane closed", func(s string) bool { return !strings.Contains(s, "log of alpha") })
	p.keys("x")
	p.waitFor("the stop's question", func(s string) bool { return strings.Contains(s, "stop alpha? it is running (y/n)") })
	p.keys("y")
	p.waitFor("alpha stopped", hasRow("alpha", api.StateStopped))
	w.waitState("default", "alpha", api.StateStopped)

	s.kill()
	p.waitFor("the service gone", func(s string) bool { return strings.Contains(s, "service not reachable") })
	w.startService("default")
	p.waitFor("the rows of the new service", func(s string) bool {
		return !strings.Contains(s, "service not reachable") && hasRow("alpha", api.StateStopped)(s) && hasRow("broken", api.StateFailed)(s)
	})

	p.keys("R")
	p.waitFor("the reload done", func(s string) bool { return strings.Contains(s, "reload: done") })

	p.keys("q")
	var code string
	if !testproc.UntilEvery(10*time.Second, 20*time.Millisecond, func() bool {
		b, _ := os.ReadFile(exitFile)
		code = strings.TrimSpace(string(b))
		return code != ""
	}) {
		t.Fatalf("tether top did not exit on q:\n%s", p.screen())
	}
	if code != "0" {
		t.Fatalf("tether top exited %s on q", code)
	}
}

// written is how many bytes the pane's program has written since
// pipe began.
func (p *pane) written(pipe string) int64 {
	fi, err := os.Stat(pipe)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// quiet checks that the view writes nothing to its terminal for a while.
func (p *pane) quiet(pipe, why string) {
	p.t.Helper()
	before := p.written(pipe)
	if testproc.UntilEvery(3*time.Second, 50*time.Millisecond, func() bool { return p.written(pipe) != before }) {
		b, _ := os.ReadFile(pipe)
		p.t.Errorf("%s: the view wrote %d bytes while nothing changed:\n%s\n%q", why, p.written(pipe)-before, p.screen(), b[before:])
	}
}

// frames counts the frames the view draws over 3 s (each begins by
// sending the cursor home), or stops counting past most.
func (p *pane) frames(pipe string, most int) int {
	p.t.Helper()
	before, n := p.written(pipe), 0
	testproc.UntilEvery(3*time.Second, 50*time.Millisecond, func() bool {
		b, _ := os.ReadFile(pipe)
		n = strings.Count(string(b[min(before, int64(len(b))):]), "\x1b[H")
		return n > most
	})
	return n
}

// usageOf returns the CPU and MEM cells of id's row, when shown: after
// its id, state, pid, containment, since and restarts.
func usageOf(screen, id string) (cpu, mem string) {
	f := strings.Fields(row(screen, id))
	if len(f) < 8 {
		return "", ""
	}
	return f[6], f[7]
}

// TestTopContainmentAndRefresh: tether top shows each agent's
// containment as status does; CPU and memory are measured only at the
// person's pace (+ faster, - slower and off; off at first); the view
// writes nothing to the terminal while nothing changes, and at most a
// frame a measurement while it measures every second.
func TestTopContainmentAndRefresh(t *testing.T) {
	needTools(t, "tmux")
	m := marker(t)
	cleanupTrees(t, m)
	w := newWorld(t)
	w.writeConfig("agents:\n" + agentYAML("alpha", "alpha@top", m, true))
	w.startService("default")
	w.waitState("default", "alpha", api.StateRunning)
	contained := w.containment("default", "alpha")

	p := tmuxPane(t, w.dir, append(w.env, "NO_COLOR=1"), tether+" --config "+w.configPath()+" top")
	scr := p.waitFor("alpha's row", hasRow("alpha", api.StateRunning))
	if f := strings.Fields(row(scr, "alpha")); len(f) < 4 || f[3] != contained || !strings.Contains(scr, " CONTAIN ") {
		t.Errorf("alpha's row does not show its containment %q:\n%s", contained, scr)
	}
	pipe := filepath.Join(w.dir, "top.out")
	p.tmux("pipe-pane", "-o", "cat >> "+pipe)
	p.quiet(pipe, "refresh off")
	if strings.Contains(p.screen(), " CPU ") {
		t.Errorf("CPU measured without being asked:\n%s", p.screen())
	}

	p.keys("+")
	p.waitFor("a refresh every 30s", func(s string) bool { return strings.Contains(s, "CPU/MEM every 30s") && strings.Contains(s, " CPU ") })
	p.keys("+", "+", "+", "+", "+")
	p.waitFor("a refresh every 1s", func(s string) bool { return strings.Contains(s, "CPU/MEM every 1s") })
	// An idle tree costs the same at each measurement: nothing to draw.
	p.waitFor("alpha's costs", func(s string) bool { cpu, _ := usageOf(s, "alpha"); return strings.HasSuffix(cpu, "s") })
	// A tree's memory moves by a few pages from one second to the next:
	// at most a frame a measurement, and none between (a refresh that
	// finds the same costs draws nothing: top's own tests).
	if n := p.frames(pipe, 4); n > 4 {
		t.Errorf("%d frames in 3 s at a refresh every 1s, want at most 4", n)
	}

	// Measured again without a key: a stopped agent costs nothing, and
	// a started one something again.
	w.mustRun("stop", "alpha")
	p.waitFor("alpha stopped, measured", func(s string) bool {
		cpu, mem := usageOf(s, "alpha")
		return hasRow("alpha", api.StateStopped)(s) && cpu == "-" && mem == "-"
	})
	w.mustRun("start", "alpha")
	p.waitFor("alpha running, measured", func(s string) bool {
		cpu, mem := usageOf(s, "alpha")
		return hasRow("alpha", api.StateRunning)(s) && strings.HasSuffix(cpu, "s") && mem != "-"
	})

	p.keys("-", "-", "-", "-", "-")
	p.waitFor("the refresh off", func(s string) bool {
		return !strings.Contains(s, "CPU/MEM every") && strings.Contains(s, "no refresh")
	})
	w.mustRun("stop", "alpha")
	scr = p.waitFor("alpha stopped", hasRow("alpha", api.StateStopped))
	if cpu, _ := usageOf(scr, "alpha"); cpu == "-" {
		t.Errorf("measured again with the refresh off:\n%s", scr)
	}
	p.keys("q")
}

// TestTopNeedsTerminal: without a terminal "tether top" says so and exits
// 1 at once, instead of drawing into a pipe.
func TestTopNeedsTerminal(t *testing.T) {
	r := run(t, 10*time.Second, "top")
	if r.code != 1 || !strings.Contains(r.stderr, "needs a terminal") || r.stdout != "" {
		t.Fatalf("top without a terminal: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

// screenshotText renders a terminal's text, light on dark in a monospaced
// font, to the PNG at path, with ImageMagick.
func screenshotText(t *testing.T, screen, path string) {
	t.Helper()
	needTools(t, "convert")
	out, err := exec.Command("convert", "-background", "#1e1e1e", "-fill", "#d8d8d8", "-font", "DejaVu-Sans-Mono",
		"-pointsize", "14", "-bordercolor", "#1e1e1e", "-border", "12", "label:"+strings.TrimRight(screen, "\n"), path).CombinedOutput()
	if err != nil {
		t.Fatalf("rendering the screen to %s: %v\n%s", path, err, out)
	}
	t.Logf("the screen, rendered: %s", path)
}

// pid is the pid of the pane's program: started with exec, the process
// tmux runs is the program itself.
func (p *pane) pid() int {
	p.t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(p.tmux("display-message", "-p", "#{pane_pid}")))
	if err != nil {
		p.t.Fatalf("the pane's pid: %v", err)
	}
	return n
}

// screenSGR is what the pane shows now with its attributes, as escape
// sequences (capture-pane -e).
func (p *pane) screenSGR() string {
	out, err := exec.Command("tmux", "-S", p.sock, "capture-pane", "-p", "-e").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// sgrRE is one SGR sequence; its parameters the submatch.
var sgrRE = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colours returns the SGR sequences of s that set a colour (foreground
// or background, 8, 16, 256 or true colour): not bold, reverse or the
// resets to the default colours, which tmux writes around any attribute.
func colours(s string) []string {
	var out []string
	for _, m := range sgrRE.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			n, _ := strconv.Atoi(p)
			if n >= 30 && n <= 38 || n >= 40 && n <= 48 || n >= 90 && n <= 97 || n >= 100 && n <= 107 {
				out = append(out, m[0])
				break
			}
		}
	}
	return out
}

// topPane runs "tether top" of w's config in a tmux pane of its own under
// dir, as the pane's process (exec), with the environment's NO_COLOR as
// noColor says.
func topPane(t *testing.T, w *world, dir string, noColor bool) *pane {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	nc := "NO_COLOR="
	if noColor {
		nc = "NO_COLOR=1"
	}
	return tmuxPane(t, dir, append(w.env, nc), "exec "+tether+" --config "+w.configPath()+" top")
}

// TestTopStartRestartAndColour: s starts the selected stopped agent and
// r restarts it, a new tree each time, as the service says; the state's
// word is coloured, and with NO_COLOR set nothing on the screen is.
func TestTopStartRestartAndColour(t *testing.T) {
	w, _, p := alphaBetaTop(t, false)
	// alpha runs, so it is first: beta is the second row.
	p.keys("Down", "s")
	started := w.waitState("default", "beta", api.StateRunning)
	p.waitFor("beta running with its pid, and the start done", func(s string) bool {
		return hasRow("beta", api.StateRunning)(s) && strings.Contains(row(s, "beta"), " "+strconv.Itoa(started.PID)+" ") &&
			strings.Contains(s, "start beta: done")
	})
	// The state's word in green, as the pane holds it.
	if sgr := p.screenSGR(); !strings.Contains(sgr, "\x1b[32mrunning") {
		t.Errorf("the running state is not green:\n%q", sgr)
	}

	p.keys("r")
	var restarted statusRow
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		restarted = w.status("default")["beta"]
		return restarted.State == api.StateRunning && restarted.PID != started.PID && restarted.PID > 0
	}) {
		t.Fatalf("r did not restart beta: %+v, was pid %d\n%s", restarted, started.PID, p.screen())
	}
	p.waitFor("beta's new pid and the restart done", func(s string) bool {
		return hasRow("beta", api.StateRunning)(s) && strings.Contains(row(s, "beta"), " "+strconv.Itoa(restarted.PID)+" ") &&
			strings.Contains(s, "restart beta: done")
	})
	if !testproc.Until(5*time.Second, func() bool { return unix.Kill(started.PID, 0) != nil }) {
		t.Errorf("beta's first tree, pid %d, lives on after the restart", started.PID)
	}
	p.keys("q")

	plain := topPane(t, w, filepath.Join(w.dir, "plain"), true)
	plain.waitFor("both running", func(s string) bool {
		return hasRow("alpha", api.StateRunning)(s) && hasRow("beta", api.StateRunning)(s)
	})
	if c := colours(plain.screenSGR()); len(c) > 0 {
		t.Errorf("with NO_COLOR the screen has colours %q:\n%q", c, plain.screenSGR())
	}
	plain.keys("q")
}

// alphaBetaTop is a service of two agents, alpha running and beta
// stopped, and tether top showing them, NO_COLOR set as noColor says.
func alphaBetaTop(t *testing.T, noColor bool) (*world, *service, *pane) {
	t.Helper()
	needTools(t, "tmux")
	m := marker(t)
	cleanupTrees(t, m)
	w := newWorld(t)
	w.writeConfig("agents:\n" + agentYAML("alpha", "alpha@top", m, true) + agentYAML("beta", "beta@top", m+"-b", false))
	svc := w.startService("default")
	w.waitState("default", "alpha", api.StateRunning)
	p := topPane(t, w, w.dir, noColor)
	p.waitFor("alpha running, beta stopped", func(s string) bool {
		return hasRow("alpha", api.StateRunning)(s) && hasRow("beta", api.StateStopped)(s)
	})
	return w, svc, p
}

// TestTopSurvivesUpgrade: a hot upgrade of the service (to the binary it
// runs) leaves an open tether top running, the same process, and it
// goes on showing what happens: an agent started from the command line
// after the upgrade shows as running.
func TestTopSurvivesUpgrade(t *testing.T) {
	w, svc, p := alphaBetaTop(t, true)
	pid := p.pid()
	if c := cmdline(pid); !strings.Contains(c, "\x00top") {
		t.Fatalf("the pane's process %d is not tether top: %q", pid, c)
	}
	before := w.status("default")
	if r := w.run(time.Minute, "service", "upgrade"); r.code != 0 {
		t.Fatalf("service upgrade: exit %d: %s%s\nservice log:\n%s", r.code, r.stdout, r.stderr, svc.output())
	}
	if after := w.status("default"); after["alpha"].PID != before["alpha"].PID {
		t.Fatalf("the upgrade restarted alpha: %+v, was %+v", after["alpha"], before["alpha"])
	}
	if _, st := rowsByID(t, w.client("default")); st.Service == nil || st.Service.Upgrade == nil || st.Service.Upgrade.Error != nil {
		t.Fatalf("status says of the upgrade %+v", st.Service)
	}
	w.mustRun("start", "beta")
	beta := w.waitState("default", "beta", api.StateRunning)
	p.waitFor("beta running, started after the upgrade", func(s string) bool {
		return hasRow("beta", api.StateRunning)(s) && strings.Contains(row(s, "beta"), " "+strconv.Itoa(beta.PID)+" ") &&
			hasRow("alpha", api.StateRunning)(s) && !strings.Contains(s, "service not reachable")
	})
	if now := p.pid(); now != pid || !strings.Contains(cmdline(pid), "\x00top") {
		t.Errorf("tether top was pid %d before the upgrade, the pane runs %d (%q) after it", pid, now, cmdline(now))
	}
	p.keys("q")
}

// TestTopIdleWakeups: an open tether top with nothing changing does not
// wake. What is counted: the context switches of every thread of its
// process (voluntary and involuntary, /proc/PID/task/*), the Go runtime's
// own included, over 10 s once it has settled. The bound, one a second,
// leaves room for the runtime's rare background work; it is tighter than
// the "wakes at most once a second", since one wake of the view
// costs several context switches (a 1 Hz ticker in the view counts 70 to
// 80 here): the view has no timer at all.
func TestTopIdleWakeups(t *testing.T) {
	_, _, p := alphaBetaTop(t, false)
	pid := p.pid()
	// Past the first frames and the runtime's start: the count stands
	// still for a whole second, or 10 s have passed (a view that keeps
	// waking is measured all the same).
	prev := int64(-1)
	testproc.UntilEvery(10*time.Second, time.Second, func() bool {
		cur := contextSwitches(t, pid)
		still := cur == prev
		prev = cur
		return still
	})

	const idle = 10 * time.Second
	woke := wakesIn(t, pid, idle)
	t.Logf("the idle tether top woke %d times in %v", woke, idle)
	if most := int64(idle / time.Second); woke > most {
		t.Errorf("the idle tether top woke %d times in %v, want at most %d", woke, idle, most)
	}
	if scr := p.screen(); !hasRow("alpha", api.StateRunning)(scr) {
		t.Errorf("the view changed while idle:\n%s", scr)
	}
	p.keys("q")
}
