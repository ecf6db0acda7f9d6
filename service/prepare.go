//go:build unix || windows

package service

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
)

// A binary that lands at the service's own executable path (an install
// of a new tether over the old one) is checked at once, as step 1 of an
// upgrade would check it, and the answers are kept. An upgrade to that
// same file, asked while the service hands over the same config to
// guardians of the same protocol versions, then starts at the pause: the
// API is not paused any sooner, but the upgrade is over some 20 ms
// earlier, and a binary that cannot take over is known, in the status,
// before anyone asks. The watch is the directory's (inotify, kqueue: no
// timer, no wakeup while nothing in it changes); where the OS has none
// (Windows), every upgrade checks as it is asked.

// prepareSettle is how long a landing binary must stay unchanged before
// it is checked: an install that writes the file in several steps is
// checked once, at its end.
const prepareSettle = 100 * time.Millisecond

// preparer checks each binary that lands at exe. Its goroutine waits on
// the watch, and only a change wakes it.
type preparer struct {
	exe   string
	args  []string // the global flags of the check, as the upgrade's
	offer func() handoverOffer
	show  func(*api.Prepared) // tells the status
	logf  func(string, ...any)
	watch platform.WriteWatch
	quit  chan struct{}
	ended chan struct{}

	mu     sync.Mutex
	last   *prepared          // the last check that ended
	cancel context.CancelFunc // the check under way, if any
}

// prepared is a check of one binary file against one offer, ended.
type prepared struct {
	file  os.FileInfo // the file checked, as it was before the check
	offer [sha256.Size]byte
	ans   successorCheck // the first answer
	form  []byte         // the verdict's parsed config
	err   error          // why it cannot take over, if it cannot
}

// newPreparer starts watching exe's directory; nil when the OS watches
// no directory, or this one cannot be watched (the upgrades then check
// as they are asked).
func newPreparer(exe string, args []string, offer func() handoverOffer, show func(*api.Prepared), logf func(string, ...any)) *preparer {
	w, err := platform.WatchWrites(filepath.Dir(exe))
	if err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			logf("binaries landing at %s are checked only when an upgrade asks: %v", exe, err)
		}
		return nil
	}
	if err := w.Arm(); err != nil {
		logf("binaries landing at %s are checked only when an upgrade asks: %v", exe, err)
		_ = w.Close()
		return nil
	}
	p := &preparer{exe: exe, args: args, offer: offer, show: show, logf: logf, watch: w, quit: make(chan struct{}), ended: make(chan struct{})}
	// The file the service runs from is the one on disk now: nothing
	// to check until it changes.
	if fi, err := os.Stat(exe); err == nil {
		p.last = &prepared{file: fi, err: errSelf}
	}
	go p.loop()
	return p
}

// errSelf marks the file the service started from: an upgrade to it is
// checked as it is asked.
var errSelf = errors.New("the binary the service runs")

// loop checks the binary once it has landed and settled, until close.
func (p *preparer) loop() {
	defer close(p.ended)
	var settle <-chan time.Time
	for {
		select {
		case <-p.quit:
			return
		case <-p.watch.C():
			if err := p.watch.Arm(); err != nil {
				p.logf("binaries landing at %s are no longer checked ahead: %v", p.exe, err)
				return
			}
			settle = time.After(prepareSettle)
		case <-settle:
			settle = nil
			p.prepare()
		}
	}
}

// prepare checks the file at exe if it is not the one checked last.
func (p *preparer) prepare() {
	fi, err := os.Stat(p.exe)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	p.mu.Lock()
	if p.last != nil && sameFile(p.last.file, fi) {
		p.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.mu.Unlock()
	defer cancel()

	began := time.Now()
	offer := p.offer()
	r := &prepared{file: fi, offer: offerSum(offer)}
	pc, err := checkSuccessor(ctx, p.exe, p.args, offer)
	if err == nil {
		r.ans = pc.ans
		r.form, r.err = pc.verdict()
		if eerr := pc.ended(); r.err == nil {
			r.err = eerr
		}
	} else {
		r.err = err
	}
	if ctx.Err() != nil {
		return // an upgrade took over; it checks for itself
	}
	if errors.Is(r.err, syscall.ETXTBSY) {
		return // still being written: its close is a change too
	}
	p.mu.Lock()
	p.last, p.cancel = r, nil
	p.mu.Unlock()
	shown := &api.Prepared{Executable: p.exe, Version: r.ans.Version, Build: r.ans.Build, Checked: began.UTC(), Took: time.Since(began)}
	if r.err != nil {
		shown.Error = &api.Error{Code: api.CodeUpgrade, Message: r.err.Error()}
		p.logf("the binary now at %s cannot take over: %v", p.exe, r.err)
	} else {
		p.logf("the binary now at %s (tether %s, build %s) is checked: an upgrade to it starts at the pause", p.exe, r.ans.Version, r.ans.Build)
	}
	p.show(shown)
}

// take returns the check of the file now at exe against offer, as a
// check that has given every answer, when it was made and said yes; nil
// otherwise. Any check under way is stopped: the upgrade checks for
// itself. Only the run loop calls it, before an upgrade.
func (p *preparer) take(exe string, offer handoverOffer) *pendingCheck {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
	}
	r := p.last
	if exe != p.exe || r == nil || r.err != nil || r.offer != offerSum(offer) {
		return nil
	}
	if fi, err := os.Stat(exe); err != nil || !sameFile(r.file, fi) {
		return nil
	}
	return r.pending(exe)
}

// pending is r as a pendingCheck whose answers are all in.
func (r *prepared) pending(exe string) *pendingCheck {
	pc := &pendingCheck{exe: exe, ans: r.ans, kill: func() {}, verdicts: make(chan verdict, 1), came: make(chan struct{}), exited: make(chan error, 1)}
	pc.verdicts <- verdict{form: r.form, at: time.Now()}
	close(pc.came)
	pc.exited <- nil
	return pc
}

// close stops the watch and any check under way.
func (p *preparer) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	close(p.quit)
	<-p.ended
	_ = p.watch.Close()
}

// offerSum tells one offer from another.
func offerSum(o handoverOffer) [sha256.Size]byte {
	b, _ := json.Marshal(o)
	return sha256.Sum256(b)
}

// sameFile reports whether a and b are the same file with the same
// contents, as far as its metadata tells: the same file, size,
// modification time and, where the OS keeps one, change time (which a
// rewrite in place moves, whatever it does to the modification time).
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && platform.ChangeTime(a).Equal(platform.ChangeTime(b))
}
