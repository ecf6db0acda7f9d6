package tray

import "fmt"

// clipboardCommand: pbcopy, which every macOS has.
func clipboardCommand(text string) ([]string, string, error) {
	if argv, ok := lookFirst([]string{"pbcopy"}); ok {
		return argv, text, nil
	}
	return nil, "", fmt.Errorf("%w: pbcopy is not on PATH", errNoClipboard)
}
