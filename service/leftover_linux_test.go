package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// An agent whose main process exits while its descendants live has
// them stopped by its guardian, and its row says so: how many it left
// and that tether stopped them, on a clean exit too. A crash loop of
// such an agent names the case in its message.
func TestExitLeavingProcessesIsReported(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yamlTop("restart: {backoff: 10ms, max_backoff: 20ms, crash_loop: {failures: 3, within: 1m}}\n", `  - id: once
    command: [/bin/sh, -c, 'sleep 1000 & sleep 1000 & exit 0']
    restart: never
    stop_timeout: 1s
  - id: always
    command: [/bin/sh, -c, 'sleep 1000 & exit 0']
    restart: always
    stop_timeout: 1s
`)
	c := w.controller(Options{})
	ctx := context.Background()
	if _, err := c.Start(ctx, "once", true); err != nil {
		t.Fatal(err)
	}
	// The spawn answered; the exit's report follows.
	row := waitState(t, c, "once", api.StateStopped)
	testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		row = waitState(t, c, "once", api.StateStopped)
		return row.Error != nil
	})
	if row.Error == nil || row.Error.Code != api.CodeExited || !strings.Contains(row.Error.Message, "exit status 0") ||
		!strings.Contains(row.Error.Message, "left 2 processes running, which tether stopped") {
		t.Fatalf("row of an agent that left two processes: %+v (error %+v)", row, row.Error)
	}
	if _, err := c.Start(ctx, "always", true); err != nil {
		t.Fatal(err)
	}
	row = waitState(t, c, "always", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeCrashLoop || !strings.Contains(row.Error.Message, "left 1 process running, which tether stopped") {
		t.Fatalf("crash loop of an agent that left a process each time: %+v (error %+v)", row, row.Error)
	}
}
