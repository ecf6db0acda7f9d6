//go:build linux

// Package etcdtest runs a real etcd cluster for tests: members of the
// system's etcd (Debian's etcd-server) on free loopback ports in the
// test's temporary directory, which a test stops and starts again (a
// leader killed, quorum lost and regained), and TCP proxies that stand
// for the network between a host and the cluster, which a test cuts and
// restores (a partition). Everything is stopped when the test ends,
// whether it passed or not. Only tests import it.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/lease/gateway"
)

// Binary is the etcd server the tests run.
const Binary = "/usr/bin/etcd"

// Timing of the members: etcd's defaults, which a loaded machine keeps
// up with. A lease's ttl cannot be shorter than 1.5 election timeouts.
const (
	Heartbeat = 100 * time.Millisecond
	Election  = time.Second
)

// startWithin bounds the wait for a cluster, or a member started again,
// to serve; stopWithin the wait for a member to exit after SIGTERM
// before it is killed.
const (
	startWithin = 30 * time.Second
	stopWithin  = 5 * time.Second
)

// Cluster is a running etcd cluster.
type Cluster struct {
	t       testing.TB
	Members []*Member
	// TLS, for a cluster of StartTLS, are the files a client presents
	// and trusts; nil for a plain one.
	TLS *TLSFiles
}

// Member is one etcd of a Cluster.
type Member struct {
	c         *Cluster
	Name      string
	ClientURL string
	PeerURL   string
	dir       string
	initial   string // the --initial-cluster flag's value

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
}

// Skip skips t when etcd is not installed, and fails it instead under
// CI=true, where a skip would prove nothing.
func Skip(t testing.TB) {
	t.Helper()
	skipIfMissing(t, Binary)
}

func skipIfMissing(t testing.TB, binary string) {
	t.Helper()
	if _, err := os.Stat(binary); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: the tests need etcd at %s (Debian's etcd-server): %v", binary, err)
		}
		t.Skipf("needs etcd at %s (Debian's etcd-server)", binary)
	}
}

// Start starts a cluster of n members and returns once it serves: it has
// a leader and every member answers. It skips t without etcd (see Skip).
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, false)
}

// StartTLS is Start, but the members serve clients over TLS only, and
// only clients with a certificate of the cluster's CA: c.TLS names the
// files of one.
func StartTLS(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, true)
}

func start(t testing.TB, n int, secure bool) *Cluster {
	t.Helper()
	Skip(t)
	c := &Cluster{t: t}
	dir := t.TempDir()
	scheme := "http"
	if secure {
		c.TLS = writeTLS(t, filepath.Join(dir, "tls"))
		scheme = "https"
	}
	ports := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		m := &Member{
			c:         c,
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	t.Cleanup(c.stop)
	for _, m := range c.Members {
		m.initial = strings.Join(initial, ",")
		if err := m.start("new"); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitServing(startWithin)
	return c
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.ClientURL
	}
	return out
}

// Client is a client of the whole cluster, closed when the test ends.
func (c *Cluster) Client() *gateway.Client {
	c.t.Helper()
	cli, err := c.client(c.Endpoints())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cli.Close)
	return cli
}

// client is a client of endpoints, with the cluster's TLS if it has one.
func (c *Cluster) client(endpoints []string) (*gateway.Client, error) {
	if c.TLS == nil {
		return gateway.New(endpoints, nil)
	}
	t, err := c.TLS.Config()
	if err != nil {
		return nil, err
	}
	return gateway.New(endpoints, t)
}

// WaitServing waits until every running member answers and they agree on
// a leader, and fails the test if they do not within.
func (c *Cluster) WaitServing(within time.Duration) {
	c.t.Helper()
	var last error
	if !testproc.UntilEvery(within, 50*time.Millisecond, func() bool {
		_, last = c.leader()
		return last == nil
	}) {
		c.t.Fatalf("the etcd cluster does not serve within %v: %v", within, last)
	}
}

// Leader returns the member that leads, waiting for one.
func (c *Cluster) Leader() *Member {
	c.t.Helper()
	var m *Member
	var err error
	if !testproc.UntilEvery(startWithin, 50*time.Millisecond, func() bool {
		m, err = c.leader()
		return err == nil
	}) {
		c.t.Fatalf("no etcd leader within %v: %v", startWithin, err)
	}
	return m
}

// leader asks every running member for the leader, which they must agree
// on.
func (c *Cluster) leader() (*Member, error) {
	var lead uint64
	byID := map[uint64]*Member{}
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		id, l, err := m.status()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		if l == 0 || lead != 0 && l != lead {
			return nil, fmt.Errorf("%s: no leader agreed on (%x, %x)", m.Name, l, lead)
		}
		lead, byID[id] = l, m
	}
	if m := byID[lead]; m != nil {
		return m, nil
	}
	return nil, errors.New("the leader is none of the running members")
}

// status returns the member's id and the leader's it knows, asking it
// alone.
func (m *Member) status() (id, leader uint64, err error) {
	cli, err := m.c.client([]string{m.ClientURL})
	if err != nil {
		return 0, 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := cli.Status(ctx)
	if err != nil {
		return 0, 0, err
	}
	return st.Header.MemberID, st.Leader, nil
}

// start starts the member's process; state is "new" for the cluster's
// first start, "existing" after.
func (m *Member) start(state string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("%s is running", m.Name)
	}
	log, err := os.OpenFile(m.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(Binary,
		"--name", m.Name,
		"--data-dir", m.dir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", m.initial,
		"--initial-cluster-state", state,
		"--initial-cluster-token", "tether-test",
		"--heartbeat-interval", fmt.Sprint(Heartbeat.Milliseconds()),
		"--election-timeout", fmt.Sprint(Election.Milliseconds()),
		"--logger", "zap", "--log-outputs", "stderr",
	)
	if t := m.c.TLS; t != nil {
		cmd.Args = append(cmd.Args, "--cert-file", t.serverCert, "--key-file", t.serverKey, "--trusted-ca-file", t.CA, "--client-cert-auth")
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Should the test binary die, so does etcd.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting etcd %s: %w", m.Name, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(m.done)
	return nil
}

// Running reports whether the member's process runs.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Kill kills the member at once (SIGKILL), as a crash would, and waits
// for it to be gone.
func (m *Member) Kill() { m.signal(syscall.SIGKILL) }

// Stop stops the member politely (SIGTERM), killing it if it has not
// exited within a few seconds, and waits for it to be gone.
func (m *Member) Stop() { m.signal(syscall.SIGTERM) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return
	case <-time.After(stopWithin):
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts a stopped member again, with its data, and waits until
// the cluster serves.
func (m *Member) Restart() {
	m.c.t.Helper()
	if err := m.start("existing"); err != nil {
		m.c.t.Fatal(err)
	}
	m.c.WaitServing(startWithin)
}

// Log is what the member wrote, for a failing test's message.
func (m *Member) Log() string {
	b, _ := os.ReadFile(m.dir + ".log")
	return string(b)
}

// stop stops every member, in parallel (each may take a moment), and
// tells the log of each on failure.
func (c *Cluster) stop() {
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Go(m.Stop)
	}
	wg.Wait()
	if c.t.Failed() {
		for _, m := range c.Members {
			log := m.Log()
			if len(log) > 4000 {
				log = "..." + log[len(log)-4000:]
			}
			c.t.Logf("etcd %s's log:\n%s", m.Name, log)
		}
	}
}

// freePorts returns n loopback ports that were free a moment ago. The
// listeners are held until all are found, so that no two are the same.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var (
		ports []int
		lns   []net.Listener
	)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
