package unix

import (
	"os"
	"testing"
)

// skipOrFail skips the test with why, except under CI=true, where a missing
// facility is a broken test environment and fails the test.
func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s", why)
	}
	t.Skip(why)
}
