package testproc

import (
	"fmt"
	"os"
	"time"
)

// sweepLimit bounds the sweep: the time leftovers get to die once killed.
const sweepLimit = 10 * time.Second

// proc is one process of the process table, as the sweep sees it. The
// sweep reads the table itself rather than through platform/unix, whose
// own tests run on this package.
type proc struct {
	pid, ppid, sid int
	state          byte
	start          uint64
	zombie         bool
	cmdline        string
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d (ppid %d, session %d, state %c): %s", p.pid, p.ppid, p.sid, p.state, p.cmdline)
}

// sweep kills every live descendant of the test process, reaps every
// zombie child, and returns the live ones it found: each outlived the
// tests. It runs after all tests, when nothing else waits for children.
func sweep() []proc {
	self := os.Getpid()
	type ref struct {
		pid   int
		start uint64
	}
	seen := make(map[ref]bool)
	var left []proc
	Until(sweepLimit, func() bool {
		procs, err := processes()
		if err != nil {
			return true
		}
		pending := false
		for _, p := range descendants(procs, self) {
			pending = true
			if p.zombie {
				continue
			}
			if r := (ref{p.pid, p.start}); !seen[r] {
				seen[r] = true
				left = append(left, p)
			}
			p.kill()
		}
		return !pending
	})
	return left
}

// descendants returns the processes of procs below root in the parent
// tree, root excluded.
func descendants(procs []proc, root int) []proc {
	children := make(map[int][]proc, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}
