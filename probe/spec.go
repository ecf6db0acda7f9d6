package probe

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Kind names how an agent says, or is seen to be, ready or healthy.
type Kind string

// The kinds. Notify and FD are the agent telling; the others are checks
// made from the outside. Only the outside ones serve as health checks.
const (
	// KindNotify: sd_notify's READY=1 on $NOTIFY_SOCKET (see package
	// sdnotify). Unix only: Windows has no unix datagram sockets.
	KindNotify Kind = "notify"
	// KindFD: s6's notification-fd, a newline written to descriptor FD.
	KindFD Kind = "fd"
	// KindHTTP: a 2xx answer to a GET of URL.
	KindHTTP Kind = "http"
	// KindTCP: a connect to Addr accepted.
	KindTCP Kind = "tcp"
	// KindExec: Argv exits 0.
	KindExec Kind = "exec"
	// KindLog: a line of the agent's output matches Pattern.
	KindLog Kind = "log"
)

// Kinds lists every kind, in the order messages name them.
var Kinds = []Kind{KindNotify, KindFD, KindHTTP, KindTCP, KindExec, KindLog}

// HealthKinds lists the kinds a health check may be.
var HealthKinds = []Kind{KindHTTP, KindTCP, KindExec}

// Spec describes one check as a config states it and the guardian
// protocol carries it. Only the field of its Kind is set.
type Spec struct {
	Kind    Kind     `json:"kind"`
	FD      int      `json:"fd,omitempty"`
	URL     string   `json:"url,omitempty"`
	Addr    string   `json:"addr,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
}

// MinFD is the lowest notification descriptor: 0 to 2 are the agent's
// standard streams.
const MinFD = 3

// MaxFD bounds the notification descriptor, so the agent's descriptor
// table stays small.
const MaxFD = 255

// ErrInvalid is wrapped by every error of Validate.
var ErrInvalid = errors.New("invalid check")

// Validate checks the field of the spec's kind; its message says what is
// wrong with the value, for the caller to put beside the config's key.
func (s Spec) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch s.Kind {
	case KindNotify:
	case KindFD:
		if s.FD < MinFD || s.FD > MaxFD {
			return bad("descriptor %d: use %d to %d (0-2 are the standard streams)", s.FD, MinFD, MaxFD)
		}
	case KindHTTP:
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("%q is not an http:// or https:// URL", s.URL)
		}
	case KindTCP:
		if _, port, err := net.SplitHostPort(s.Addr); err != nil || port == "" {
			return bad("%q is not host:port (e.g. 127.0.0.1:8080)", s.Addr)
		}
	case KindExec:
		if len(s.Argv) == 0 || s.Argv[0] == "" {
			return bad("no command; write it as a list, e.g. [check-it, --quiet]")
		}
	case KindLog:
		if s.Pattern == "" {
			return bad("the pattern is empty")
		}
		if _, err := regexp.Compile(s.Pattern); err != nil {
			return bad("%q is not a regular expression: %v", s.Pattern, err)
		}
	default:
		return bad("%q is not one of %s", s.Kind, kindList(Kinds))
	}
	return nil
}

func kindList(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// String says what the spec checks, as a log line would.
func (s Spec) String() string {
	switch s.Kind {
	case KindFD:
		return fmt.Sprintf("fd %d", s.FD)
	case KindHTTP:
		return "http " + s.URL
	case KindTCP:
		return "tcp " + s.Addr
	case KindExec:
		return "exec " + strings.Join(s.Argv, " ")
	case KindLog:
		return "log line matching " + s.Pattern
	}
	return string(s.Kind)
}

// Outside reports whether the kind is a check made from the outside
// (rather than the agent telling).
func (k Kind) Outside() bool {
	return k == KindHTTP || k == KindTCP || k == KindExec || k == KindLog
}

// Context is what an outside check needs of the agent it checks.
type Context struct {
	// Dir and Env are the agent's, for KindExec, whose command is
	// looked up with Lookup (nil: in the caller's PATH) and run by Run.
	Dir    string
	Env    []string
	Lookup func(argv0 string) (string, error)
	Run    Runner
}

// Check builds the outside check the spec describes. It returns an error
// for notify and fd, which are not checks, for log, which the reader of
// the agent's output matches, and for an exec command that cannot be
// found.
func (s Spec) Check(cx Context) (Check, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.Kind {
	case KindHTTP:
		return HTTP{URL: s.URL}, nil
	case KindTCP:
		return TCP{Addr: s.Addr}, nil
	case KindExec:
		e := Exec{Argv: s.Argv, Dir: cx.Dir, Env: cx.Env, Run: cx.Run}
		if cx.Lookup != nil {
			p, err := cx.Lookup(s.Argv[0])
			if err != nil {
				return nil, err
			}
			e.Path = p
		}
		return e, nil
	case KindLog:
		return nil, fmt.Errorf("%w: %s is matched on the agent's output as its reader reads it, not checked", ErrInvalid, s.Kind)
	}
	return nil, fmt.Errorf("%w: %s is told by the agent, not checked", ErrInvalid, s.Kind)
}
