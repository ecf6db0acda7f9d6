package service

import (
	"os"
	"time"

	"github.com/tether-dev/tether/platform"
)

// Running agents' logs are held to MaxLogSize by checks whose pace follows
// the logs. A log that grew is checked again before it could reach the
// cap at the rate it grew (at most once a second, at least once every ten
// minutes). While no log grows no timer runs: the service waits on a
// watch of the log directory (platform.WatchWrites), and the first write
// after the quiet brings the next check. A write that ends a quiet spell
// longer than logCheckFirst says nothing of the rate, so the check after
// it comes logCheckMin later and measures it.
//
// Where the OS has no such watch, the checks back off instead, doubling
// while no log grows up to one every ten minutes, and an agent's start
// brings the next check within logCheckFirst.
const (
	logCheckFirst = 30 * time.Second
	logCheckMin   = time.Second
	logCheckMax   = 10 * time.Minute
)

// logChecker holds logs to a size and paces its own checks.
type logChecker struct {
	max   int64
	sizes map[string]int64 // each log's size at the last check
	last  time.Time        // when that was
	wait  time.Duration    // the last pause it chose
}

func newLogChecker(max int64, now time.Time) *logChecker {
	return &logChecker{max: max, sizes: map[string]int64{}, last: now, wait: logCheckFirst}
}

// check caps each of paths that reached the size and returns how long to
// wait before the next check, and whether a log grew since the last one.
// A log that cannot be capped (its directory is unwritable, say) is tried
// again at the next check.
func (lc *logChecker) check(paths []string, now time.Time) (wait time.Duration, grew bool) {
	elapsed := now.Sub(lc.last)
	sizes := make(map[string]int64, len(paths))
	var soonest time.Duration // 0 while no log grew
	for _, p := range paths {
		var size int64
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		if size >= lc.max && capLog(p, lc.max) == nil {
			size = 0
		}
		if prev, ok := lc.sizes[p]; ok && size > prev && elapsed > 0 {
			// Half the time it needs to reach the cap at the rate it
			// grew since the last check.
			d := time.Duration(float64(elapsed) * float64(lc.max-size) / float64(size-prev) / 2)
			if soonest == 0 || d < soonest {
				soonest = d
			}
		}
		sizes[p] = size
	}
	lc.sizes, lc.last = sizes, now
	if soonest == 0 {
		lc.wait = min(2*lc.wait, logCheckMax)
	} else {
		lc.wait = min(max(soonest, logCheckMin), logCheckMax)
	}
	return lc.wait, soonest != 0
}

// woken is check after a write ended a quiet spell. After a spell longer
// than logCheckFirst the growth says nothing of the rate, so a log that
// grew is checked again logCheckMin later.
func (lc *logChecker) woken(paths []string, now time.Time) (wait time.Duration, grew bool) {
	long := now.Sub(lc.last) > logCheckFirst
	if wait, grew = lc.check(paths, now); grew && long {
		lc.wait, wait = logCheckMin, logCheckMin
	}
	return wait, grew
}

// capLogs keeps every agent's log under MaxLogSize (see logChecker) until
// the controller shuts down.
func (c *Controller) capLogs() {
	lc := newLogChecker(MaxLogSize, time.Now())
	t := time.NewTimer(logCheckFirst)
	defer t.Stop()
	due := time.Now().Add(logCheckFirst)
	timer := func(d time.Duration) {
		due = time.Now().Add(d)
		t.Reset(d)
	}
	var woke <-chan struct{}
	w := c.watchLogs()
	if w != nil {
		defer w.Close()
		// The first look, at once, is the baseline the watch needs.
		t.Stop()
		due = time.Time{}
		if wait, grew := c.quietLogs(lc, w); grew {
			timer(wait)
		}
		woke = w.C()
	}
	for {
		var wait time.Duration
		var grew bool
		select {
		case <-c.quit:
			return
		case <-c.logStart:
			// An agent started: its log may grow at any pace. A watch
			// sees its first write; without one, the next check comes
			// soon.
			if w == nil && time.Until(due) > logCheckFirst {
				timer(logCheckFirst)
			}
			continue
		case <-woke:
			wait, grew = lc.woken(c.logPaths(), time.Now())
		case <-t.C:
			due = time.Time{}
			wait, grew = lc.check(c.logPaths(), time.Now())
		}
		if w != nil && !grew {
			if wait, grew = c.quietLogs(lc, w); !grew {
				continue
			}
		}
		timer(wait)
	}
}

// quietLogs hands the checks over to the watch once no log grows: it arms
// the watch, then looks once more, for a write between the last look and
// the arming would go unseen. It returns whether a log grew after all
// and, if so, when to check next; a watch that cannot be armed (the log
// directory is gone) leaves the next check to the back-off.
func (c *Controller) quietLogs(lc *logChecker, w platform.WriteWatch) (wait time.Duration, grew bool) {
	if err := w.Arm(); err != nil {
		return lc.wait, true
	}
	return lc.check(c.logPaths(), time.Now())
}

// watchLogs returns a watch of the log directory, or nil where the OS has
// none.
func (c *Controller) watchLogs() platform.WriteWatch {
	if err := os.MkdirAll(c.opts.Paths.LogDir, 0o700); err != nil {
		return nil
	}
	w, err := platform.WatchWrites(c.opts.Paths.LogDir)
	if err != nil {
		return nil
	}
	return w
}

// logPaths are the logs of every agent.
func (c *Controller) logPaths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	paths := make([]string, 0, len(c.actors))
	for id := range c.actors {
		paths = append(paths, c.opts.Paths.LogPath(id))
	}
	return paths
}

// logStarted tells capLogs that an agent started, without waiting.
func (c *Controller) logStarted() {
	select {
	case c.logStart <- struct{}{}:
	default:
	}
}
