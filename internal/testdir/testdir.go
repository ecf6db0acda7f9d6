// Package testdir is test support: a temporary directory for a test that
// is removed when the test ends, also where Go's own removal fails (Wine
// 8, which runs the Windows tests in CI). Only tests import it.
package testdir

import (
	"os"
	"testing"

	"github.com/tether-dev/tether/platform"
)

// Temp is t.TempDir, removed with platform.RemoveAll: Go's os.RemoveAll
// fails under Wine 8.
func Temp(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tether-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := platform.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}
