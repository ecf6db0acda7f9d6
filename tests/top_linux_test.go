package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
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
	if !strings.Contains(row(scr, "broken"), `command "/nonexistent/tether-top-test"`) {
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
