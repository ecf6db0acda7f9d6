package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-dev/tether/guardian"
)

// A private directory that an earlier run left (its guardian was killed
// before its teardown, or the removal failed) is removed when the
// service starts, and the service's log says so; one not named as
// tether names them is left alone.
func TestServiceSweepsLeftoverPrivateDirs(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	w.writeConfig("agents:\n" + agentYAML("x", "x@relay", m, false))
	root := filepath.Join(w.dir, "state", "tether", "default", "private")
	left := filepath.Join(root, guardian.Key("x@relay")+"-"+strings.Repeat("ab", 16))
	sub := filepath.Join(left, "cache")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(left, "a.tmp"), filepath.Join(sub, "b.tmp")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sub, 0o500); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "not-tethers")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	s := w.startService("default")
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Errorf("the leftover private directory %s is still there (%v)", left, err)
	}
	if want := fmt.Sprintf("removed the private directory %s left by an earlier run", left); !strings.Contains(s.output(), want) {
		t.Errorf("the service log lacks %q:\n%s", want, s.output())
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("a directory tether did not make was touched: %v", err)
	}
}
