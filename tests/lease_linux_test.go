package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/lease"
	"github.com/tether-dev/tether/service/lease/gateway"
)

// leaseYAML is the lease section of host name, on etcd at endpoints.
func leaseYAML(endpoints []string, name, prefix string) string {
	return fmt.Sprintf("lease:\n  etcd: {endpoints: [\"%s\"]}\n  ttl: 4s\n  host: %s\n  prefix: %s\n",
		strings.Join(endpoints, `", "`), name, prefix)
}

// statusJSONRow is agent id's row in `tether status --json`.
func (w *world) statusJSONRow(id string) statusRow {
	w.t.Helper()
	r := w.mustRun("status", "--json")
	var out struct{ Agents []statusRow }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		w.t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	for _, a := range out.Agents {
		if a.ID == id {
			return a
		}
	}
	w.t.Fatalf("status --json has no row %s:\n%s", id, r.stdout)
	return statusRow{}
}

// Two hosts share an identity through the real binary: the second's
// `tether start` exits 4 naming the holder, and its status --json shows
// the agent held_elsewhere. An upgrade of the holder's service keeps the
// lease: the same tree, the same key and fencing token, still held after
// more than a ttl; when the holder stops, the other host starts it.
func TestLeaseStartExits4AndUpgradeKeepsIt(t *testing.T) {
	etcdtest.Skip(t)
	cl := etcdtest.Start(t, 3)
	prefix := "/" + t.Name()
	vps, bash, _ := crashWorld(t)
	laptop, _, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	vps.writeConfig(leaseYAML(cl.Endpoints(), "vps", prefix) + "agents:\n" + politeYAML("y", bash, m+"-y", true))
	laptop.writeConfig(leaseYAML(cl.Endpoints(), "laptop", prefix) + "agents:\n" + politeYAML("y", bash, m+"-y", false))
	svc := vps.startService("default")
	running := vps.waitState("default", "y", api.StateRunning)
	laptop.startService("default")

	r := laptop.run(30*time.Second, "start", "y")
	if r.code != 4 || !strings.Contains(r.stdout+r.stderr, "held by vps (profile default)") {
		t.Fatalf("laptop's start: exit %d, want 4 naming the holder: %s%s", r.code, r.stdout, r.stderr)
	}
	if row := laptop.statusJSONRow("y"); row.State != api.StateHeldElsewhere || !strings.HasPrefix(row.Status, "held by vps (profile default) since ") {
		t.Fatalf("laptop's row: %+v", row)
	}

	key := lease.Key(prefix, "y@relay")
	get := func() (rev, id int64) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := cl.Client().Range(ctx, gateway.RangeRequest{Key: []byte(key)})
		if err != nil || len(g.Kvs) != 1 {
			t.Fatalf("reading %s: %v, %d keys", key, err, len(g.Kvs))
		}
		return g.Kvs[0].CreateRevision, g.Kvs[0].Lease
	}
	rev0, lease0 := get()
	if u := vps.run(time.Minute, "service", "upgrade"); u.code != 0 {
		t.Fatalf("service upgrade: exit %d: %s%s\nservice log:\n%s", u.code, u.stdout, u.stderr, svc.output())
	}
	// More than a ttl: only the successor's renewals keep it now.
	time.Sleep(6 * time.Second)
	if rev, id := get(); rev != rev0 || id != lease0 {
		t.Fatalf("after the upgrade the key is at revision %d under lease %x, before at %d under %x", rev, id, rev0, lease0)
	}
	after := vps.waitState("default", "y", api.StateRunning)
	if after.PID != running.PID {
		t.Fatalf("the agent's pid changed from %d to %d across the upgrade", running.PID, after.PID)
	}
	exactlyOnce(t, 0, map[string]int{m + "-y": 1})
	if row := laptop.statusJSONRow("y"); row.State != api.StateHeldElsewhere {
		t.Fatalf("laptop's row after the upgrade: %+v", row)
	}

	vps.mustRun("stop", "y")
	laptop.waitState("default", "y", api.StateRunning)
	if rev, _ := get(); rev <= rev0 {
		t.Fatalf("the laptop's fencing token %d is not above the vps's %d", rev, rev0)
	}
	exactlyOnce(t, 0, map[string]int{m + "-y": 1})
}

// survive_service_crash under a lease: after the service's SIGKILL the
// guardian keeps its tree only until the lease's deadline, which nobody
// renews: the tree is dead before the lease expires, long before the
// window closes, and the other host then starts the identity.
func TestLeaseSurviveCrashEndsAtDeadline(t *testing.T) {
	etcdtest.Skip(t)
	cl := etcdtest.Start(t, 3)
	prefix := "/" + t.Name()
	vps, bash, _ := crashWorld(t)
	laptop, _, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	vps.writeConfig(leaseYAML(cl.Endpoints(), "vps", prefix) + "agents:\n" + surviveYAML("x", bash, m+"-x", time.Minute))
	laptop.writeConfig(leaseYAML(cl.Endpoints(), "laptop", prefix) + "agents:\n" + politeYAML("x", bash, m+"-x", true))
	svc := vps.startService("default")
	vps.waitState("default", "x", api.StateRunning)
	laptop.startService("default")
	laptop.waitState("default", "x", api.StateHeldElsewhere)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := lease.Key(prefix, "x@relay")
	watch := etcdtest.Watch(ctx, cl.Client(), key, false)
	begin := time.Now()
	svc.kill()
	dead := make(chan time.Duration, 1)
	go func() {
		testproc.UntilEvery(30*time.Second, time.Millisecond, func() bool { return len(procsWith(m+"-x")) == 0 })
		dead <- time.Since(begin)
	}()
	var expired time.Duration
	for ev := range watch {
		if ev.Deleted() {
			expired = time.Since(begin)
			break
		}
	}
	died := <-dead
	if expired == 0 || died >= expired {
		t.Fatalf("after the service's SIGKILL the surviving tree died at %v, its lease expired at %v: want the tree first", died, expired)
	}
	t.Logf("service killed at 0, surviving tree dead at %v, lease expired at %v", died, expired)
	laptop.waitState("default", "x", api.StateRunning)
	exactlyOnce(t, 0, map[string]int{m + "-x": 1})
}
