package state

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
)

// TestCrashKeepsAcknowledgedIntent kills a process that appends intent and
// folds it into the state file, at random moments, 30 times. After each
// kill every change it acknowledged is there, in order, and at most the
// one change it was making when killed is there besides (I4).
func TestCrashKeepsAcknowledgedIntent(t *testing.T) {
	dir := testdir.Temp(t)
	acked := 0
	for i := range 30 {
		last := runIntentWriter(t, dir, rand.N(5*time.Millisecond))
		if last < acked {
			t.Fatalf("kill %d: the writer acknowledged nothing past %d", i, acked)
		}
		acked = last

		s := open(t, dir)
		if err := s.Err(); err != nil {
			t.Fatalf("kill %d: the state does not load: %v", i, err)
		}
		st := s.State()
		m := len(st.Agents)
		if m < acked || m > acked+1 {
			t.Fatalf("kill %d: %d agents enabled after %d acknowledged", i, m, acked)
		}
		for n := 1; n <= m; n++ {
			if !st.Agents[fmt.Sprintf("agent-%d", n)].Enabled {
				t.Fatalf("kill %d: agent-%d of %d is not enabled", i, n, m)
			}
		}
		acked = m // the next writer goes on from what is on disk
	}
	t.Logf("%d changes acknowledged over 30 kills", acked)
}

// runIntentWriter runs the intent helper on dir, kills it after it has
// acknowledged its first change and then run for about d, reaps it, and
// returns the last change it acknowledged.
func runIntentWriter(t *testing.T, dir string, d time.Duration) int {
	t.Helper()
	proc, stdout, stderr, reap := startHelper(t, "intent", dir)
	acks := make(chan int, 1<<16)
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if n, err := strconv.Atoi(sc.Text()); err == nil {
				acks <- n
			}
		}
	}()
	last := 0
	select {
	case n, ok := <-acks:
		if !ok {
			reap()
			t.Fatalf("the intent writer acknowledged nothing; stderr: %s", stderr.Bytes())
		}
		last = n
	case <-time.After(10 * time.Second):
		reap()
		t.Fatalf("the intent writer acknowledged nothing in 10s; stderr: %s", stderr.Bytes())
	}
	time.Sleep(d) // the random moment of the kill, not a wait for anything
	proc.Kill()
	// Every acknowledgement printed before the kill arrives before EOF,
	// which comes before the wait closes the pipe.
	for n := range acks {
		last = n
	}
	reap()
	if stderr.Len() > 0 {
		t.Fatalf("intent writer failed: %s", stderr.Bytes())
	}
	return last
}
