//go:build linux || windows || (darwin && cgo)

package tray

import (
	"runtime"
	"testing"
)

func TestLabelEscapesMnemonics(t *testing.T) {
	in := "error: cleanup_failed: R&D"
	want := map[string]string{
		"linux":   "error: cleanup__failed: R&D",
		"windows": "error: cleanup_failed: R&&D",
		"darwin":  in,
	}[runtime.GOOS]
	if got := label(in); got != want {
		t.Errorf("label(%q) = %q, want %q", in, got, want)
	}
}
