package guardian

import (
	"os"
	"sync"
	"time"

	"github.com/tether-dev/tether/logfile"
)

// drainWait bounds the wait, once the tree is dead, for the last of its
// output: every writer of the pipes is gone by then, so the rest is
// already in them, unless a process outside the tree holds a write end.
const drainWait = time.Second

// output is the agent's standard output and error: two pipes whose read
// ends the guardian holds. Their lines go to the log (logfile.Writer
// stamps, marks and rotates them) and, while the agent starts, to its
// log readiness check. The agent writes into a pipe, never into the file,
// so the rotation is exact and a writer faster than the disk is held
// back by the full pipe rather than lost.
type output struct {
	outR, errR *os.File
	outW, errW *os.File // the agent's ends, closed once it runs
	done       sync.WaitGroup
}

// newOutput makes the two pipes.
func newOutput() (*output, error) {
	o := &output{}
	var err error
	if o.outR, o.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if o.errR, o.errW, err = os.Pipe(); err != nil {
		o.outR.Close()
		o.outW.Close()
		return nil, err
	}
	return o, nil
}

// start closes the guardian's copies of the agent's ends (the agent has
// its own by now, so EOF means every process that could write is gone)
// and copies what the agent writes into w, giving each line to each.
func (o *output) start(w *logfile.Writer, each func([]byte), logf func(string, ...any)) {
	o.closeWriteEnds()
	for _, p := range []struct {
		r *os.File
		s logfile.Stream
	}{{o.outR, logfile.Stdout}, {o.errR, logfile.Stderr}} {
		o.done.Add(1)
		go func() {
			defer o.done.Done()
			if err := w.Copy(p.r, p.s, each); err != nil {
				logf("reading the agent's %s: %v", p.s, err)
			}
		}()
	}
}

func (o *output) closeWriteEnds() {
	for _, f := range []**os.File{&o.outW, &o.errW} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// drain waits until both pipes are read to their end, at most limit,
// then closes them. It returns whether they ended within it.
func (o *output) drain(limit time.Duration) bool {
	if o == nil {
		return true
	}
	o.closeWriteEnds()
	done := make(chan struct{})
	go func() {
		o.done.Wait()
		close(done)
	}()
	ended := true
	select {
	case <-done:
	case <-time.After(limit):
		ended = false
	}
	o.outR.Close()
	o.errR.Close()
	<-done
	return ended
}
