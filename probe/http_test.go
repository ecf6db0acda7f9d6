package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The request is a plain GET of the URL's path and query, to its host,
// with the URL's credentials, asking for the connection to be closed.
func TestHTTPRequest(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		got <- strings.Join([]string{r.Method, r.URL.RequestURI(), r.Host, user, pass, r.Header.Get("Connection"), r.Proto}, " ")
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	if err := (HTTP{URL: "http://me:secret@" + host + "/health?deep=1"}).Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "GET /health?deep=1 " + host + " me secret close HTTP/1.1"; <-got != want {
		t.Errorf("the server saw something else than %q", want)
	}
}

// An https URL is checked over TLS, against the roots of the check's
// TLS configuration (the system's, outside tests).
func TestHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := HTTP{URL: srv.URL + "/health"}
	var fe *FailedError
	if err := c.Probe(context.Background()); !errors.As(err, &fe) {
		t.Fatalf("a certificate of no trusted root: err = %v, want a FailedError", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	old := tlsConfig
	tlsConfig = func(host string) *tls.Config { return &tls.Config{ServerName: host, RootCAs: roots} }
	defer func() { tlsConfig = old }()
	if err := c.Probe(context.Background()); err != nil {
		t.Fatalf("trusted: %v", err)
	}
}

// rawServer answers every connection with answer, whatever it is sent,
// and returns its URL.
func rawServer(t *testing.T, answer string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			_, _ = c.Write([]byte(answer))
			c.Close()
		}
	}()
	return "http://" + l.Addr().String() + "/"
}

// Informational answers are passed over; the final one counts, and its
// status is what a failure says.
func TestHTTPAnswers(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   string // "": passes; else in the error
	}{
		{"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", ""},
		{"HTTP/1.0 200 OK\r\n\r\nbody", ""},
		{"HTTP/1.1 200\r\n\r\n", ""},
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Oops\r\nX: y\r\n\r\n", "answered 500 Oops"},
		{"HTTP/1.1 301 Moved Permanently\r\nLocation: /else\r\n\r\n", "answered 301 Moved Permanently"},
		{"SSH-2.0-OpenSSH_9.6\r\n", errBadAnswer.Error()},
		{"HTTP/1.1 20x OK\r\n\r\n", errBadAnswer.Error()},
		{"HTTP/1.1 204 No Con", "unexpected EOF"},
		{"", "unexpected EOF"},
	} {
		err := (HTTP{URL: rawServer(t, c.answer)}).Probe(context.Background())
		var fe *FailedError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.answer, err)
		case c.want != "" && (!errors.As(err, &fe) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: err = %v, want a FailedError saying %q", c.answer, err, c.want)
		}
	}
}

// A server that accepts and never answers holds the check only until its
// context ends.
func TestHTTPContextEnds(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conns := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			conns <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	err = (HTTP{URL: "http://" + l.Addr().String() + "/"}).Probe(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the check took %v past a 100 ms context", took)
	}
	select {
	case c := <-conns:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Error("the check never connected")
	}
}
