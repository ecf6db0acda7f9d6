package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/lease"
)

// leaseTTL is the tests' ttl: the shortest a 1 s stop_timeout allows.
const leaseTTL = 4 * time.Second

// leaseHost is one machine of a test: a service with its own state,
// lock directory and host name, reaching etcd through its own proxy.
type leaseHost struct {
	name  string
	w     *world
	proxy *etcdtest.Proxy
	fence string // the agents' fence directory
	c     *Controller
}

// newLeaseHost writes the host's config: agent "a" of the identity
// shared@relay, held in etcd under prefix.
func newLeaseHost(t *testing.T, cl *etcdtest.Cluster, name, prefix string) *leaseHost {
	t.Helper()
	h := &leaseHost{name: name, w: newWorld(t, "default", nil), proxy: cl.Proxy()}
	h.fence = filepath.Join(h.w.dir, "fence")
	if err := os.Mkdir(h.fence, 0o700); err != nil {
		t.Fatal(err)
	}
	eps := `"` + strings.Join(h.proxy.Endpoints(), `", "`) + `"`
	body := fmt.Sprintf(`lease:
  etcd: {endpoints: [%s]}
  ttl: %v
  host: %s
  prefix: %s
agents:
  - id: a
    identity: shared@relay
    command: [%q, agent, fence, %q]
    stop_timeout: 1s
`, eps, leaseTTL, name, prefix, h.w.exe, h.fence)
	if err := os.WriteFile(h.w.paths.Config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *leaseHost) start(t *testing.T) {
	t.Helper()
	h.c = h.w.controller(Options{})
}

// fenceOf is the TETHER_FENCE the agent of pid was started with.
func (h *leaseHost) fenceOf(t *testing.T, pid int) int64 {
	t.Helper()
	var b []byte
	if !testproc.Until(5*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(filepath.Join(h.fence, strconv.Itoa(pid)))
		return err == nil
	}) {
		t.Fatalf("host %s: agent pid %d wrote no fence", h.name, pid)
	}
	f, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || f <= 0 {
		t.Fatalf("host %s: TETHER_FENCE %q is not a positive decimal", h.name, b)
	}
	return f
}

func leasePrefix(t *testing.T) string { return "/" + strings.ReplaceAll(t.Name(), "/", "_") }

