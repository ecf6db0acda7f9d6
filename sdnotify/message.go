package sdnotify

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MaxDatagram is the largest notification accepted, in bytes. systemd
// itself reads at most a page's worth of assignments per datagram (its
// NOTIFY_BUFFER_MAX); a longer one is cut there and reported.
const MaxDatagram = 4096

// Message is what one datagram says. Fields of assignments the datagram
// did not carry keep their zero value; the Has* flags tell an explicit
// zero from an absent key where the difference matters.
type Message struct {
	Ready     bool // READY=1: start-up finished
	Reloading bool // RELOADING=1: reloading its configuration
	Stopping  bool // STOPPING=1: beginning its shutdown

	// Status is the free-form STATUS= text; HasStatus says it was sent
	// (an empty STATUS= clears the text).
	Status    string
	HasStatus bool

	Watchdog        bool // WATCHDOG=1: the keep-alive ping
	WatchdogTrigger bool // WATCHDOG=trigger: act as if the ping was missed

	// WatchdogInterval is WATCHDOG_USEC=: a new watchdog interval, asked for
	// by the program itself.
	WatchdogInterval time.Duration

	// ExtendTimeout is EXTEND_TIMEOUT_USEC=: the current start-up or
	// shut-down deadline moves to now plus this much.
	ExtendTimeout time.Duration

	// MainPID is MAINPID=: the process that now counts as the main one.
	MainPID int

	// Errno is ERRNO=: the errno-style code of a failure, with HasErrno
	// telling ERRNO=0 from no ERRNO at all.
	Errno    int
	HasErrno bool

	// Barrier is BARRIER=1: the sender waits until every descriptor sent
	// with the datagram is closed (sd_notify_barrier).
	Barrier bool

	// Unknown lists the keys this package does not act on, in order
	// (FDSTORE=, MONOTONIC_USEC=, BUSERROR=, ...). systemd ignores them
	// too; they are kept so a log can say what was sent.
	Unknown []string
}

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed notification")

// FieldError is an assignment whose value could not be read. The other
// assignments of the datagram are still applied, as systemd does.
type FieldError struct {
	Key   string
	Value string
	Err   error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s=%q: %v", e.Key, e.Value, e.Err)
}

// Unwrap returns ErrMalformed, so callers match every parse error with one
// errors.Is.
func (e *FieldError) Unwrap() error { return ErrMalformed }

// Parse reads one datagram. It returns what it could read and, when some
// assignment was malformed, an error joining a *FieldError for each; a
// datagram longer than MaxDatagram is refused whole.
func Parse(b []byte) (Message, error) {
	var m Message
	if len(b) > MaxDatagram {
		return m, fmt.Errorf("%w: %d bytes, at most %d are read", ErrMalformed, len(b), MaxDatagram)
	}
	var errs []error
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		key, value, ok := bytes.Cut(line, []byte("="))
		if !ok {
			errs = append(errs, &FieldError{Key: string(line), Err: errors.New("no '=' in the assignment")})
			continue
		}
		if err := m.set(string(key), string(value)); err != nil {
			errs = append(errs, &FieldError{Key: string(key), Value: string(value), Err: err})
		}
	}
	return m, errors.Join(errs...)
}

func (m *Message) set(key, value string) error {
	switch key {
	case "READY":
		return flag(&m.Ready, value)
	case "RELOADING":
		return flag(&m.Reloading, value)
	case "STOPPING":
		return flag(&m.Stopping, value)
	case "STATUS":
		m.Status, m.HasStatus = value, true
	case "WATCHDOG":
		if value == "trigger" {
			m.WatchdogTrigger = true
			return nil
		}
		return flag(&m.Watchdog, value)
	case "WATCHDOG_USEC":
		return usec(&m.WatchdogInterval, value)
	case "EXTEND_TIMEOUT_USEC":
		return usec(&m.ExtendTimeout, value)
	case "MAINPID":
		return pid(&m.MainPID, value)
	case "ERRNO":
		n, err := strconv.Atoi(value)
		if err != nil {
			return errors.New("not a whole number")
		}
		m.Errno, m.HasErrno = n, true
	case "BARRIER":
		return flag(&m.Barrier, value)
	default:
		m.Unknown = append(m.Unknown, key)
	}
	return nil
}

// Each reader below sets its field only from a well-formed value, so a
// malformed repeat of a key never undoes an earlier good one.

// flag reads a boolean assignment. sd_notify's documented form is "1";
// systemd acts on nothing else for these keys, so neither does tether.
func flag(dst *bool, v string) error {
	if v != "1" {
		return errors.New(`the only value acted on is "1"`)
	}
	*dst = true
	return nil
}

func usec(dst *time.Duration, v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return errors.New("not a whole number of microseconds")
	}
	if n > uint64(1<<63-1)/uint64(time.Microsecond) {
		return errors.New("too large")
	}
	*dst = time.Duration(n) * time.Microsecond
	return nil
}

func pid(dst *int, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return errors.New("not a process id")
	}
	*dst = n
	return nil
}
