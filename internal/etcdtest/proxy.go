//go:build linux

package etcdtest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy is the network between one host and the cluster: a loopback
// listener for each member that forwards to it. Cut partitions the host
// (its connections are dropped and new ones go unanswered), Restore
// heals it.
type Proxy struct {
	t      testing.TB
	lns    []net.Listener
	secure bool // the members serve TLS, which passes through

	mu       sync.Mutex
	cut      bool
	accepted int               // connections accepted, since the start
	conns    map[net.Conn]bool // open: both ends of every forwarded connection, and the held ones
	wg       sync.WaitGroup
}

// Proxy starts a proxy to the cluster's members, closed when the test
// ends.
func (c *Cluster) Proxy() *Proxy {
	c.t.Helper()
	p := &Proxy{t: c.t, conns: map[net.Conn]bool{}, secure: c.TLS != nil}
	for _, m := range c.Members {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.t.Fatal(err)
		}
		p.lns = append(p.lns, ln)
		target := m.ClientURL[strings.Index(m.ClientURL, "://")+len("://"):]
		p.wg.Go(func() { p.serve(ln, target) })
	}
	c.t.Cleanup(p.close)
	return p
}

// Endpoints are the proxy's client URLs, one for each member.
func (p *Proxy) Endpoints() []string {
	scheme := "http://"
	if p.secure {
		scheme = "https://"
	}
	out := make([]string, len(p.lns))
	for i, ln := range p.lns {
		out[i] = scheme + ln.Addr().String()
	}
	return out
}

// Cut drops every connection through the proxy, and holds new ones
// unanswered until Restore: as a partition does, nothing gets through
// and nothing says so at once.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.dropLocked()
}

// Restore lets connections through again; those held while cut are
// closed, so that their clients dial again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.dropLocked()
}

// Accepted is how many connections clients opened through the proxy.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

func (p *Proxy) dropLocked() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) close() {
	for _, ln := range p.lns {
		ln.Close()
	}
	p.mu.Lock()
	p.dropLocked()
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) serve(ln net.Listener, target string) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.accepted++
		p.conns[in] = true
		p.mu.Unlock()
		if cut {
			continue // held, unanswered, until Restore or the end
		}
		p.wg.Go(func() { p.forward(in, target) })
	}
}

func (p *Proxy) forward(in net.Conn, target string) {
	out, err := net.Dial("tcp", target)
	if err != nil {
		p.forget(in)
		in.Close()
		return
	}
	p.mu.Lock()
	if p.cut || !p.conns[in] {
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.conns[out] = true
	p.mu.Unlock()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	wg.Go(func() { pipe(out, in) })
	wg.Go(func() { pipe(in, out) })
	wg.Wait()
	p.forget(in)
	p.forget(out)
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
