//go:build unix

package unix

import "sync"

// own counts the children this process started itself through
// StartChild, by pid, so that an Adopter never takes one of them for an
// orphan it adopted. A count, not a set: a pid reaped and reused before
// ForgetChild ran is counted twice, never lost.
var own = struct {
	sync.Mutex
	pids map[int]int
}{pids: make(map[int]int)}

// StartChild runs start, which starts one child and returns its pid, and
// counts that child as this process's own until ForgetChild. The count is
// taken under the lock an Adopter scans under, so a child being started
// is never seen unaccounted for. Every child of a process with an
// Adopter must be started this way.
func StartChild(start func() (int, error)) (int, error) {
	own.Lock()
	defer own.Unlock()
	pid, err := start()
	if err == nil {
		own.pids[pid]++
	}
	return pid, err
}

// ForgetChild ends the count of a child StartChild started, once it has
// been waited for.
func ForgetChild(pid int) {
	own.Lock()
	defer own.Unlock()
	if own.pids[pid] <= 1 {
		delete(own.pids, pid)
	} else {
		own.pids[pid]--
	}
}

// ownChild reports whether pid is a child StartChild started; the caller
// holds own's lock.
func ownChild(pid int) bool { return own.pids[pid] > 0 }
