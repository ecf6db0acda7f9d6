package tray

import (
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
)

// The messages below are written the way the service and the guardian
// write them (guardian.StartError, guardian.CleanupError with
// platform/unix's TreeAliveError, the service's crash loop and exit
// texts, config.Error behind the service's "config: " wrap).
func TestErrorText(t *testing.T) {
	for _, c := range []struct {
		name string
		e    api.Error
		want string
	}{
		{"spawn: the guardian's prefix and the repeated code go",
			api.Error{Code: api.CodeSpawn, Message: `starting guardian for "bob@relay": spawn: command "/nonexistent/agent" not found`},
			`command "/nonexistent/agent" not found`},
		{"contention",
			api.Error{Code: api.CodeContention, Message: `starting guardian for "alice@relay": contention: identity "alice@relay" is held by guardian pid 7 of profile "work"`},
			`identity "alice@relay" is held by guardian pid 7 of profile "work"`},
		{"exited: the status itself",
			api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 3"},
			"exit status 3"},
		{"exited by signal",
			api.Error{Code: api.CodeExited, Message: "the agent exited: killed by signal: SIGKILL"},
			"killed by signal: SIGKILL"},
		{"crash loop: the last exit's cause first",
			api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row, each within 1m of starting; last: the agent exited: exit status 3", Last: &api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 3"}},
			"exit status 3; ended 6 times in a row, each within 1m of starting"},
		{"cleanup: survivors stuck in the kernel",
			api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 1 process(es) still alive after SIGKILL: 777 (state D)", Left: []api.Process{{PID: 777, State: "D"}}},
			"pid 777 stuck in the kernel (state D) after SIGKILL"},
		{"cleanup: survivors in other states",
			api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state S)", Left: []api.Process{{PID: 777, State: "D"}, {PID: 778, State: "S"}}},
			"pids 777 (state D), 778 (state S) still alive after SIGKILL"},
		{"cleanup: another cause",
			api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (private_dir): removing /run/x: permission denied"},
			"private_dir: removing /run/x: permission denied"},
		{"config: the directory goes, file and line stay",
			api.Error{Code: api.CodeConfig, Message: `config: /home/u/.config/tether/agents.yaml:3: agents[0]: unknown key "comand"`},
			`agents.yaml:3: agents[0]: unknown key "comand"`},
		{"config: several problems",
			api.Error{Code: api.CodeConfig, Message: "config: /c/agents.yaml:3: agents[0].id: missing\n/c/agents.yaml:9: agents[1].command: missing"},
			"agents.yaml:3: agents[0].id: missing (and 1 more)"},
		{"config: a Windows path",
			api.Error{Code: api.CodeConfig, Message: `config: C:\Users\u\AppData\Roaming\tether\agents.yaml:3: bad`},
			"agents.yaml:3: bad"},
		{"anything else as it is",
			api.Error{Code: api.CodeInternal, Message: "guardian exited unexpectedly"},
			"guardian exited unexpectedly"},
	} {
		if got := errorText(c.e); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A long error keeps its start (the cause) and its end, and loses its
// middle; it is one line.
func TestErrorTitleKeepsWhatMatters(t *testing.T) {
	pids := "cleanup failed (tree_alive): 12 process(es) still alive after SIGKILL: "
	var list []string
	var left []api.Process
	for i := range 12 {
		list = append(list, strings.Repeat("1", 4)+string(rune('0'+i%10))+" (state S)")
		left = append(left, api.Process{PID: 11110 + i%10, State: "S"})
	}
	e := api.Error{Code: api.CodeCleanupFailed, Message: pids + strings.Join(list, ", "), Left: left}
	title := errorTitle("error at 10:00", e)
	if n := len([]rune(title)); n > maxErrorTitle {
		t.Errorf("title of %d runes: %q", n, title)
	}
	if !strings.HasPrefix(title, "error at 10:00: cleanup_failed: pids 11110 (state S)") || !strings.HasSuffix(title, "still alive after SIGKILL") {
		t.Errorf("title %q: want the first pids and the end", title)
	}

	last := "the agent exited: " + strings.Repeat("word ", 40) + "exit status 3"
	long := api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row, each within 1m of starting; last: " + last,
		Last: &api.Error{Code: api.CodeExited, Message: last}}
	title = errorTitle("error", long)
	if !strings.Contains(title, "…") || !strings.HasSuffix(title, "of starting") || !strings.HasPrefix(title, "error: crash_loop: word") {
		t.Errorf("title %q", title)
	}
}

func TestSurvivors(t *testing.T) {
	e := api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state D)", Left: []api.Process{{PID: 777, State: "D"}, {PID: 778, State: "D"}}}
	ps := survivors(e)
	if len(ps) != 2 || ps[0] != (survivor{777, 'D'}) || ps[1] != (survivor{778, 'D'}) || !allStuck(ps) {
		t.Errorf("survivors %+v", ps)
	}
	e.Message = "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state R)"
	e.Left[1].State = "R"
	if allStuck(survivors(e)) {
		t.Error("a running survivor counted as stuck")
	}
	if allStuck(nil) {
		t.Error("no survivors counted as stuck")
	}
	// Only a cleanup failure names survivors.
	if ps := survivors(api.Error{Code: api.CodeSpawn, Message: e.Message}); ps != nil {
		t.Errorf("a spawn error's survivors: %+v", ps)
	}
}
