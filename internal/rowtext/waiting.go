package rowtext

import (
	"fmt"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
)

// Waiting says what w waits for: "waiting for its log line 'listening
// on'".
func Waiting(w api.Waiting) string {
	switch w.For {
	case api.WaitNotify:
		return "waiting for its READY=1 (notify)"
	case api.WaitFD:
		return "waiting for a line on its descriptor " + w.What
	case api.WaitHTTP:
		return "waiting for a 2xx answer from " + w.What
	case api.WaitTCP:
		return "waiting for " + w.What + " to accept a connection"
	case api.WaitExec:
		return "waiting for '" + w.What + "' to exit 0"
	case api.WaitLog:
		return "waiting for its log line '" + w.What + "'"
	case api.WaitAgents:
		return "waiting for " + strings.Join(w.Agents, ", ")
	}
	if w.What != "" {
		return fmt.Sprintf("waiting for %s %s", w.For, w.What)
	}
	return fmt.Sprintf("waiting for %s", w.For)
}

// Progress says how long w has waited at now, and out of how long:
// "12 s of 60 s", or "12 s" for a wait without a deadline.
func Progress(w api.Waiting, now time.Time) string {
	s := seconds(now.Sub(w.Since))
	if !w.Deadline.IsZero() {
		s += " of " + seconds(w.Deadline.Sub(w.Since))
	}
	return s
}

// WaitingNow is Waiting and Progress: "waiting for its log line
// 'listening on' (12 s of 60 s)".
func WaitingNow(w api.Waiting, now time.Time) string {
	return Waiting(w) + " (" + Progress(w, now) + ")"
}

// seconds is d in whole seconds, "12 s", and past two minutes in
// minutes and seconds, "3 min 5 s".
func seconds(d time.Duration) string {
	n := max(int(d/time.Second), 0)
	if n < 120 {
		return fmt.Sprintf("%d s", n)
	}
	if n%60 == 0 {
		return fmt.Sprintf("%d min", n/60)
	}
	return fmt.Sprintf("%d min %d s", n/60, n%60)
}

// Note is what a row says besides its error: what a starting agent
// waits for, and the agent's own word on how it is doing (its STATUS=
// text, or why it waits: held elsewhere, offline). With a zero now (a
// view that does not redraw every second) a wait says its limit ("up
// to 60 s"); otherwise how long it has waited so far ("12 s of 60 s").
func Note(a api.Agent, now time.Time) string {
	status := strings.Join(strings.Fields(a.Status), " ")
	w := a.Waiting
	if w == nil {
		return status
	}
	s := Waiting(*w)
	switch {
	case !now.IsZero():
		s += " (" + Progress(*w, now) + ")"
	case !w.Deadline.IsZero():
		s += " (up to " + seconds(w.Deadline.Sub(w.Since)) + ")"
	}
	// The agents it waits for are its status already.
	if status != "" && w.For != api.WaitAgents {
		s += "; " + status
	}
	return s
}
