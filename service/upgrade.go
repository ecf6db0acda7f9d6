package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// An upgrade (I9), as the running service makes it:
//
//  1. check: the new binary is run as "service handover-check" and told
//     what would be handed over (the record's version, the guardians'
//     protocol versions, the config); it answers, once it has parsed the
//     config, whether it can take it and with which build, and exits. A
//     binary that does not run, cannot take it, rejects the config or
//     does not exit 0 is refused, and nothing else happens (code
//     upgrade): the API answers throughout.
//  2. pause: the API stops accepting (clients queue in the listener's
//     backlog), event streams end with a handover event, and the
//     requests in progress are waited for.
//  3. freeze: every actor stops where nothing is in flight and detaches
//     its session at a message boundary; the warm guardians are let go
//     and the run records written.
//  4. record: the handover record is written (handover.go).
//  5. exec: on Unix the service execve's the new binary in place, with
//     the service lock, the listener and every tether inherited; on
//     Windows it starts the new binary with them duplicated into it and
//     waits for its word that it has taken over, then exits.
//
// A failure in steps 2 to 5 (a request that does not end, an exec that
// fails, a successor that says it cannot) thaws the actors, serves the
// API again and records the error in Status.Service.Upgrade: the service
// goes on as it was. A successor that dies after taking over is a crash
// like any other (I2).

// Bounds of an upgrade's steps.
const (
	checkTimeout    = 10 * time.Second
	checkExitWait   = 2 * time.Second // for the check's exit once it has answered
	pauseTimeout    = 10 * time.Second
	freezeTimeout   = 30 * time.Second
	takeoverTimeout = 30 * time.Second
)

// handoverStopEnv, in tests, names a step of the handover at which the
// process stops itself (SIGSTOP on Unix) so that a test can kill it
// there: "paused", "frozen", "recorded", "exec" (descriptors inheritable,
// about to execve), "successor" (the record read, nothing attached),
// "serving", "attaching" (half the tethers made sessions again),
// "announcing" (half the guardians sent attach).
const handoverStopEnv = "TETHER_TEST_HANDOVER_STOP"

// upgradeCall is an upgrade asked for over the API, for the run loop.
type upgradeCall struct {
	req   api.UpgradeRequest
	reply chan upgradeReply
}

type upgradeReply struct {
	ans api.UpgradeAnswer
	err error
}

// Upgrade implements localapi.Backend: the run loop checks the binary and
// answers, then hands over.
func (c *Controller) Upgrade(ctx context.Context, req api.UpgradeRequest) (api.UpgradeAnswer, error) {
	call := upgradeCall{req: req, reply: make(chan upgradeReply, 1)}
	select {
	case c.upgrades <- call:
	case <-c.quit:
		return api.UpgradeAnswer{}, &api.Error{Code: api.CodeUpgrade, Message: "the service is shutting down"}
	case <-ctx.Done():
		return api.UpgradeAnswer{}, ctx.Err()
	}
	select {
	case r := <-call.reply:
		return r.ans, r.err
	case <-ctx.Done():
		return api.UpgradeAnswer{}, ctx.Err()
	}
}

// Upgrades delivers the upgrades asked for over the API to the run loop.
func (c *Controller) upgradeCalls() <-chan upgradeCall { return c.upgrades }

// setUpgrade records the last upgrade for Status.
func (c *Controller) setUpgrade(u api.Upgrade) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.service.Upgrade = &u
}

// frozen is the controller stopped for a handover.
type frozen struct {
	actors []*frozenActor // in the config's order
	reap   []int          // warm guardians let go, for the successor to reap
}

