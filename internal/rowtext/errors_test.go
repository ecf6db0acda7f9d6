package rowtext

import (
	"testing"

	"github.com/tether-dev/tether/api"
)

// The messages below are written the way the service and the guardian
// write them (guardian.StartError, guardian.CleanupError with
// platform/unix's TreeAliveError, the service's crash loop and exit
// texts, config.Error behind the service's "config: " wrap).
func TestError(t *testing.T) {
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
			`identity "alice@relay" is held by tether pid 7 of profile "work"`},
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
		{"spawn, as a service of this version writes it",
			api.Error{Code: api.CodeSpawn, Message: `command "/nonexistent/agent" not found`},
			`command "/nonexistent/agent" not found`},
		{"tether's inner words stay out",
			api.Error{Code: api.CodeInternal, Message: "guardian exited unexpectedly; 2 process(es) left by dead guardians; guardian pid 7 (tether-guardian)"},
			"tether process exited unexpectedly; 2 process(es) left by dead tether processes; tether pid 7 (tether-guardian)"},
		{"anything else as it is",
			api.Error{Code: api.CodeInternal, Message: "the service's state is unreadable"},
			"the service's state is unreadable"},
	} {
		if got := Error(c.e); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestSurvivors(t *testing.T) {
	e := api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state D)", Left: []api.Process{{PID: 777, State: "D"}, {PID: 778, State: "D"}}}
	ps := Survivors(e)
	if len(ps) != 2 || ps[0] != (Survivor{777, 'D'}) || ps[1] != (Survivor{778, 'D'}) || !AllStuck(ps) {
		t.Errorf("survivors %+v", ps)
	}
	e.Message = "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state R)"
	e.Left[1].State = "R"
	if AllStuck(Survivors(e)) {
		t.Error("a running survivor counted as stuck")
	}
	if AllStuck(nil) {
		t.Error("no survivors counted as stuck")
	}
	// Only a cleanup failure names survivors.
	if ps := Survivors(api.Error{Code: api.CodeSpawn, Message: e.Message}); ps != nil {
		t.Errorf("a spawn error's survivors: %+v", ps)
	}
}