// Two hosts share an identity: one runs it, the other waits in
// held_elsewhere naming the holder, and a start there is contention
// (exit 4). When the holder stops, the other starts by itself, woken by
// the watch, with a higher fencing token.
func TestLeaseOneHostAtATime(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	prefix := leasePrefix(t)
	laptop, vps := newLeaseHost(t, cl, "laptop", prefix), newLeaseHost(t, cl, "vps", prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	vps.start(t)
	if _, err := vps.c.Start(ctx, "a", false); err != nil {
		t.Fatalf("vps: %v", err)
	}
	first := waitState(t, vps.c, "a", api.StateRunning)
	fence1 := vps.fenceOf(t, first.PID)

	laptop.start(t)
	_, err := laptop.c.Start(ctx, "a", false)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeContention {
		t.Fatalf("laptop's start: %v, want code %s (exit 4)", err, api.CodeContention)
	}
	row := waitState(t, laptop.c, "a", api.StateHeldElsewhere)
	if !strings.HasPrefix(row.Status, "held by vps (profile default) since ") || row.Error == nil || row.Error.Code != api.CodeContention {
		t.Fatalf("laptop's row: status %q, error %+v", row.Status, row.Error)
	}

	if _, err := vps.c.Stop(ctx, "a"); err != nil {
		t.Fatalf("vps: stop: %v", err)
	}
	second := waitState(t, laptop.c, "a", api.StateRunning)
	if fence2 := laptop.fenceOf(t, second.PID); fence2 <= fence1 {
		t.Fatalf("the next holder's TETHER_FENCE %d is not above the first's %d", fence2, fence1)
	}
	// And now the vps waits.
	if _, err := vps.c.Start(ctx, "a", false); err == nil {
		t.Fatal("vps started an identity the laptop holds")
	}
	waitState(t, vps.c, "a", api.StateHeldElsewhere)
}

// A start that fails here after it asked etcd for the identity (its
// env_file gone since the config was read) lets the identity go in
// etcd: the other host starts it at once, though the failed host's
// service runs on and renews its lease.
func TestLeaseFailedStartLetsGo(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	prefix := leasePrefix(t)
	laptop, vps := newLeaseHost(t, cl, "laptop", prefix), newLeaseHost(t, cl, "vps", prefix)
	envFile := filepath.Join(laptop.w.dir, "agent.env")
	if err := os.WriteFile(envFile, []byte("X=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(laptop.w.paths.Config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "    env_file: %q\n", envFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	laptop.start(t)
	if err := os.Remove(envFile); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := laptop.c.Start(ctx, "a", false); err == nil {
			t.Fatal("laptop: an agent whose env_file is gone started")
		}
	}
	vps.start(t)
	if _, err := vps.c.Start(ctx, "a", false); err != nil {
		t.Fatalf("vps, after the laptop's failed starts: %v", err)
	}
	waitState(t, vps.c, "a", api.StateRunning)
}

// A holder cut off from etcd has its whole tree dead before its lease
// can expire; only then does the other host start it.
func TestLeasePartitionStopsHolder(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	prefix := leasePrefix(t)
	laptop, vps := newLeaseHost(t, cl, "laptop", prefix), newLeaseHost(t, cl, "vps", prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vps.start(t)
	if _, err := vps.c.Start(ctx, "a", false); err != nil {
		t.Fatalf("vps: %v", err)
	}
	first := waitState(t, vps.c, "a", api.StateRunning)
	fence1 := vps.fenceOf(t, first.PID)
	laptop.start(t)
	if _, err := laptop.c.Start(ctx, "a", false); err == nil {
		t.Fatal("laptop started an identity the vps holds")
	}
	waitState(t, laptop.c, "a", api.StateHeldElsewhere)

	// The key's deletion, as etcd sees it: the vps's lease expired.
	key := lease.Key(prefix, "shared@relay")
	watch := etcdtest.Watch(ctx, cl.Client(), key, false)
	cut := time.Now()
	vps.proxy.Cut()
	dead := make(chan time.Time, 1)
	go func() {
		testproc.UntilEvery(3*leaseTTL, time.Millisecond, func() bool { return syscall.Kill(first.PID, 0) != nil })
		dead <- time.Now()
	}()
	var expired time.Time
	for ev := range watch {
		if ev.Deleted() {
			expired = time.Now()
			break
		}
	}
	if expired.IsZero() {
		t.Fatal("the watch ended without the key's expiry")
	}
	var died time.Time
	select {
	case died = <-dead:
	case <-time.After(3 * leaseTTL):
		t.Fatal("the cut-off holder's agent never died")
	}
	if !died.Before(expired) {
		t.Fatalf("the cut-off holder's agent died %v after its lease expired", died.Sub(expired))
	}
	t.Logf("cut at 0, tree dead at %v, lease expired at %v", died.Sub(cut), expired.Sub(cut))
	second := waitState(t, laptop.c, "a", api.StateRunning)
	if fence2 := laptop.fenceOf(t, second.PID); fence2 <= fence1 {
		t.Fatalf("the next holder's TETHER_FENCE %d is not above the first's %d", fence2, fence1)
	}
	// The cut-off host says why its agent stopped, and waits.
	row := waitState(t, vps.c, "a", api.StateBackoff, api.StateHeldElsewhere)
	if row.Error == nil || (row.Error.Code != api.CodeLease && row.Error.Code != api.CodeContention) {
		t.Fatalf("vps's row after the cut: %+v", row)
	}
	vps.proxy.Restore()
	// Restored, it waits for the laptop; it runs only if the laptop let
	// go meanwhile (a loaded machine can delay the laptop's renewals).
	row = waitState(t, vps.c, "a", api.StateHeldElsewhere, api.StateRunning)
	if row.State == api.StateRunning {
		if l := laptop.c.row("a"); l.State == api.StateRunning || l.State == api.StateStarting {
			t.Fatalf("both hosts run the identity: vps %+v, laptop %+v", row, l)
		}
	}
}

// Without a lease section no etcd code runs: no goroutine of the lease
// client, while an agent runs. The same check finds them with one.
func TestNoLeaseNoEtcd(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
`)
	// What the package's other tests closed goes first.
	if !testproc.Until(10*time.Second, func() bool { return etcdGoroutines() == "" }) {
		t.Fatalf("etcd clients left running by earlier tests:\n%s", etcdGoroutines())
	}
	c := w.controller(Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Start(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if c.leases != nil {
		t.Fatal("a controller without a lease section has leases")
	}
	if g := etcdGoroutines(); g != "" {
		t.Fatalf("without a lease section, etcd code runs:\n%s", g)
	}

	cl := etcdtest.Start(t, 3)
	h := newLeaseHost(t, cl, "laptop", leasePrefix(t))
	h.start(t)
	if _, err := h.c.Start(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if etcdGoroutines() == "" {
		t.Fatal("with a lease section, no etcd goroutine: the check proves nothing")
	}
}

// etcdGoroutines returns the stacks of the goroutines in the lease
// client (its renewals, its watches), "" when there are none.
func etcdGoroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	var out []string
	for g := range strings.SplitSeq(b.String(), "\n\n") {
		if strings.Contains(g, "/tether/service/lease.") || strings.Contains(g, "/tether/service/lease/") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
