package jepsen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tether-dev/tether/internal/history"
	punix "github.com/tether-dev/tether/platform/unix"
)

// watchEvery is how often the watcher reads the histories for new starts.
const watchEvery = 5 * time.Millisecond

// watcher follows the agents' history files: for each start it holds a
// pidfd of the process and, when the process is gone, appends a Gone
// record to its own file, stamped when it saw it. An agent killed by
// SIGKILL says nothing of its end: that record is its end, an upper
// bound. It records every process it saw, also those that wrote their own
// end, which the checker prefers and checks against it.
type watcher struct {
	files []string // the agents' histories
	out   string   // the watcher's own

	stop chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	seen map[history.Proc]bool
	live int
	err  error
}

func watch(out string, files ...string) *watcher {
	w := &watcher{files: files, out: out, stop: make(chan struct{}), seen: map[history.Proc]bool{}}
	w.wg.Go(w.loop)
	return w
}

// files are every history of the run: the agents' and the watcher's.
func (w *watcher) all() []string { return append([]string{w.out}, w.files...) }

func (w *watcher) loop() {
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		w.scan()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// scan reads the histories and watches every process not yet seen.
func (w *watcher) scan() {
	for _, f := range w.files {
		recs, err := readHistory(f)
		if err != nil {
			w.fail(err)
			continue
		}
		for _, r := range recs {
			if r.Kind != history.Start {
				continue
			}
			w.mu.Lock()
			seen := w.seen[r.Proc()]
			w.seen[r.Proc()] = true
			if !seen {
				w.live++
			}
			w.mu.Unlock()
			if !seen {
				w.follow(r)
			}
		}
	}
}

// follow watches the process of start until it is gone.
func (w *watcher) follow(start history.Record) {
	h, err := punix.OpenHandle(punix.Ref{Pid: start.PID, Start: start.Boot})
	if errors.Is(err, punix.ErrNoProcess) {
		// Gone before the watcher saw its start: now is an upper bound.
		w.gone(start)
		return
	}
	if err != nil {
		w.fail(fmt.Errorf("watching pid %d: %w", start.PID, err))
		return
	}
	w.wg.Go(func() {
		defer h.Close()
		for {
			done, err := punix.WaitExit([]*punix.Handle{h}, 100*time.Millisecond)
			if err != nil {
				w.fail(err)
				return
			}
			if len(done) > 0 {
				w.gone(start)
				return
			}
			select {
			case <-w.stop:
				return
			default:
			}
		}
	})
}

func (w *watcher) gone(start history.Record) {
	r := history.Record{Kind: history.Gone, At: history.Now(), Host: start.Host, PID: start.PID, Boot: start.Boot}
	if err := history.Append(w.out, r); err != nil {
		w.fail(err)
	}
	w.mu.Lock()
	w.live--
	w.mu.Unlock()
}

func (w *watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// close stops watching, once every process it saw is gone or within has
// passed, and returns the first error it met, or the count of processes
// still alive.
func (w *watcher) close(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		w.scan()
		w.mu.Lock()
		live := w.live
		w.mu.Unlock()
		if live == 0 || time.Now().After(deadline) {
			close(w.stop)
			w.wg.Wait()
			if w.err == nil && live > 0 {
				w.err = fmt.Errorf("%d agents still alive %v after their hosts stopped", live, within)
			}
			return w.err
		}
		time.Sleep(watchEvery)
	}
}

// readHistory reads the complete records of a history file that agents
// may be appending to: a last line without its newline is not yet
// written, and is left for the next read. A file not yet made is empty.
func readHistory(path string) ([]history.Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return history.Read(path, bytes.NewReader(b[:bytes.LastIndexByte(b, '\n')+1]))
}