// freeze stops every actor where nothing is in flight and detaches its
// session, lets go of the warm guardians, and writes the queued run
// records.
func (c *Controller) freeze(ctx context.Context) (*frozen, error) {
	c.mu.Lock()
	acts := make([]*actor, 0, len(c.actors))
	for _, a := range c.cfg.Agents {
		if act, ok := c.actors[a.ID]; ok {
			acts = append(acts, act)
		}
	}
	c.mu.Unlock()
	f := &frozen{actors: make([]*frozenActor, len(acts))}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i, act := range acts {
		wg.Go(func() {
			reply := make(chan *frozenActor, 1)
			select {
			case act.cmds <- command{kind: cmdFreeze, freeze: reply}:
			case <-act.done:
				mu.Lock()
				errs = append(errs, fmt.Errorf("agent %q ended", act.id))
				mu.Unlock()
				return
			}
			f.actors[i] = <-reply
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// The actors still busy freeze later and are thawed then.
		go func() { <-done; c.thaw(f) }()
		return nil, fmt.Errorf("agents still busy after %v: %w", freezeTimeout, ctx.Err())
	}
	if len(errs) > 0 {
		c.thaw(f)
		return nil, errors.Join(errs...)
	}
	if successorIsSeparate {
		c.pool.Close()
	} else {
		// Not waited for here: they exit on EOF, and this very
		// process, after execve, reaps them.
		f.reap = c.pool.Release()
	}
	c.flushRuns()
	return f, nil
}

// thaw lets every frozen actor go on, with a new pool.
func (c *Controller) thaw(f *frozen) {
	if f == nil {
		return
	}
	c.pool = guardian.NewPool(c.opts.Executable)
	reapLater(f.reap, false)
	for _, fa := range f.actors {
		if fa != nil {
			close(fa.thaw)
		}
	}
}

// flushRuns returns once every run record queued before it is written.
func (c *Controller) flushRuns() {
	done := make(chan struct{})
	select {
	case c.runs <- stateWrite{done: done}:
		<-done
	case <-c.quit:
	}
}

// successorCheck is what a new binary answers to handover-check.
type successorCheck struct {
	Version  string `json:"version"`
	Build    string `json:"build"`
	Handover int    `json:"handover"` // the record version it reads
	Protocol [2]int `json:"protocol"` // the guardian protocol versions it speaks
	// Error says why it cannot take over; empty: it can.
	Error string `json:"error,omitempty"`
}

// handoverOffer is what the running service tells the new binary.
type handoverOffer struct {
	Handover int            `json:"handover"` // the record version this service writes
	Guardian []int          `json:"guardian"` // the protocol versions of the running guardians
	Config   handoverConfig `json:"config"`
}

// HandoverCheck is "tether service handover-check": it reads a
// handoverOffer on stdin and answers with a successorCheck on stdout,
// once it has parsed the offered config, saying whether this binary can
// take over the service that asks. It exits 0 when it can.
func HandoverCheck(p Paths, version string, stdin io.Reader, stdout io.Writer) int {
	ans := successorCheck{Version: version, Build: selfBuild(), Handover: HandoverVersion,
		Protocol: [2]int{wire.Version, wire.Version}}
	var offer handoverOffer
	var problems []string
	if err := json.NewDecoder(io.LimitReader(stdin, 16<<20)).Decode(&offer); err != nil {
		problems = append(problems, "reading the offer: "+err.Error())
	}
	if offer.Handover != HandoverVersion {
		problems = append(problems, fmt.Sprintf("it writes handover records of version %d; this tether reads version %d", offer.Handover, HandoverVersion))
	}
	for _, v := range slices.Compact(slices.Sorted(slices.Values(offer.Guardian))) {
		if v != wire.Version {
			problems = append(problems, fmt.Sprintf("a guardian speaks protocol version %d; this tether takes over %d", v, wire.Version))
		}
	}
	if len(problems) == 0 {
		rec := handoverRecord{Config: offer.Config}
		if _, err := rec.config(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	ans.Error = strings.Join(problems, "; ")
	b, _ := json.Marshal(ans)
	_, _ = stdout.Write(append(b, '\n'))
	if ans.Error != "" {
		return 1
	}
	return 0
}

// checkSuccessor runs exe's handover-check with offer, and returns its
// answer once it has said yes and exited 0: checkTimeout at most for the
// answer, and checkExitWait more for the exit, after which it is killed.
func checkSuccessor(ctx context.Context, exe string, globalArgs []string, offer handoverOffer) (successorCheck, error) {
	var ans successorCheck
	fi, err := os.Stat(exe)
	switch {
	case err != nil:
		return ans, err
	case !fi.Mode().IsRegular():
		return ans, fmt.Errorf("%s is not a regular file", exe)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		return ans, fmt.Errorf("%s is not executable (mode %v)", exe, fi.Mode().Perm())
	}
	in, err := json.Marshal(offer)
	if err != nil {
		return ans, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, slices.Concat(globalArgs, []string{"service", "handover-check"})...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return ans, err
	}
	if err := platform.StartChild(cmd); err != nil {
		return ans, fmt.Errorf("%s cannot take over: %w", exe, err)
	}
	// What it wrote, kept for the message when it is not an answer.
	var out bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(io.LimitReader(stdout, 16<<20), &out))
	if err := dec.Decode(&ans); err != nil {
		runErr := platform.WaitChild(cmd)
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		if runErr == nil {
			runErr = errors.New("it answered no handover check")
		}
		return ans, fmt.Errorf("%s cannot take over (is it a tether that knows handover-check?): %v: %.300s", exe, runErr, msg)
	}
	if ans.Error != "" {
		_ = platform.WaitChild(cmd)
		return ans, fmt.Errorf("%s (tether %s) cannot take over: %s", exe, ans.Version, ans.Error)
	}
	exited := make(chan error, 1)
	go func() { exited <- platform.WaitChild(cmd) }()
	select {
	case err = <-exited:
	case <-time.After(checkExitWait):
		cancel()
		<-exited
		err = fmt.Errorf("it answered, and had not exited %v later", checkExitWait)
	}
	if err != nil {
		return ans, fmt.Errorf("%s: handover check: %v", exe, err)
	}
	if ans.Handover != HandoverVersion {
		return ans, fmt.Errorf("%s (tether %s) reads handover records of version %d; this service writes version %d", exe, ans.Version, ans.Handover, HandoverVersion)
	}
	return ans, nil
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// BuildOf names the binary file at path, to tell it from another one: a
// hash of its size and modification time. A binary replaced on disk by
// another build has another name, and so does the running service once
// the file it started from is replaced.
func BuildOf(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d:%d", fi.Size(), fi.ModTime().UnixNano()))
	return hex.EncodeToString(sum[:6]), nil
}

// selfExecutable is the file this process runs: on Linux /proc/self/exe,
// which is the running binary even after the path holds another one.
func selfExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// selfBuild is BuildOf the file this process runs, or "" when it cannot
// be read.
func selfBuild() string {
	exe, err := selfExecutable()
	if err != nil {
		return ""
	}
	b, _ := BuildOf(exe)
	return b
}

func newUpgradeID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// globalArgs are the global flags the service was started with, for a
// command of its successor binary.
func globalArgs(p Paths) []string {
	args := []string{"--profile", p.Profile}
	if p.ConfigSet {
		args = append(args, "--config", p.Config)
	}
	return args
}

// upgrader makes the upgrades of one running service; the run loop
// calls it.
type upgrader struct {
	p       Paths
	exe     string
	version string
	c       *Controller
	srv     interface {
		Pause(context.Context, bool) error
		Resume()
	}
	inherit *inheritance // the descriptors that are not the actors'
	logf    func(string, ...any)
	notify  func(string) // tells the service manager, if any
	env     []string     // added to the successor's environment
}

// upgrade checks the binary call asks for, answers, and hands over: it
// returns only when the handover failed, having recorded why.
func (u *upgrader) upgrade(call upgradeCall) {
	began := time.Now()
	target := call.req.Executable
	if target == "" {
		target = u.exe
	}
	if abs, err := filepath.Abs(target); err == nil {
		target = abs
	}
	up := api.Upgrade{ID: call.req.ID, From: u.c.serviceInfo().Build, Executable: target, Began: began.UTC()}
	if up.ID == "" {
		up.ID = newUpgradeID()
	}
	fail := func(err error) {
		up.Error = &api.Error{Code: api.CodeUpgrade, Message: err.Error()}
		u.c.setUpgrade(up)
		u.logf("upgrade %s to %s: %v; the service goes on as it was", up.ID, target, err)
	}
	beginSteps(began, nil)
	check, err := checkSuccessor(context.Background(), target, globalArgs(u.p), u.c.offer())
	if err != nil {
		fail(err)
		call.reply <- upgradeReply{err: up.Error}
		return
	}
	up.To = check.Build
	stopAt("checked")
	u.c.setUpgrade(up)
	u.logf("upgrade %s: handing over to %s (tether %s, build %s)", up.ID, target, check.Version, check.Build)
	call.reply <- upgradeReply{ans: api.UpgradeAnswer{Upgrade: up}}
	if err := u.handOver(target, up); err != nil {
		fail(err)
	}
}

// handOver makes steps 2 to 5; it returns only on failure, with the
// service as it was.
func (u *upgrader) handOver(target string, up api.Upgrade) (err error) {
	pctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	// A manager shows the service reloading until the successor says it
	// is ready (or this one, when the handover fails).
	u.notify(platform.Reloading())
	defer func() {
		if err != nil {
			u.srv.Resume()
			u.notify("READY=1")
		}
	}()
	if err := u.srv.Pause(pctx, true); err != nil {
		return fmt.Errorf("requests in progress did not end within %v: %w", pauseTimeout, err)
	}
	stopAt("paused")
	fctx, fcancel := context.WithTimeout(context.Background(), freezeTimeout)
	defer fcancel()
	f, err := u.c.freeze(fctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			u.c.thaw(f)
		}
	}()
	stopAt("frozen")
	return u.inherit.takeOver(target, u.c.record(f, up), u.env, handoverPath(u.p.StateDir))
}

// offer says what a handover would carry, for the new binary's check.
func (c *Controller) offer() handoverOffer {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := handoverOffer{Handover: HandoverVersion, Config: handoverConfig{Path: c.cfg.Path, Source: c.cfg.Source}}
	for _, act := range c.actors {
		if v := act.guardianVersion.Load(); v > 0 {
			o.Guardian = append(o.Guardian, int(v))
		}
	}
	return o
}

// record builds the handover record of a frozen controller.
func (c *Controller) record(f *frozen, up api.Upgrade) *handoverRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &handoverRecord{Version: HandoverVersion, Written: time.Now().UTC(), PID: os.Getpid(),
		Profile: c.opts.Paths.Profile, Upgrade: up,
		Config: handoverConfig{Path: c.cfg.Path, Source: c.cfg.Source}}
	for _, fa := range f.actors {
		rec.Agents = append(rec.Agents, fa.state)
	}
	rec.Reap = f.reap
	return rec
}

// serviceInfo returns what Status says of the service process.
func (c *Controller) serviceInfo() api.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.service
}

// ServiceInfo describes this process for Status: the binary it runs and
// when it began to serve.
func ServiceInfo(exe, version string) api.Service {
	return api.Service{Version: version, Executable: exe, Started: time.Now().UTC(), Build: selfBuild()}
}

// handoverStep is when a step of a handover was reached, from the
// upgrade's request: the successor logs the whole timeline.
type handoverStep struct {
	Step string        `json:"step"`
	At   time.Duration `json:"at"`
}

// steps is the timeline of the handover under way in this process.
var steps struct {
	mu    sync.Mutex
	began time.Time
	list  []handoverStep
}

// beginSteps starts a timeline at began (an upgrade's request), with
// list the steps the process before reached.
func beginSteps(began time.Time, list []handoverStep) {
	steps.mu.Lock()
	defer steps.mu.Unlock()
	steps.began, steps.list = began, append([]handoverStep(nil), list...)
}

func stepList() []handoverStep {
	steps.mu.Lock()
	defer steps.mu.Unlock()
	return append([]handoverStep(nil), steps.list...)
}

func formatSteps(list []handoverStep) string {
	var b strings.Builder
	for i, st := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %v", st.Step, st.At.Round(10*time.Microsecond))
	}
	return b.String()
}

// stopAt marks step in the timeline, and stops this process there when
// a test asked for it.
func stopAt(step string) {
	steps.mu.Lock()
	if !steps.began.IsZero() {
		steps.list = append(steps.list, handoverStep{Step: step, At: time.Since(steps.began)})
	}
	steps.mu.Unlock()
	if os.Getenv(handoverStopEnv) == step {
		stopSelf()
	}
}

// eachTether calls f with each tether of rec and the descriptor of its
// conn in this process, and sets the tether's Conn to what f returns: on
// Unix the descriptor itself (inherited across execve), on Windows its
// duplicate in the successor.
func eachTether(rec *handoverRecord, f func(fd uintptr) (uintptr, error)) error {
	for i := range rec.Agents {
		t := rec.Agents[i].Tether
		if t == nil {
			continue
		}
		rc, err := t.handoff.SyscallConn()
		if err == nil {
			var fd uintptr
			if err = rc.Control(func(d uintptr) { fd = d }); err == nil {
				t.Conn, err = f(fd)
			}
		}
		if err != nil {
			return fmt.Errorf("the tether of %q: %w", rec.Agents[i].ID, err)
		}
	}
	return nil
}
