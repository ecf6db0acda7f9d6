package jepsen

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/tether-dev/tether/internal/history"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// The test binary doubles as the agent every host runs: "agent HISTORY
// HOST IDENTITY".
func init() {
	testproc.Register("agent", helperAgent)
}

// fenceEnv is the variable that carries the agent's fencing token.
const fenceEnv = "TETHER_FENCE"

// helperAgent appends its start to the history file, with its fencing
// token, waits for SIGTERM (or SIGINT, SIGHUP) and appends its end as the
// last thing it does. A SIGKILL leaves no end: the watcher records that
// the process is gone.
func helperAgent(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: agent HISTORY HOST IDENTITY")
		return 2
	}
	path, host, identity := args[0], args[1], args[2]
	// Asked for before the start is written: a SIGTERM after the start
	// always writes the end.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var fence int64
	if v, ok := os.LookupEnv(fenceEnv); ok {
		f, err := strconv.ParseInt(v, 10, 64)
		if err != nil || f <= 0 {
			fmt.Fprintf(os.Stderr, "%s=%q is not a positive decimal integer\n", fenceEnv, v)
			return 1
		}
		fence = f
	}
	self, err := punix.Stat(os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rec := history.Record{Kind: history.Start, At: history.Now(), Host: host, Identity: identity, PID: self.Pid, Boot: self.Start, Fence: fence}
	if err := history.Append(path, rec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("agent %s up on %s, fence %d\n", identity, host, fence)
	fmt.Printf("agent %s ends on %v\n", identity, <-sigs)
	rec.Kind, rec.At, rec.Identity, rec.Fence = history.End, history.Now(), "", 0
	if err := history.Append(path, rec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
