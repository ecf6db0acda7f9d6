package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTP passes on a 2xx answer to a GET of URL. Redirects are not followed:
// a 3xx is an answer the check does not accept. No proxy is used, and the
// connection is closed after each answer: a probe every few seconds would
// otherwise hold a socket open to the agent for nothing.
//
// The check speaks HTTP/1.1 itself, over package net and, for https,
// crypto/tls, and reads no more than the status line and the headers: the
// guardian runs it, and net/http would cost every guardian its package
// initializers at each start.
type HTTP struct{ URL string }

func (h HTTP) String() string { return "http " + h.URL }

// Probe implements Check.
func (h HTTP) Probe(ctx context.Context) error {
	code, status, err := httpGet(ctx, h.URL)
	if err != nil {
		return failed(h, err)
	}
	if code < 200 || code > 299 {
		return failed(h, fmt.Errorf("answered %s", status))
	}
	return nil
}

// httpHeadMax bounds what is read of an answer: its status line and
// headers, those of informational (1xx) answers before it included.
const httpHeadMax = 64 << 10

// tlsConfig is the TLS configuration of an https check of host: the
// system's roots. Tests replace it.
var tlsConfig = func(host string) *tls.Config { return &tls.Config{ServerName: host} }

// errBadAnswer is an answer that is not HTTP/1.x.
var errBadAnswer = errors.New("not an HTTP/1.x answer")

// httpGet sends a GET of rawURL and returns the code of the final
// answer and its status ("503 Service Unavailable").
func httpGet(ctx context.Context, rawURL string) (code int, status string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, "", err
	}
	port := u.Port()
	switch u.Scheme {
	case "http", "https":
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
	default:
		return 0, "", fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return 0, "", errors.New("no host in the URL")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	// The context bounds the whole exchange, not only the dial.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
	}()
	if u.Scheme == "https" {
		tc := tls.Client(conn, tlsConfig(u.Hostname()))
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, "", err
		}
		conn = tc
	}
	if _, err := io.WriteString(conn, httpRequest(u)); err != nil {
		return 0, "", err
	}
	r := bufio.NewReader(io.LimitReader(conn, httpHeadMax))
	for {
		if code, status, err = readStatus(r); err != nil {
			return 0, "", err
		}
		// An informational answer (100 Continue, 103 Early Hints)
		// comes before the one that counts; 101 is final.
		if code >= 200 || code == 101 {
			return code, status, nil
		}
		if err := skipHeaders(r); err != nil {
			return 0, "", err
		}
	}
}

// httpRequest is the GET of u, asking the server to close the
// connection after its answer.
func httpRequest(u *url.URL) string {
	var b strings.Builder
	b.WriteString("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	b.WriteString("User-Agent: tether-probe\r\nConnection: close\r\n")
	if u.User != nil {
		pass, _ := u.User.Password()
		b.WriteString("Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass)) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// readStatus reads a status line, "HTTP/1.1 503 Service Unavailable", and
// returns its code and what follows the version.
func readStatus(r *bufio.Reader) (int, string, error) {
	line, err := readLine(r)
	if err != nil {
		return 0, "", err
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(status) < 3 {
		return 0, "", fmt.Errorf("%w: %.80q", errBadAnswer, line)
	}
	code, err := strconv.Atoi(status[:3])
	if err != nil || code < 100 || (len(status) > 3 && status[3] != ' ') {
		return 0, "", fmt.Errorf("%w: %.80q", errBadAnswer, line)
	}
	return code, status, nil
}

// skipHeaders reads up to the empty line that ends an answer's headers.
func skipHeaders(r *bufio.Reader) error {
	for {
		line, err := readLine(r)
		if err != nil || line == "" {
			return err
		}
	}
}

// readLine reads one line of the head, without its CRLF (or LF). The
// end of the stream before the line's end is io.ErrUnexpectedEOF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
