package tray

import (
	"fmt"
	"unicode/utf16"
)

// clipboardCommand: clip.exe, which every Windows since Vista has. It
// reads text in the console's code page unless the text starts with a
// UTF-16 byte order mark, so it gets UTF-16LE with one.
func clipboardCommand(text string) ([]string, string, error) {
	argv, ok := lookFirst([]string{"clip"})
	if !ok {
		return nil, "", fmt.Errorf("%w: clip.exe is not on PATH", errNoClipboard)
	}
	u := utf16.Encode([]rune("\ufeff" + text))
	b := make([]byte, 0, 2*len(u))
	for _, c := range u {
		b = append(b, byte(c), byte(c>>8))
	}
	return argv, string(b), nil
}
