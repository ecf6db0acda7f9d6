//go:build unix

package upgrade

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testdir"
)

// standInWorld is a listening socket, a stand-in on a control socket
// (runStandIn in a goroutine, as the check runs it) and the service's
// end of that socket.
type standInWorld struct {
	path string
	ln   *net.UnixListener
	lk   *link
	done chan int // runStandIn's exit code
}

func newStandInWorld(t *testing.T) *standInWorld {
	t.Helper()
	w := &standInWorld{path: filepath.Join(testdir.Temp(t), "api.sock"), done: make(chan int, 1)}
	l, err := net.Listen("unix", w.path)
	if err != nil {
		t.Fatal(err)
	}
	w.ln = l.(*net.UnixListener)
	t.Cleanup(func() { w.ln.Close() })
	lk, theirs, err := newLink()
	if err != nil {
		t.Fatal(err)
	}
	w.lk = lk
	t.Cleanup(lk.close)
	c, err := net.FileConn(theirs)
	theirs.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer c.Close()
		w.done <- runStandIn(c.(*net.UnixConn), serveBody)
	}()
	return w
}

// serveBody is a StatusServer that answers every request with the body,
// as the local API answers a status.
func serveBody(l net.Listener, body []byte) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(body)
	})}
	srv.SetKeepAlivesEnabled(false)
	go func() { _ = srv.Serve(l) }()
}

// dial connects to the socket and sends what it is given, if anything.
func (w *standInWorld) dial(t *testing.T, send string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", w.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if send != "" {
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// answer reads an answer's body off c.
func answer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const statusRequest = "GET " + api.PathStatus + " HTTP/1.1\r\nHost: " + api.Host + "\r\n\r\n"

// The stand-in answers a plain status from what it was sent, and holds
// every other connection with its request unread: an action, one that
// has said nothing yet, one whose first line is not whole, a status with
// usage. Recalled, it hands them back, and whoever serves them next
// reads each request whole; the stand-in then exits.
func TestStandInAnswersStatusAndHandsBackTheRest(t *testing.T) {
	w := newStandInWorld(t)
	if err := w.lk.serve(w.ln, api.Status{Profile: "stood-in"}); err != nil {
		t.Fatal(err)
	}
	stop := "POST " + api.PathStop + "?id=x HTTP/1.1\r\nHost: " + api.Host + "\r\nContent-Length: 0\r\n\r\n"
	usage := "GET " + api.PathStatus + "?" + api.QueryUsage + "=1 HTTP/1.1\r\nHost: " + api.Host + "\r\n\r\n"
	half := statusRequest[:7]
	held := map[string]net.Conn{
		"stop":  w.dial(t, stop),
		"usage": w.dial(t, usage),
		"half":  w.dial(t, half),
		"idle":  w.dial(t, ""),
	}
	// Accepted in order: once a later status is answered, the stand-in
	// has accepted every connection before it.
	if got := answer(t, w.dial(t, statusRequest)); !strings.Contains(got, `"profile":"stood-in"`) {
		t.Fatalf("the stand-in answered a status with %q", got)
	}
	back, err := w.lk.recall()
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(held) {
		t.Errorf("%d connections handed back, want %d", len(back), len(held))
	}
	select {
	case code := <-w.done:
		if code != 0 {
			t.Errorf("the stand-in exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stand-in did not exit once recalled")
	}
	// The successor: what was handed back first, then the listener.
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(rw, "successor: "+r.Method+" "+r.URL.String())
	})}
	srv.SetKeepAlivesEnabled(false)
	go func() { _ = srv.Serve(&heldFirst{held: back, Listener: w.ln}) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	if _, err := io.WriteString(held["half"], statusRequest[7:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(held["idle"], statusRequest); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"stop":  "successor: POST " + api.PathStop + "?id=x",
		"usage": "successor: GET " + api.PathStatus + "?" + api.QueryUsage + "=1",
		"half":  "successor: GET " + api.PathStatus,
		"idle":  "successor: GET " + api.PathStatus,
	} {
		if got := answer(t, held[name]); got != want {
			t.Errorf("%s: answered %q, want %q", name, got, want)
		}
	}
	if got := answer(t, w.dial(t, statusRequest)); !strings.HasPrefix(got, "successor:") {
		t.Errorf("a status after the recall was answered %q, not by the successor", got)
	}
}

// A stand-in whose service is gone (its control socket closed) stops
// accepting, closes what it held (nobody is left to answer it) and
// exits; the listening socket is not its to close.
func TestStandInEndsWithItsService(t *testing.T) {
	w := newStandInWorld(t)
	if err := w.lk.serve(w.ln, api.Status{Profile: "stood-in"}); err != nil {
		t.Fatal(err)
	}
	stop := w.dial(t, "POST "+api.PathStop+"?id=x HTTP/1.1\r\nHost: "+api.Host+"\r\nContent-Length: 0\r\n\r\n")
	answer(t, w.dial(t, statusRequest))
	w.lk.close()
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stand-in did not exit when its service went")
	}
	_ = stop.SetReadDeadline(time.Now().Add(10 * time.Second))
	// Its request unread, the close is a reset.
	if n, err := stop.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a held connection, its stand-in gone: read %d, %v; want it closed", n, err)
	}
	c := w.dial(t, "")
	accepted, err := w.ln.Accept()
	if err != nil {
		t.Fatalf("the listening socket after the stand-in: %v", err)
	}
	accepted.Close()
	c.Close()
}

// A stand-in that is never told to serve (the handover did not happen)
// exits when its control socket closes.
func TestStandInNeverServing(t *testing.T) {
	w := newStandInWorld(t)
	w.lk.close()
	select {
	case code := <-w.done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stand-in did not exit")
	}
}

// heldFirst accepts the held connections, then from the listener.
type heldFirst struct {
	net.Listener
	mu   sync.Mutex
	held []net.Conn
}

func (h *heldFirst) Accept() (net.Conn, error) {
	h.mu.Lock()
	if len(h.held) > 0 {
		c := h.held[0]
		h.held = h.held[1:]
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()
	return h.Listener.Accept()
}
