package guardian

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"go.uber.org/goleak"
)

var (
	adoptedMu   sync.Mutex
	adoptedPIDs = map[int]bool{}
)

// checkNoLeaks registers, as the last cleanup of a test, a check that it
// left no goroutine behind and no unreaped child: every guardian, owner
// and agent it started must have been waited for.
func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() {
		var zombies []string
		var children []int
		var procs []punix.Proc
		if !testproc.Until(5*time.Second, func() bool {
			reapAdopted()
			zombies, children = nil, nil
			procs, _ = punix.Processes()
			for _, p := range procs {
				if p.PPid != os.Getpid() {
					continue
				}
				if p.Zombie() {
					comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.Pid))
					zombies = append(zombies, fmt.Sprintf("%d(%s)", p.Pid, strings.TrimSpace(string(comm))))
				} else {
					children = append(children, p.Pid)
				}
			}
			return len(zombies) == 0 && len(children) == 0
		}) {
			t.Errorf("left behind: unreaped children %v, live children %v", zombies, children)
			// Clear them, so one failure does not fail every test
			// after it.
			for _, pid := range children {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				expectAdopted(pid)
			}
			for _, p := range procs {
				if p.PPid == os.Getpid() && p.Zombie() {
					expectAdopted(p.Pid)
				}
			}
			reapAdopted()
		}
		goleak.VerifyNone(t)
	})
}
