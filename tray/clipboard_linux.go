//go:build linux

package tray

import (
	"fmt"
	"os"
)

// clipboardCommand: wl-copy (wl-clipboard) on Wayland, else xclip or xsel
// on X11.
func clipboardCommand(text string) ([]string, string, error) {
	if haveEnv("WAYLAND_DISPLAY") {
		if argv, ok := lookFirst([]string{"wl-copy"}); ok {
			return argv, text, nil
		}
	}
	if haveEnv("DISPLAY") {
		if argv, ok := lookFirst([]string{"xclip", "-selection", "clipboard", "-in"}, []string{"xsel", "--clipboard", "--input"}); ok {
			return argv, text, nil
		}
	}
	return nil, "", fmt.Errorf("%w: install wl-clipboard (Wayland) or xclip (X11)", errNoClipboard)
}

func haveEnv(k string) bool { return os.Getenv(k) != "" }
