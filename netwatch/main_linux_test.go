package netwatch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

func TestMain(m *testing.M) { testproc.Main(m, testproc.EveryHelperUsed()) }

// The test binary, run in a network namespace of its own, subscribes to
// the changes, then brings that namespace's loopback up with ip(8), and
// says whether a change came.
func init() { testproc.Register("changes", helperChanges) }

func helperChanges([]string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, ok := Changes(ctx)
	if !ok {
		fmt.Println("no signal")
		return 1
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		fmt.Printf("ip: %v: %s\n", err, out)
		return 1
	}
	select {
	case <-ch:
		fmt.Println("changed")
		return 0
	case <-time.After(20 * time.Second):
		fmt.Println("no change within 20s")
		return 1
	}
}

// A link that comes up raises a change, from netlink. In a network
// namespace of its own, so that the machine's network is left alone.
func TestLinkUpIsAChange(t *testing.T) {
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			testproc.SkipOrFail(t, "%s not found: %v", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "a network namespace of its own needs root")
	}
	argv := testproc.Argv("changes")
	cmd := exec.Command("unshare", append([]string{"--net"}, argv...)...)
	cmd.Env = testproc.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "changed") {
		t.Fatalf("%v: %s", err, out)
	}
}
