//go:build unix

package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
)

// A paused server accepts nothing and refuses nothing: a request made
// meanwhile waits in the listener's backlog and is answered after
// Resume; an event stream ends with a handover event, on which the
// client reconnects and goes on from the next hello.
func TestPauseQueuesRequests(t *testing.T) {
	f := newFake()
	ts := serve(t, f)
	c := client.New(ts.path)
	ctx := testCtx(t)
	pull, stop := openEvents(t, c, ctx)
	defer stop()
	if ev, err, _ := pull(); err != nil || ev.Type != api.EventHello {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if err := ts.srv.Pause(ctx, true); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	type pulled struct {
		ev  api.Event
		err error
	}
	stream := make(chan pulled, 1)
	go func() {
		ev, err, _ := pull()
		stream <- pulled{ev, err}
	}()
	answered := make(chan error, 1)
	go func() {
		_, err := c.Status(ctx)
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a request was answered while paused: %v", err)
	case p := <-stream:
		t.Fatalf("the stream went on while paused: %+v, %v", p.ev, p.err)
	case <-time.After(200 * time.Millisecond):
	}
	ts.srv.Resume()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the request queued during the pause: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the queued request was never answered")
	}
	select {
	case p := <-stream:
		if p.err != nil || p.ev.Type != api.EventHello {
			t.Fatalf("the stream after the handover: %+v, %v; want a hello", p.ev, p.err)
		}
	case <-ctx.Done():
		t.Fatal("the stream did not go on after the handover")
	}
}

// Pause waits for the requests in progress; one that does not end in
// time makes it fail, and it is answered all the same after Resume.
func TestPauseWaitsForRequests(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	slow := &slowStart{fakeBackend: f, release: release, started: make(chan struct{}, 1)}
	ts := serve(t, slow)
	c := client.New(ts.path)
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Start(ctx, "a")
		done <- err
	}()
	<-slow.started
	pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := ts.srv.Pause(pctx, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pause with a request in progress: %v, want the deadline", err)
	}
	ts.srv.Resume()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the request in progress: %v", err)
	}
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
}

// slowStart holds every Start until release.
type slowStart struct {
	*fakeBackend
	release chan struct{}
	started chan struct{}
}

func (s *slowStart) Start(ctx context.Context, id string, noWait bool) (api.Agent, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-s.release
	return s.fakeBackend.Start(ctx, id, noWait)
}

// A stream that begins after a pause ended the streams (its connection
// accepted just before) says only where to go on: a handover event and
// no hello, which its successor's would repeat.
func TestStreamBegunInThePauseSaysOnlyHandover(t *testing.T) {
	ts := serve(t, newFake())
	for _, handover := range []bool{true, false} {
		closing := make(chan struct{})
		close(closing)
		ts.srv.handingOver.Store(handover)
		req := httptest.NewRequest(http.MethodGet, api.PathEvents, nil)
		req = req.WithContext(context.WithValue(req.Context(), closingKey{}, closing))
		rec := httptest.NewRecorder()
		ts.srv.events(rec, req)
		want := ""
		if handover {
			want = api.EventHandover
		}
		var got []string
		dec := json.NewDecoder(rec.Body)
		for {
			var ev api.Event
			if err := dec.Decode(&ev); err != nil {
				break
			}
			got = append(got, ev.Type)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("handing over %v: the stream said %q, want %q", handover, got, want)
		}
	}
	ts.srv.handingOver.Store(false)
}

// A pause does not wait for connections that have not sent a whole
// request: one that said nothing and one stopped halfway through its
// request are closed, while a request that was whole is answered.
func TestPauseDropsStalledConnections(t *testing.T) {
	for _, sent := range []string{"", "GET " + api.PathStatus + " HTTP/1.1\r\nHost: tether\r\n"} {
		f := newFake()
		ts := serve(t, f)
		conn, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte(sent)); err != nil {
			t.Fatal(err)
		}
		c := client.New(ts.path)
		if _, err := c.Status(testCtx(t)); err != nil { // the stalled connection is accepted by now
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		began := time.Now()
		err = ts.srv.Pause(ctx, true)
		cancel()
		if err != nil || time.Since(began) > time.Second {
			t.Errorf("sent %q: Pause: %v after %v, want it done at once", sent, err, time.Since(began))
		}
		ts.srv.Resume()
		if _, err := c.Status(testCtx(t)); err != nil {
			t.Errorf("sent %q: a request after the pause: %v", sent, err)
		}
	}
}
