package bench

import (
	"slices"
	"sync"
	"testing"
)

// undo holds what each benchmark run must undo if it does not finish: a
// run registers a function as soon as it has started something, and drops
// it once it has cleaned up after itself. What is left runs at the
// benchmark's cleanup, newest first, so a failed or aborted benchmark
// leaves no process behind.
type undo struct {
	mu   sync.Mutex
	next int
	fns  map[int]func()
}

func newUndo(b *testing.B) *undo {
	u := &undo{fns: make(map[int]func())}
	b.Cleanup(u.runAll)
	return u
}

// add registers fn and returns its key for drop.
func (u *undo) add(fn func()) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.next++
	u.fns[u.next] = fn
	return u.next
}

// drop forgets the function registered under key.
func (u *undo) drop(key int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.fns, key)
}

func (u *undo) runAll() {
	u.mu.Lock()
	keys := make([]int, 0, len(u.fns))
	for k := range u.fns {
		keys = append(keys, k)
	}
	fns := u.fns
	u.fns = make(map[int]func())
	u.mu.Unlock()
	slices.Sort(keys)
	for _, k := range slices.Backward(keys) {
		fns[k]()
	}
}
