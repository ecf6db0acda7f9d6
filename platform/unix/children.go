//go:build unix

package unix

import (
	"os/exec"
	"sync"
)

// own counts the children this process started itself through
// StartChild, by pid, so that an Adopter never takes one of them for an
// orphan it adopted. A count, not a set: a pid reaped and reused before
// ForgetChild ran is counted twice, never lost.
var own = struct {
	// starting is held for reading across each start, so starts run
	// side by side, and for writing across each scan of the children,
	// so a scan never sees a child whose start has not been counted.
	starting sync.RWMutex
	mu       sync.Mutex // guards pids
	pids     map[int]int
}{pids: make(map[int]int)}

// StartChild runs start, which starts one child and returns its pid, and
// counts that child as this process's own until ForgetChild. No Adopter
// scan runs while a start is under way, so a child being started is
// never seen unaccounted for. Every child of a process with an Adopter
// must be started this way.
func StartChild(start func() (int, error)) (int, error) {
	own.starting.RLock()
	defer own.starting.RUnlock()
	pid, err := start()
	if err == nil {
		own.mu.Lock()
		own.pids[pid]++
		own.mu.Unlock()
	}
	return pid, err
}

// ForgetChild ends the count of a child StartChild started, once it has
// been waited for.
func ForgetChild(pid int) {
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.pids[pid] <= 1 {
		delete(own.pids, pid)
	} else {
		own.pids[pid]--
	}
}

// StartCmd starts cmd through StartChild: a child counted as this
// process's own until ForgetChild.
func StartCmd(cmd *exec.Cmd) error {
	_, err := StartChild(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	return err
}
