package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
)

// A lock directory or private root that cannot be used fails the start
// with the guardian's own code, lock or private_dir, on the row and in
// the answer, never internal (I3).
func TestStartFailureKeepsTheGuardiansCode(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(w *world)
		code  api.Code
		path  func(w *world) string
	}{
		{"lock directory is a link", func(w *world) {
			real := filepath.Join(w.dir, "elsewhere")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, w.paths.LockDir); err != nil {
				t.Fatal(err)
			}
		}, api.CodeLock, func(w *world) string { return w.paths.LockDir }},
		{"private root is a file", func(w *world) {
			if err := os.MkdirAll(w.paths.StateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(w.paths.PrivateRoot, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, api.CodePrivateDir, func(w *world) string { return w.paths.PrivateRoot }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "p", nil)
			w.yaml(`  - id: a
    command: AGENT, sleep]
`)
			tc.spoil(w)
			c := w.controller(Options{})
			_, err := c.Start(context.Background(), "a", false)
			if !isCode(err, tc.code) {
				t.Fatalf("start: %v, want code %s", err, tc.code)
			}
			row := waitState(t, c, "a", api.StateFailed)
			if row.Error == nil || row.Error.Code != tc.code || !strings.Contains(row.Error.Message, tc.path(w)) {
				t.Fatalf("row error %+v, want code %s naming %s", row.Error, tc.code, tc.path(w))
			}
		})
	}
}
