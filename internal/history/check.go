package history

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Execution is one process of an agent, from its Start to its end.
type Execution struct {
	Identity string
	Host     string
	Proc     Proc
	Fence    int64
	// Start and End are monotonic times in nanoseconds; End is Running
	// when the history has no end for it.
	Start, End int64
	// Seen says that End is a watcher's Gone, an upper bound, and not
	// the agent's own End.
	Seen bool
}

// Running is the End of an execution that never ended in the history.
const Running = math.MaxInt64

func (e Execution) String() string {
	end := "still running"
	if e.End != Running {
		end = "to " + clock(e.End)
		if e.Seen {
			end += " (seen gone)"
		}
	}
	return fmt.Sprintf("pid %d on %s (fence %d) from %s %s", e.Proc.PID, e.Host, e.Fence, clock(e.Start), end)
}

// clock writes a monotonic time as seconds.
func clock(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// ErrInconsistent is the cause of a history that cannot be what happened:
// an end without a start, a process started twice, an end before its
// start, a process seen gone before it said it ended.
var ErrInconsistent = errors.New("inconsistent history")

// Executions pairs the starts and ends of recs, in any order, into one
// execution per process, sorted by start.
func Executions(recs []Record) ([]Execution, error) {
	byProc := map[Proc]*Execution{}
	for _, r := range recs {
		if r.Kind != Start {
			continue
		}
		if e, dup := byProc[r.Proc()]; dup {
			return nil, fmt.Errorf("%w: pid %d on %s started twice (%s and %s)", ErrInconsistent, r.PID, r.Host, clock(e.Start), clock(r.At))
		}
		byProc[r.Proc()] = &Execution{Identity: r.Identity, Host: r.Host, Proc: r.Proc(), Fence: r.Fence, Start: r.At, End: Running}
	}
	gone := map[Proc]int64{}
	for _, r := range recs {
		if r.Kind == Start {
			continue
		}
		e := byProc[r.Proc()]
		if e == nil {
			return nil, fmt.Errorf("%w: %s of pid %d on %s at %s, which never started", ErrInconsistent, r.Kind, r.PID, r.Host, clock(r.At))
		}
		if r.At < e.Start {
			return nil, fmt.Errorf("%w: %s of pid %d on %s at %s, before its start at %s", ErrInconsistent, r.Kind, r.PID, r.Host, clock(r.At), clock(e.Start))
		}
		switch r.Kind {
		case End:
			if e.End != Running && !e.Seen {
				return nil, fmt.Errorf("%w: pid %d on %s ended twice", ErrInconsistent, r.PID, r.Host)
			}
			e.End, e.Seen = r.At, false
		case Gone:
			if _, dup := gone[r.Proc()]; dup {
				return nil, fmt.Errorf("%w: pid %d on %s seen gone twice", ErrInconsistent, r.PID, r.Host)
			}
			gone[r.Proc()] = r.At
			if e.End == Running {
				e.End, e.Seen = r.At, true
			}
		}
	}
	out := make([]Execution, 0, len(byProc))
	for _, e := range byProc {
		if g, ok := gone[e.Proc]; ok && !e.Seen && g < e.End {
			return nil, fmt.Errorf("%w: pid %d on %s seen gone at %s, before it said it ended at %s", ErrInconsistent, e.Proc.PID, e.Host, clock(g), clock(e.End))
		}
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Execution) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Proc.PID, b.Proc.PID))
	})
	return out, nil
}

// Overlap is two executions of one identity that ran at once: Second
// started before First ended.
type Overlap struct {
	Identity      string
	First, Second Execution
}

// For is how long they ran together.
func (o *Overlap) For() time.Duration {
	return time.Duration(min(o.First.End, o.Second.End) - o.Second.Start)
}

func (o *Overlap) Error() string {
	d := "until the end of the history"
	if o.First.End != Running || o.Second.End != Running {
		d = "for " + o.For().String()
	}
	return fmt.Sprintf("identity %q ran twice at once %s: %s, and %s", o.Identity, d, o.First, o.Second)
}

// Fenced reports whether the later holder's fencing token is higher: a
// server that remembers the highest token it saw refuses the earlier
// one from then on.
func (o *Overlap) Fenced() bool { return o.Second.Fence > o.First.Fence }

// FenceOrder is two executions of one identity, one after the other,
// whose tokens do not say so: the later one's is lower, or the same on
// another host, so that a server could not tell the new holder from the
// old.
type FenceOrder struct {
	Identity       string
	Earlier, Later Execution
}

func (f *FenceOrder) Error() string {
	return fmt.Sprintf("identity %q: the fencing token does not grow from %s to %s", f.Identity, f.Earlier, f.Later)
}

// MissingFence is an execution that was given no fencing token where
// one was due.
type MissingFence struct{ Execution Execution }

func (m *MissingFence) Error() string {
	return fmt.Sprintf("identity %q: %s was given no fencing token", m.Execution.Identity, m.Execution)
}

// Options are what Check allows and demands.
type Options struct {
	// AllowFenced lets an overlap pass when the later holder's token is
	// higher: the case of a holder paused longer than the ttl, where
	// only the token can tell the old holder from the new.
	AllowFenced bool
	// RequireFence fails an execution without a token.
	RequireFence bool
}

// Report is what Check found.
type Report struct {
	Executions []Execution
	// Overlaps are every overlap, allowed or not.
	Overlaps []*Overlap
	// Violations are what fails the history: *Overlap, *FenceOrder,
	// *MissingFence.
	Violations []error
}

// Err is the violations joined, or nil.
func (r *Report) Err() error { return errors.Join(r.Violations...) }

// Check reads recs and reports every overlap of two executions of one
// identity, and every fencing token that does not grow from one holder
// to the next (by start): it may stay the same for a new process of the
// same holder on the same host, and must grow when the host changes.
func Check(recs []Record, opts Options) (*Report, error) {
	execs, err := Executions(recs)
	if err != nil {
		return nil, err
	}
	r := &Report{Executions: execs}
	byIdentity := map[string][]Execution{}
	for _, e := range execs {
		byIdentity[e.Identity] = append(byIdentity[e.Identity], e)
	}
	for _, id := range slices.Sorted(maps.Keys(byIdentity)) {
		list := byIdentity[id] // sorted by start
		for i, a := range list {
			if opts.RequireFence && a.Fence == 0 {
				r.Violations = append(r.Violations, &MissingFence{a})
			}
			for _, b := range list[i+1:] {
				if b.Start >= a.End {
					continue
				}
				o := &Overlap{Identity: id, First: a, Second: b}
				r.Overlaps = append(r.Overlaps, o)
				if !opts.AllowFenced || !o.Fenced() {
					r.Violations = append(r.Violations, o)
				}
			}
			if i == 0 {
				continue
			}
			prev := list[i-1]
			if a.Fence == 0 || prev.Fence == 0 {
				continue
			}
			if a.Fence < prev.Fence || a.Fence == prev.Fence && a.Host != prev.Host {
				r.Violations = append(r.Violations, &FenceOrder{Identity: id, Earlier: prev, Later: a})
			}
		}
	}
	return r, nil
}
