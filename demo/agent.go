package demo

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Agent is the demo agent built into the binary ("tether demo-agent"). It
// behaves like a real agent with helpers: it starts a worker in a process
// group of its own and a descendant that double-forks into a session of its
// own (on Windows: a detached process, orphaned), the kind of escapee a
// process-group kill misses; it writes a heartbeat to its log and exits on
// SIGTERM or an interrupt (CTRL_BREAK on Windows).
func Agent(args []string) int {
	role := "agent"
	if len(args) > 0 {
		role = args[0]
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	switch role {
	case "agent":
		return runAgent(term)
	case "worker", "escapee":
		fmt.Printf("demo %s pid %d up\n", role, os.Getpid())
		<-term
		return 0
	case "escape":
		// The middle of the double fork: start the escapee in a new
		// session and exit at once, orphaning it.
		return startSelf("escapee", escapeeAttr(), false)
	default:
		fmt.Fprintf(os.Stderr, "tether demo-agent: unknown role %q\n", role)
		return 2
	}
}

func runAgent(term <-chan os.Signal) int {
	fmt.Printf("demo agent pid %d up, private dir %s\n", os.Getpid(), os.Getenv("TETHER_PRIVATE_DIR"))
	if rc := startSelf("worker", workerAttr(), true); rc != 0 {
		return rc
	}
	if rc := startSelf("escape", nil, true); rc != 0 {
		return rc
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-term:
			fmt.Println("demo agent: asked to stop, exiting")
			return 0
		case <-tick.C:
			fmt.Printf("demo agent: heartbeat %d\n", n)
		}
	}
}

// startSelf starts this binary as another demo role. With wait, a
// goroutine reaps it when it exits.
func startSelf(role string, attr *syscall.SysProcAttr, wait bool) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo agent:", err)
		return 1
	}
	cmd := exec.Command(exe, "demo-agent", role)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "demo agent:", err)
		return 1
	}
	if wait {
		go func() { _ = cmd.Wait() }()
	}
	return 0
}
