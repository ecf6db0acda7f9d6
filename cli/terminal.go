package cli

import (
	"io"
	"os"
	"strconv"

	"github.com/charmbracelet/x/term"
)

// isTerminal reports whether w is a terminal (a character device: on Unix
// the null device counts too, which nobody reads).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// defaultWidth is the width of a terminal that does not say its own, nor
// $COLUMNS.
const defaultWidth = 80

// terminalWidth is how many columns the terminal w has: as it says, else
// $COLUMNS, else defaultWidth.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}
