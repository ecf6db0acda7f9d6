package service

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// The test binary is also the guardian and the agents: the helpers
// "guardian" and "agent ROLE".
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.EveryHelperUsed(), testproc.Before(func() error {
		_, err := punix.BecomeSubreaper()
		return err
	}))
}

func init() {
	testproc.Register("guardian", guardian.Main)
	testproc.Register("agent", agentMain)
}

// agentMain is a test agent: "sleep" runs until SIGTERM, "exit N" exits
// with N at once, "count DIR" writes a file per start and sleeps,
// "fence DIR" writes its TETHER_FENCE to DIR/<pid> and sleeps,
// "count-crash DIR" writes a file per start and exits 3 unless DIR/ok
// exists, and then sleeps, "burn" holds 64 MiB and keeps a CPU busy,
// "runs DIR D1 D2 ..." writes a file per start and, at its nth start,
// runs for Dn (a duration; past the list, none) and exits 3.
func agentMain(args []string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	switch args[0] {
	case "sleep":
		fmt.Println("agent up")
		<-term
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		select {}
	case "exit-on":
		// Exits 3 once the file args[1] exists.
		for {
			if _, err := os.Stat(args[1]); err == nil {
				return 3
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "fence":
		// Writes its TETHER_FENCE to DIR/<pid>, then sleeps.
		name := filepath.Join(args[1], strconv.Itoa(os.Getpid()))
		_ = os.WriteFile(name+".tmp", []byte(os.Getenv("TETHER_FENCE")), 0o600)
		_ = os.Rename(name+".tmp", name)
		<-term
		return 0
	case "count":
		_ = os.WriteFile(filepath.Join(args[1], strconv.Itoa(os.Getpid())), nil, 0o600)
		<-term
		return 0
	case "burn":
		// Holds 64 MiB, every page written, and keeps a CPU busy.
		mem := make([]byte, 64<<20)
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 1
		}
		fmt.Println("burning")
		for n := 0; ; n++ {
			mem[n%len(mem)]++
		}
	case "runs":
		// The files already there are the starts before this one.
		before, _ := os.ReadDir(args[1])
		_ = os.WriteFile(filepath.Join(args[1], strconv.Itoa(os.Getpid())), nil, 0o600)
		if n := len(before); n < len(args)-2 {
			d, _ := time.ParseDuration(args[2+n])
			time.Sleep(d)
		}
		return 3
	case "count-crash":
		_ = os.WriteFile(filepath.Join(args[1], strconv.Itoa(os.Getpid())), nil, 0o600)
		if _, err := os.Stat(filepath.Join(args[1], "ok")); err != nil {
			return 3
		}
		<-term
		return 0
	}
	return 2
}
