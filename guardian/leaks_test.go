//go:build linux

package guardian

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
		deadline := time.Now().Add(5 * time.Second)
		for {
			reapAdopted()
			var zombies []string
			var children []int
			procs, _ := punix.Processes()
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
			if len(zombies) == 0 && len(children) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("left behind: unreaped children %v, live children %v", zombies, children)
				// Clear them, so one failure does not fail every
				// test after it.
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
				break
			}
			time.Sleep(time.Millisecond)
		}
		goleak.VerifyNone(t)
	})
}
