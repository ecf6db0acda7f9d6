package tray

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// errNoClipboard: nothing on this desktop can take text for the
// clipboard.
var errNoClipboard = errors.New("no clipboard program found")

// clipboardTimeout bounds a clipboard program's run.
const clipboardTimeout = 5 * time.Second

// The tray has no GUI toolkit of its own (fyne.io/systray draws nothing),
// so it hands text to the clipboard program of the desktop, the way
// scripts do: wl-copy on Wayland, xclip or xsel on X11, pbcopy on macOS,
// clip on Windows (see clipboardCommand). These keep serving the
// selection after the tray has handed it over, as the desktop expects
// of a clipboard owner.

// copyToClipboard puts text on the desktop's clipboard.
func copyToClipboard(text string) error {
	argv, input, err := clipboardCommand(text)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clipboardTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(input)
	// No pipes for its output: X11 clipboard programs fork a child that
	// keeps serving the selection, and a pipe it inherited would keep
	// Wait waiting for it.
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(argv[0]), err)
	}
	return nil
}

// lookFirst returns the first of the candidates (argv each) whose program
// is on PATH.
func lookFirst(candidates ...[]string) ([]string, bool) {
	for _, c := range candidates {
		if p, err := exec.LookPath(c[0]); err == nil {
			return append([]string{p}, c[1:]...), true
		}
	}
	return nil, false
}
