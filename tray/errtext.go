package tray

import (
	"strings"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/rowtext"
)

// How an error reads in one line of the menu and of a notice: as
// package rowtext says it, which the command line and the terminal view
// share, cut to the menu's width here. The tooltip always has the
// message whole.

// maxErrorTitle bounds an error line's title. A longer one loses its
// middle, never its start (the cause) nor its end.
const maxErrorTitle = 110

// The survivors of a failed cleanup, as package rowtext reads them.
var (
	survivors = rowtext.Survivors
	allStuck  = rowtext.AllStuck
	pidList   = rowtext.PIDList
	pidWord   = rowtext.PIDWord
)

// errorText is e in one line, cause first, without its code.
func errorText(e api.Error) string { return rowtext.Error(e) }

// errorTitle is the title of an error line: label, code, text.
func errorTitle(label string, e api.Error) string {
	return elide(label+": "+string(e.Code)+": "+errorText(e), maxErrorTitle)
}

// elide makes s one line of at most n runes, cutting its middle, at
// spaces where there are some near the cut.
func elide(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n * 3 / 5
	tail := len(r) - (n - head - 3) // three for " … "
	// Back to a word's end, forward to a word's start: not further than
	// a few characters.
	for i := head; i > head-12 && i > 0; i-- {
		if r[i] == ' ' {
			head = i
			break
		}
	}
	for i := tail; i < tail+12 && i < len(r); i++ {
		if r[i-1] == ' ' {
			tail = i
			break
		}
	}
	return strings.TrimRight(string(r[:head]), " ") + " … " + string(r[tail:])
}
