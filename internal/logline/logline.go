// Package logline is the one format of the lines tether's own processes
// (the guardian, the service, the tray) write to their logs:
//
//	2026-11-30T10:00:00.000Z tether guardian[4241]: started goose as pid 4242 (...)
//
// the time in UTC, RFC 3339 with milliseconds, then who wrote the line and
// its pid. Agents' own output shares the guardian's log file; these lines
// are told from it by their shape (Message).
//
// It is a leaf, so that every process may use it.
package logline

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// TimeFormat is the time at the start of every line.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Format returns the line that who (guardian, service, tray) with pid
// writes for msg at t, newline included.
func Format(t time.Time, who string, pid int, msg string) string {
	return t.UTC().Format(TimeFormat) + " tether " + who + "[" + strconv.Itoa(pid) + "]: " + msg + "\n"
}

// Printf writes one line of who, this process, to w: now, in one write, so
// that lines of several writers never interleave.
func Printf(w io.Writer, who, format string, args ...any) {
	_, _ = io.WriteString(w, Format(time.Now(), who, os.Getpid(), fmt.Sprintf(format, args...)))
}

// Message returns the message of a line that Format made (with or without
// its newline), and false for any other line.
func Message(line string) (string, bool) {
	stamp, rest, ok := strings.Cut(line, " tether ")
	if !ok {
		return "", false
	}
	if _, err := time.Parse(TimeFormat, stamp); err != nil {
		return "", false
	}
	who, msg, ok := strings.Cut(rest, "]: ")
	if !ok || strings.ContainsAny(who, " ") || !strings.Contains(who, "[") {
		return "", false
	}
	return strings.TrimSuffix(msg, "\n"), true
}
