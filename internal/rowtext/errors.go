package rowtext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tether-dev/tether/api"
)

// Survivor is a process a failed cleanup left alive, and its state as
// the system saw it (a process state letter: D is uninterruptible
// sleep; '?' where the system says none).
type Survivor struct {
	PID   int
	State byte
}

// Survivors lists the processes that e, a cleanup failure, left alive;
// none for any other error.
func Survivors(e api.Error) []Survivor {
	if e.Code != api.CodeCleanupFailed {
		return nil
	}
	out := make([]Survivor, 0, len(e.Left))
	for _, p := range e.Left {
		s := Survivor{PID: p.PID, State: '?'}
		if p.State != "" {
			s.State = p.State[0]
		}
		out = append(out, s)
	}
	return out
}

// AllStuck reports whether every survivor is in uninterruptible sleep:
// it has had SIGKILL, and dies only when the kernel call it waits in
// returns.
func AllStuck(ps []Survivor) bool {
	for _, p := range ps {
		if p.State != 'D' {
			return false
		}
	}
	return len(ps) > 0
}

// PIDList is the survivors' pids, separated by commas.
func PIDList(ps []Survivor) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p.PID)
	}
	return strings.Join(s, ", ")
}

// PIDWord is "pid" for one, "pids" for more.
func PIDWord(n int) string {
	if n == 1 {
		return "pid"
	}
	return "pids"
}

// startPrefix is the context a start's error may begin with, which the
// row says already: whose start it was, before its code. A service of
// this version no longer writes it; a message recorded by an earlier
// one still has it.
const startPrefix = "starting guardian for "

// Error is e in one line, cause first, without its code: what a person
// reads beside the agent's id and the code.
func Error(e api.Error) string {
	msg, more := headLine(e.Message)
	msg = strings.TrimPrefix(msg, string(e.Code)+": ")
	if rest, ok := strings.CutPrefix(msg, startPrefix); ok {
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
			msg = Error(*e.Last) + "; " + head
		}
	case api.CodeExited:
		msg = strings.TrimPrefix(msg, "the agent exited: ")
	case api.CodeConfig:
		msg = shortenPath(msg)
	}
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more)", more)
	}
	return plainWords.Replace(msg)
}

// plainWords keeps the name of tether's own inner workings out of what
// a person reads: the process that owns an agent is, to them, tether's.
// The program's file name stays as it is.
var plainWords = strings.NewReplacer(
	"tether-guardian", "tether-guardian",
	"guardian pid ", "tether pid ",
	"guardians", "tether processes",
	"guardian", "tether process",
)

// cleanupText says which processes survived, or what else went wrong.
func cleanupText(e api.Error, msg string) string {
	if ps := Survivors(e); len(ps) > 0 {
		if AllStuck(ps) {
			return fmt.Sprintf("%s %s stuck in the kernel (state D) after SIGKILL", PIDWord(len(ps)), PIDList(ps))
		}
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = fmt.Sprintf("%d (state %c)", p.PID, p.State)
		}
		return fmt.Sprintf("%s %s still alive after SIGKILL", PIDWord(len(ps)), strings.Join(parts, ", "))
	}
	// "cleanup failed (private_dir): CAUSE"
	if rest, ok := strings.CutPrefix(msg, "cleanup failed ("); ok {
		if code, cause, ok := strings.Cut(rest, "): "); ok {
			return code + ": " + cause
		}
	}
	return msg
}

// shortenPath cuts the directory off a path that starts s
// ("/a/b/agents.yaml:3: ..." becomes "agents.yaml:3: ..."): the whole
// message has it.
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
