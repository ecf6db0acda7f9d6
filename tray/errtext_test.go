package tray

import (
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
)

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
