package state

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/platform"
)

// The test binary doubles as the child processes the tests need: the
// helpers "writer" and "intent", each given the state directory it works
// in.
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.NoLeaks(), testproc.EveryHelperUsed())
}

func init() {
	testproc.Register("writer", writerHelper)
	testproc.Register("intent", intentHelper)
}

// helperLife bounds the life of every helper, so that nothing a failed or
// killed test run leaves behind lives on for long.
const helperLife = 30 * time.Second

// writerHelper updates the state in args[0] in a loop, one generation
// after another, until killed (or helperLife ends). It writes "ready\n" to
// stdout once the first update is on disk.
func writerHelper(args []string) int {
	s, err := Open(args[0], platform.OpenAppendNoFollow)
	if err == nil {
		err = s.Err()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 1
	}
	first := generationOf(s.State()) + 1
	for n, end := first, time.Now().Add(helperLife); time.Now().Before(end); n++ {
		if err := s.Update(func(st *State) { *st = generation(n) }); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			return 1
		}
		if n == first {
			os.Stdout.WriteString("ready\n")
		}
	}
	return 0
}

// generation is the n-th state the writer writes. The number of agents and
// the length of the strings vary, so files of different sizes follow each
// other and a torn write could not pass for a whole one.
func generation(n int) State {
	st := State{Version: Version, Agents: map[string]Agent{}}
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n%5 + 1 {
		r := &Run{Started: base.Add(time.Duration(n) * time.Second), PID: n, Exit: strings.Repeat("x", (n*7+i)%101)}
		if n%3 == 0 {
			r.Stopped = r.Started.Add(time.Second)
			r.Error = &RunError{Code: api.CodeSpawn, Message: fmt.Sprintf("run %d of agent %d", n, i)}
		}
		st.Agents[fmt.Sprintf("agent-%d", i)] = Agent{Enabled: (n+i)%2 == 0, LastRun: r}
	}
	return st
}

// generationOf is the n that generation(n) was given, 0 for no state.
func generationOf(st State) int {
	if a, ok := st.Agents["agent-0"]; ok && a.LastRun != nil {
		return a.LastRun.PID
	}
	return 0
}

// intentHelper enables agent-1, agent-2, ... in the state in args[0] one
// after another, past those already enabled, folding the journal into the
// state file every tenth change, until killed (or helperLife ends). It
// prints the number of each change once SetEnabled has acknowledged it.
func intentHelper(args []string) int {
	s, err := Open(args[0], platform.OpenAppendNoFollow)
	if err == nil {
		err = s.Err()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "intent writer:", err)
		return 1
	}
	first := len(s.State().Agents) + 1
	for n, end := first, time.Now().Add(helperLife); time.Now().Before(end); n++ {
		if err := s.SetEnabled(fmt.Sprintf("agent-%d", n), true); err != nil {
			fmt.Fprintln(os.Stderr, "intent writer:", err)
			return 1
		}
		fmt.Printf("%d\n", n)
		if n%10 == 0 {
			if err := s.Update(func(*State) {}); err != nil {
				fmt.Fprintln(os.Stderr, "intent writer:", err)
				return 1
			}
		}
	}
	return 0
}
