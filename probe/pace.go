package probe

import (
	"context"
	"time"
)

// Wait runs c at once and then every period until it passes or ctx ends.
// Each run gets at most timeout (zero: the period). It returns nil once c
// passed, and otherwise ctx's error joined with the last failure, so the
// caller can say both that time ran out and what the check last saw.
func Wait(ctx context.Context, c Check, period, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = period
	}
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return &TimeoutError{Err: ctx.Err(), Last: last}
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		last = c.Probe(pctx)
		cancel()
		if last == nil {
			return nil
		}
		t.Reset(period)
	}
}

// TimeoutError is a Wait whose context ended before the check passed.
type TimeoutError struct {
	Err  error // the context's error
	Last error // the last failure of the check, if it ran
}

func (e *TimeoutError) Error() string {
	if e.Last == nil {
		return e.Err.Error()
	}
	return e.Err.Error() + "; last: " + e.Last.Error()
}

// Unwrap returns both the context's error and the check's last failure.
func (e *TimeoutError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Last}
}

// Monitor runs a health check every Every, each run bounded by Timeout,
// and calls Unhealthy once Failures runs in a row have failed. A pass in
// between starts the count again.
type Monitor struct {
	Check    Check
	Every    time.Duration
	Timeout  time.Duration
	Failures int
	// Unhealthy receives the last failure; Run returns after calling it.
	Unhealthy func(last error)
}

// Run paces the check until ctx ends or Unhealthy was called. The first
// run comes one period after Run is called: the agent was just found
// ready.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.Every)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, m.Timeout)
		err := m.Check.Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			continue
		}
		if failures++; failures >= max(m.Failures, 1) {
			m.Unhealthy(err)
			return
		}
	}
}
