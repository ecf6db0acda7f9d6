package tray

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tether-dev/tether/api"
)

// How an error reads in one line of the menu and of a notice.
//
// The API carries an agent's error as a typed code, a message written for
// people, and what a client may act on as data of its own: the processes
// a failed cleanup left (Left) and the last ending a crash loop repeats
// (Last). The tray decides from those alone. For display it shortens the
// message here, and nowhere else: it drops the context that repeats what
// the line already says (the code, the guardian's "starting guardian for
// ID: ", the cleanup's "cleanup failed (CODE): "). What it cannot shorten
// it shows as it is, so nothing is lost; the tooltip always has the
// message whole.

// maxErrorTitle bounds an error line's title. A longer one loses its
// middle, never its start (the cause) nor its end.
const maxErrorTitle = 110

// survivor is a process a failed cleanup left alive, and its state as
// the system saw it (a process state letter: D is uninterruptible sleep).
type survivor struct {
	pid   int
	state byte
}

// survivors lists the processes that e, a cleanup failure, left alive;
// none for any other error.
func survivors(e api.Error) []survivor {
	if e.Code != api.CodeCleanupFailed {
		return nil
	}
	out := make([]survivor, 0, len(e.Left))
	for _, p := range e.Left {
		s := survivor{pid: p.PID, state: '?'}
		if p.State != "" {
			s.state = p.State[0]
		}
		out = append(out, s)
	}
	return out
}

// allStuck reports whether every survivor is in uninterruptible sleep:
// it has had SIGKILL, and dies only when the kernel call it waits in
// returns.
func allStuck(ps []survivor) bool {
	for _, p := range ps {
		if p.state != 'D' {
			return false
		}
	}
	return len(ps) > 0
}

func pidList(ps []survivor) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p.pid)
	}
	return strings.Join(s, ", ")
}

func pidWord(n int) string {
	if n == 1 {
		return "pid"
	}
	return "pids"
}

// errorText is e in one line, cause first, without its code.
func errorText(e api.Error) string {
	msg, more := headLine(e.Message)
	msg = strings.TrimPrefix(msg, string(e.Code)+": ")
	// The guardian's refusals start with whom they are about, which the
	// menu shows already.
	if rest, ok := strings.CutPrefix(msg, "starting guardian for "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			if r, ok := strings.CutPrefix(rest[len(q):], ": "); ok {
				msg = strings.TrimPrefix(r, string(e.Code)+": ")
			}
		}
	}
	switch e.Code {
	case api.CodeCleanupFailed:
		msg = cleanupText(e, msg)
	case api.CodeCrashLoop:
		// The cause first: how it last ended, then how often.
		if e.Last != nil {
			head, _, _ := strings.Cut(msg, "; last: ")
			msg = errorText(*e.Last) + "; " + head
		}
	case api.CodeExited:
		msg = causeOfExit(msg)
	case api.CodeConfig:
		msg = shortenPath(msg)
	}
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more)", more)
	}
	return msg
}

// cleanupText says which processes survived, or what else went wrong.
func cleanupText(e api.Error, msg string) string {
	if ps := survivors(e); len(ps) > 0 {
		if allStuck(ps) {
			return fmt.Sprintf("%s %s stuck in the kernel (state D) after SIGKILL", pidWord(len(ps)), pidList(ps))
		}
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = fmt.Sprintf("%d (state %c)", p.pid, p.state)
		}
		return fmt.Sprintf("%s %s still alive after SIGKILL", pidWord(len(ps)), strings.Join(parts, ", "))
	}
	// "cleanup failed (private_dir): CAUSE"
	if rest, ok := strings.CutPrefix(msg, "cleanup failed ("); ok {
		if code, cause, ok := strings.Cut(rest, "): "); ok {
			return code + ": " + cause
		}
	}
	return msg
}

// causeOfExit drops the "the agent exited: " before an exit status.
func causeOfExit(s string) string {
	return strings.TrimPrefix(s, "the agent exited: ")
}

// shortenPath cuts the directory off a path that starts s ("/a/b/agents.yaml:3: ..."
// becomes "agents.yaml:3: ..."): the tooltip has it whole.
func shortenPath(s string) string {
	rooted := strings.HasPrefix(s, "/") || len(s) > 2 && s[1] == ':' && (s[2] == '\\' || s[2] == '/')
	if !rooted {
		return s
	}
	start := 0
	if s[0] != '/' {
		start = 2 // past the drive's colon
	}
	end := strings.IndexByte(s[start:], ':')
	if end < 0 {
		return s
	}
	end += start
	if i := strings.LastIndexAny(s[:end], `/\`); i >= 0 {
		return s[i+1:]
	}
	return s
}

// headLine is the first non-empty line of s and how many more there are.
func headLine(s string) (string, int) {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", 0
	}
	return lines[0], len(lines) - 1
}

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
