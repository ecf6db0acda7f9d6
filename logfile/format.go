package logfile

import (
	"bytes"
	"time"
)

// TimeFormat is the time at the start of a stamped line: UTC, RFC 3339
// with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Stream names where a line came from.
type Stream uint8

// The streams of an agent's output.
const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// StderrMark follows the time (or starts the line, without timestamps)
// on a line the agent wrote to its standard error.
const StderrMark = "[stderr] "

// stamper renders times in TimeFormat, reusing the text up to the second
// while the second lasts: the logging of a busy agent renders one time per
// read, thousands a second.
type stamper struct {
	sec  int64
	head []byte // "2026-12-05T10:02:03." for sec
}

// append appends t in TimeFormat and a space to b.
func (s *stamper) append(b []byte, t time.Time) []byte {
	t = t.UTC()
	if sec := t.Unix(); sec != s.sec || s.head == nil {
		s.sec = sec
		s.head = t.AppendFormat(s.head[:0], "2006-01-02T15:04:05.")
	}
	ms := t.Nanosecond() / 1e6
	return append(append(b, s.head...), byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', ' ')
}

// Line is one line of a log, parsed.
type Line struct {
	// Time is the line's stamp; zero on a line without one.
	Time   time.Time
	Stream Stream
	// Text is the rest of the line, without the stamp, the stream's
	// mark and the newline.
	Text string
}

// Parse splits a line of a log (with or without its newline) into its
// time, stream and text. A line without a stamp keeps a zero time; the
// lines the guardian writes of itself read as stdout.
func Parse(line []byte) Line {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var l Line
	if sp := bytes.IndexByte(line, ' '); sp == len(TimeFormat)-5 && line[sp-1] == 'Z' {
		if t, err := time.Parse(TimeFormat, string(line[:sp])); err == nil {
			l.Time = t
			line = line[sp+1:]
		}
	}
	if rest, ok := bytes.CutPrefix(line, []byte(StderrMark)); ok {
		l.Stream, line = Stderr, rest
	}
	l.Text = string(line)
	return l
}
