package testproc

import (
	"os"
	"testing"
)

// SkipOrFail skips the test, saying why, except under CI=true, where
// every tool and facility a test needs is to be there: a missing one is
// a broken test environment, and fails the test.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}
