package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
)

// A check says whether a log grew. A write that ends a quiet spell longer
// than logCheckFirst is checked again logCheckMin later, whatever the
// growth it brought; after a shorter spell the growth sets the pace.
func TestLogCheckerWoken(t *testing.T) {
	dir := testdir.Temp(t)
	log := filepath.Join(dir, "a.log")
	if err := os.WriteFile(log, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const max = 10000
	now := time.Now()
	lc := newLogChecker(max, now)
	paths := []string{log}
	if _, grew := lc.check(paths, now); grew {
		t.Fatal("the first look saw a log grow: it has nothing to compare with")
	}
	now = now.Add(time.Second)
	if _, grew := lc.check(paths, now); grew {
		t.Fatal("a log that did not change grew")
	}
	write := func(n int) {
		t.Helper()
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(strings.Repeat("x", n)); err != nil {
			t.Fatal(err)
		}
	}

	// Quiet for an hour, then 100 bytes: at that rate the cap is days
	// away, but the rate is not known yet.
	write(100)
	now = now.Add(time.Hour)
	if wait, grew := lc.woken(paths, now); !grew || wait != logCheckMin {
		t.Fatalf("a write after an hour's quiet: grew %v, next check in %v, want true, %v", grew, wait, logCheckMin)
	}
	// Quiet for 10 s, then 100 bytes: 10 bytes a second, 9794 bytes
	// from the cap, so half of 979.4 s.
	now = now.Add(time.Second)
	lc.check(paths, now)
	write(100)
	now = now.Add(10 * time.Second)
	want := time.Duration(float64(10*time.Second) * 9794 / 100 / 2)
	if wait, grew := lc.woken(paths, now); !grew || wait != want {
		t.Fatalf("a write after 10 s of quiet: grew %v, next check in %v, want true, %v", grew, wait, want)
	}
	// A wake that finds nothing grown (a change that was not a write).
	now = now.Add(time.Minute)
	if _, grew := lc.woken(paths, now); grew {
		t.Fatal("a wake without growth grew")
	}
}
