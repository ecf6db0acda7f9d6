package top

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/rowtext"
)

// order ranks states for the rows: the ones that need a person first.
func order(s api.State) int {
	switch s {
	case api.StateFailed:
		return 0
	case api.StateBackoff, api.StateOffline:
		return 1
	case api.StateStarting, api.StateStopping, api.StateAdoptable, api.StateHeldElsewhere:
		return 2
	case api.StateRunning:
		return 3
	}
	return 4
}

// sortRows puts failed agents first, then by state, then by id.
func sortRows(rows []api.Agent) {
	slices.SortFunc(rows, func(a, b api.Agent) int {
		if c := cmp.Compare(order(a.State), order(b.State)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// stateColor is the SGR colour of a state's word.
func stateColor(s api.State) string {
	switch s {
	case api.StateFailed:
		return "31" // red
	case api.StateBackoff, api.StateStarting, api.StateStopping, api.StateAdoptable, api.StateHeldElsewhere, api.StateOffline:
		return "33" // yellow
	case api.StateRunning:
		return "32" // green
	}
	return ""
}

// errorCause is an agent's error in one line, cause first (as package
// rowtext says it), the code after the cause.
func errorCause(e *api.Error) string {
	if e == nil {
		return ""
	}
	msg := rowtext.Error(*e)
	if msg == "" {
		return string(e.Code)
	}
	return msg + " (" + string(e.Code) + ")"
}

// columns is the header of the rows.
var columns = []column{{"ID", 0}, {"STATE", 9}, {"PID", 7}, {"CONTAIN", 7}, {"SINCE", 8}, {"RST", 4}, {"ERROR", 0}}

type column struct {
	name  string
	width int
}

// cells are the texts of one row, in the order of columns. Since is a
// time of day, not an age, so that an idle view has nothing to redraw.
func cells(a api.Agent) []string {
	pid, containment := "-", "-"
	if n := rowtext.PID(a); n > 0 {
		pid = strconv.Itoa(n)
	}
	if a.Containment != "" {
		containment = string(a.Containment)
	}
	since := "-"
	if !a.Since.IsZero() {
		t := a.Since.Local()
		if time.Since(t) < 20*time.Hour {
			since = t.Format("15:04:05")
		} else {
			since = t.Format("Jan 02")
		}
	}
	msg := errorCause(a.Error)
	if msg == "" {
		// What it waits for, with its limit: the view does not redraw
		// every second.
		msg = rowtext.Note(a, time.Time{})
	}
	return []string{a.ID, string(a.State), pid, containment, since, strconv.Itoa(a.Restarts), msg}
}

// fit cuts s to n runes (n <= 0: no room), marking a cut with "…".
func fit(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n == 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}

// pad cuts or pads s to exactly n runes.
func pad(s string, n int) string {
	s = fit(s, n)
	if k := len([]rune(s)); k < n {
		s += strings.Repeat(" ", n-k)
	}
	return s
}

// plural is "1 agent", "2 agents".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
