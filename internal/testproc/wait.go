package testproc

import (
	"testing"
	"time"
)

// Tick is how often Eventually and Until check their condition.
const Tick = time.Millisecond

// Until checks cond every Tick until it holds or within has passed, and
// reports whether it held. It is for waits whose failure says what was
// seen last, or is no test's failure (a helper, a cleanup, TestMain).
func Until(within time.Duration, cond func() bool) bool {
	return UntilEvery(within, Tick, cond)
}

// UntilEvery is Until at another pace: it checks every every. It is for a
// condition too costly to check every Tick (one that starts a process,
// asks a service or takes a screenshot), and for a wait whose pace the
// timing of what it waits for may depend on.
func UntilEvery(within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
}

// Eventually checks cond every Tick until it holds, and fails the test
// with the message format and args if it does not within.
func Eventually(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf(format, args...)
	}
}
