//go:build linux

package tray

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The clipboard program is the desktop's: wl-copy on Wayland, else xclip
// or xsel on X11, else a clear error.
func TestClipboardCommand(t *testing.T) {
	bin := t.TempDir()
	tool := func(name string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("DISPLAY", ":1")
	if _, _, err := clipboardCommand("x"); !errors.Is(err, errNoClipboard) {
		t.Errorf("no program: %v, want errNoClipboard", err)
	}
	tool("xsel")
	if argv, _, err := clipboardCommand("x"); err != nil || filepath.Base(argv[0]) != "xsel" {
		t.Errorf("xsel only: %v %v", argv, err)
	}
	tool("xclip")
	if argv, in, err := clipboardCommand("the text"); err != nil || filepath.Base(argv[0]) != "xclip" || in != "the text" {
		t.Errorf("xclip and xsel: %v %q %v, want xclip", argv, in, err)
	}
	tool("wl-copy")
	if argv, _, _ := clipboardCommand("x"); filepath.Base(argv[0]) != "xclip" {
		t.Errorf("X11 without Wayland: %v, want xclip", argv)
	}
	t.Setenv("WAYLAND_DISPLAY", "wayland-0")
	if argv, _, _ := clipboardCommand("x"); filepath.Base(argv[0]) != "wl-copy" {
		t.Errorf("Wayland: %v, want wl-copy", argv)
	}
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("DISPLAY", "")
	if _, _, err := clipboardCommand("x"); !errors.Is(err, errNoClipboard) {
		t.Errorf("no display: %v, want errNoClipboard", err)
	}
}
