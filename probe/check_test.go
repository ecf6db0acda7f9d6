package probe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestHTTP(t *testing.T) {
	var code atomic.Int32
	code.Store(503)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(code.Load()))
	}))
	defer srv.Close()
	c := HTTP{URL: srv.URL + "/health"}
	var fe *FailedError
	if err := c.Probe(context.Background()); !errors.As(err, &fe) {
		t.Fatalf("503: err = %v, want a FailedError", err)
	}
	code.Store(302)
	if err := c.Probe(context.Background()); err == nil {
		t.Fatal("302 passed; a redirect is not a 2xx")
	}
	code.Store(204)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatalf("204: %v", err)
	}
}

func TestTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := (TCP{Addr: addr}).Probe(context.Background()); err != nil {
		t.Fatalf("listening: %v", err)
	}
	l.Close()
	if err := (TCP{Addr: addr}).Probe(context.Background()); err == nil {
		t.Fatal("closed listener passed")
	}
}

func TestExec(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the commands below are Unix ones; Exec itself is portable")
	}
	if err := (Exec{Argv: []string{"true"}}).Probe(context.Background()); err != nil {
		t.Fatalf("true: %v", err)
	}
	err := (Exec{Argv: []string{"sh", "-c", "echo not yet >&2; exit 3"}}).Probe(context.Background())
	var fe *FailedError
	if !errors.As(err, &fe) || !regexp.MustCompile(`exit status 3: not yet`).MatchString(err.Error()) {
		t.Fatalf("err = %v, want the exit status and the output", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := (Exec{Argv: []string{"sleep", "10"}}).Probe(ctx); err == nil {
		t.Fatal("a check past its context passed")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a check past its context took %v", d)
	}
}

// flaky fails its first n runs.
type flaky struct {
	n    int
	runs int
}

func (f *flaky) String() string { return "flaky" }
func (f *flaky) Probe(context.Context) error {
	f.runs++
	if f.runs <= f.n {
		return errors.New("not yet")
	}
	return nil
}

func TestWait(t *testing.T) {
	f := &flaky{n: 2}
	if err := Wait(context.Background(), f, time.Millisecond, 0); err != nil || f.runs != 3 {
		t.Fatalf("Wait = %v after %d runs, want nil after 3", err, f.runs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := Wait(ctx, &flaky{n: 1 << 30}, time.Millisecond, 0)
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.Last == nil {
		t.Fatalf("Wait past its deadline = %v, want a TimeoutError with the last failure", err)
	}
}

// sequence answers from a list, then passes.
type sequence struct{ errs chan error }

func (s sequence) String() string { return "sequence" }
func (s sequence) Probe(context.Context) error {
	select {
	case err := <-s.errs:
		return err
	default:
		return nil
	}
}

func TestMonitorCountsFailuresInARow(t *testing.T) {
	bad := errors.New("bad")
	s := sequence{errs: make(chan error, 8)}
	for _, e := range []error{bad, bad, nil, bad, bad, bad} {
		s.errs <- e
	}
	got := make(chan error, 1)
	m := &Monitor{Check: s, Every: time.Millisecond, Timeout: time.Second, Failures: 3,
		Unhealthy: func(last error) { got <- last }}
	done := make(chan struct{})
	go func() { m.Run(context.Background()); close(done) }()
	select {
	case err := <-got:
		if !errors.Is(err, bad) {
			t.Fatalf("Unhealthy(%v)", err)
		}
		if len(s.errs) != 0 {
			t.Fatalf("Unhealthy after %d of 6 runs; the pass in between must reset the count", 6-len(s.errs))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Unhealthy never called")
	}
	<-done
}
