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
//     protocol versions, the config); it answers whether it can take it
//     and with which build, and then, once it has parsed the config, the
//     verdict on the config with its parsed form. A binary that does not
//     run or cannot take it is refused at the first answer, and nothing
//     else happens (code upgrade). The handover goes on from that
//     answer, the config's parse beside the pause and the freeze; the
//     verdict is waited for before the record, the check's exit before
//     the exec, and a config the new binary rejects or a check that did
//     not exit 0 fails the handover there.
//  2. pause: the API stops accepting (clients queue in the listener's
//     backlog), event streams end with a handover event, and the
//     requests in progress are waited for.
//  3. freeze: every actor stops where nothing is in flight and detaches
//     its session at a message boundary; the warm guardians are let go
//     and the run records written.
//  4. record: once the config's verdict is in, the handover record is
//     written (handover.go).
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
	checkExitWait   = 2 * time.Second // for the check's verdict and then its exit, once the handover (the API paused) needs them
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

// setPrepared records the check of a binary that landed, for Status.
func (c *Controller) setPrepared(p *api.Prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.service.Prepared = p
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
	Handover [2]int `json:"handover"` // the record versions it reads
	Protocol [2]int `json:"protocol"` // the guardian protocol versions it speaks
	// Error says why it cannot take over; empty: it can.
	Error string `json:"error,omitempty"`
	// ParseFollows (to an offer with ParseApart) says that the config's
	// verdict is a second answer, which comes once the config is parsed:
	// a successorCheck with only Error and Parsed.
	ParseFollows bool `json:"parse_follows,omitempty"`
	// Parsed is the offered config in the parsed form of this build
	// (config.ParsedForm), for its successor to read instead of parsing
	// the config again (from handover record version 3 on).
	Parsed json.RawMessage `json:"parsed,omitempty"`
}

// encode is the answer as one line of JSON. The parsed form, already
// JSON as compact as encoding/json writes it (config.ParsedForm), is
// written as it is: encoding it as a json.RawMessage would scan it twice
// more.
func (c successorCheck) encode() []byte {
	parsed := c.Parsed
	c.Parsed = nil
	b, err := json.Marshal(c)
	if err != nil || len(parsed) == 0 {
		return append(b, '\n')
	}
	// b is an object with fields: its closing brace gives way to one more.
	b = append(b[:len(b)-1], `,"parsed":`...)
	b = append(b, parsed...)
	return append(b, "}\n"...)
}

// handoverOffer is what the running service tells the new binary.
type handoverOffer struct {
	// Handover is the oldest record version this service writes: it
	// writes the newest the successor reads, down to that one.
	Handover int            `json:"handover"`
	Guardian []int          `json:"guardian"` // the protocol versions of the running guardians
	Config   handoverConfig `json:"config"`
	// ParseApart asks for the config's verdict as a second answer (see
	// successorCheck.ParseFollows): a binary that does not know of it
	// answers once, its parse in that answer.
	ParseApart bool `json:"parse_apart,omitempty"`
}

// HandoverCheck is "tether service handover-check": it reads a
// handoverOffer on stdin and answers with a successorCheck on stdout,
// saying whether this binary can take over the service that asks, and,
// to an offer that asks for it apart, with the config's verdict once it
// is parsed. It exits 0 when it can.
func HandoverCheck(p Paths, version string, stdin io.Reader, stdout io.Writer) int {
	ans := successorCheck{Version: version, Handover: [2]int{MinHandoverVersion, HandoverVersion},
		Protocol: [2]int{wire.Version, wire.Version}}
	ans.Build = selfBuild()
	var offer handoverOffer
	dec := json.NewDecoder(io.LimitReader(stdin, 16<<20))
	var problems []string
	if err := dec.Decode(&offer); err != nil {
		problems = append(problems, "reading the offer: "+err.Error())
	}
	if offer.Handover < MinHandoverVersion || offer.Handover > HandoverVersion {
		problems = append(problems, fmt.Sprintf("it writes handover records of version %d; this tether reads %d to %d", offer.Handover, MinHandoverVersion, HandoverVersion))
	}
	for _, v := range slices.Compact(slices.Sorted(slices.Values(offer.Guardian))) {
		if v != wire.Version {
			problems = append(problems, fmt.Sprintf("a guardian speaks protocol version %d; this tether takes over %d", v, wire.Version))
		}
	}
	if len(problems) == 0 && offer.ParseApart {
		// The service pauses on this answer while the config is parsed.
		ans.ParseFollows = true
		if _, err := stdout.Write(ans.encode()); err != nil {
			return 1
		}
		ans = successorCheck{}
	}
	if len(problems) == 0 {
		rec := handoverRecord{Config: offer.Config}
		if cfg, err := rec.config(); err != nil {
			problems = append(problems, err.Error())
		} else {
			ans.Parsed, _ = cfg.ParsedForm()
		}
	}
	ans.Error = strings.Join(problems, "; ")
	_, _ = stdout.Write(ans.encode())
	if ans.Error != "" {
		return 1
	}
	return 0
}

// checkSuccessor runs exe's handover-check with offer and returns as
// soon as its first answer has been read: the process goes on to parse
// the config (a verdict the caller awaits with verdict) and exits (which
// it awaits with ended); the handover goes on meanwhile, and fails if
// the check did not end well after all. The caller must call ended once.
func checkSuccessor(ctx context.Context, exe string, globalArgs []string, offer handoverOffer) (*pendingCheck, error) {
	fi, err := os.Stat(exe)
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", exe)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("%s is not executable (mode %v)", exe, fi.Mode().Perm())
	}
	offer.ParseApart = true
	in, err := json.Marshal(offer)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	cmd := exec.CommandContext(ctx, exe, slices.Concat(globalArgs, []string{"service", "handover-check"})...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := platform.StartChild(cmd); err != nil {
		cancel()
		return nil, fmt.Errorf("%s cannot take over: %w", exe, err)
	}
	// What it wrote, kept for the message when it is not an answer.
	var out bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(io.LimitReader(stdout, 16<<20), &out))
	wait := func() error {
		defer cancel()
		return platform.WaitChild(cmd)
	}
	var ans successorCheck
	if err := dec.Decode(&ans); err != nil {
		runErr := wait()
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		if runErr == nil {
			runErr = errors.New("it answered no handover check")
		}
		return nil, fmt.Errorf("%s cannot take over (is it a tether that knows handover-check?): %v: %.300s", exe, runErr, msg)
	}
	if ans.Error != "" {
		_ = wait()
		return nil, fmt.Errorf("%s (tether %s) cannot take over: %s", exe, ans.Version, ans.Error)
	}
	pc := &pendingCheck{exe: exe, ans: ans, kill: cancel, verdicts: make(chan verdict, 1), came: make(chan struct{}), exited: make(chan error, 1)}
	// The verdict is read before the exit is waited for: the wait
	// closes the pipe.
	go func() {
		v := verdict{form: ans.Parsed, at: time.Now()}
		if ans.ParseFollows {
			var second successorCheck
			switch err := dec.Decode(&second); {
			case err != nil:
				v.err = fmt.Errorf("%s: handover check: no verdict on the config: %v", exe, err)
			case second.Error != "":
				v.err = fmt.Errorf("%s (tether %s) cannot take over: %s", exe, ans.Version, second.Error)
			default:
				v.form = second.Parsed
			}
			v.at = time.Now()
		}
		pc.verdicts <- v
		close(pc.came)
		pc.exited <- wait()
	}()
	return pc, nil
}

// pendingCheck is a check that has answered yes, with its verdict on the
// config and its exit still to come.
type pendingCheck struct {
	exe      string
	ans      successorCheck
	kill     func()
	verdicts chan verdict
	came     chan struct{} // closed once the verdict is in
	taken    *verdict      // the verdict, once verdict has returned it
	exited   chan error
}

// verdict is a check's verdict on the config: its parsed form, or why
// it cannot take it, and when it came.
type verdict struct {
	form []byte
	err  error
	at   time.Time
}

// verdict returns the config in the check's parsed form, once the check
// has parsed it, or why the check did not take it; it waits
// checkExitWait at most (the API is paused by then), and kills the check
// after that. It is called before ended, and says the same again when
// called again.
func (pc *pendingCheck) verdict() ([]byte, error) {
	if pc.taken != nil {
		return pc.taken.form, pc.taken.err
	}
	var v verdict
	select {
	case v = <-pc.verdicts:
		markAt("parsed", v.at)
	case <-time.After(checkExitWait):
		pc.kill()
		<-pc.verdicts
		v.err = fmt.Errorf("%s: handover check: no verdict on the config within %v", pc.exe, checkExitWait)
	}
	pc.taken = &v
	return v.form, v.err
}

// ended waits for the check's exit, checkExitWait at most (the API is
// paused by then), and says whether it ended well.
func (pc *pendingCheck) ended() error {
	var err error
	select {
	case err = <-pc.exited:
	case <-time.After(checkExitWait):
		pc.kill()
		<-pc.exited
		err = fmt.Errorf("it answered, and had not exited %v later", checkExitWait)
	}
	if err != nil {
		return fmt.Errorf("%s: handover check: %v", pc.exe, err)
	}
	return nil
}

// recordVersion is the version of the record to write for a successor
// that answered check: the newest that both read.
func recordVersion(check successorCheck) (int, error) {
	v := min(HandoverVersion, check.Handover[1])
	if v < max(MinHandoverVersion, check.Handover[0]) {
		return 0, fmt.Errorf("reads handover records of versions %d to %d; this service writes %d to %d",
			check.Handover[0], check.Handover[1], MinHandoverVersion, HandoverVersion)
	}
	return v, nil
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
	pre     *preparer    // the checks of binaries as they land; nil: none
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
	lead := pauseLead(stepList())
	beginSteps(began, nil)
	offer := u.c.offer()
	// A binary checked when it landed is not checked again.
	check := u.pre.take(target, offer)
	ahead := check != nil
	if !ahead {
		var err error
		if check, err = checkSuccessor(context.Background(), target, globalArgs(u.p), offer); err != nil {
			fail(err)
			call.reply <- upgradeReply{err: up.Error}
			return
		}
	}
	up.To = check.ans.Build
	version, err := recordVersion(check.ans)
	if err != nil {
		_ = check.ended()
		fail(fmt.Errorf("%s (tether %s) %w", target, check.ans.Version, err))
		call.reply <- upgradeReply{err: up.Error}
		return
	}
	stopAt("checked")
	u.c.setUpgrade(up)
	how := ""
	if ahead {
		how = ", checked when it landed"
	}
	u.logf("upgrade %s: handing over to %s (tether %s, build %s%s)", up.ID, target, check.ans.Version, check.ans.Build, how)
	call.reply <- upgradeReply{ans: api.UpgradeAnswer{Upgrade: up}}
	select {
	case <-check.came:
		// A config refused before the pause costs no pause.
		if _, err := check.verdict(); err != nil {
			fail(err)
			return
		}
	case <-time.After(lead):
	}
	if err := u.handOver(target, up, version, offer.Config, check); err != nil {
		fail(err)
	}
}

// parsedConfig is a config in the parsed form of the build that parsed
// it, as the new binary's check answered it.
type parsedConfig struct {
	source handoverConfig // what was parsed
	form   []byte
	build  string
}

// handOver makes steps 2 to 5; it returns only on failure, with the
// service as it was. check is the new binary's check of offered, whose
// first answer came before: its verdict on the config must be in before
// the record, and it must have ended well before the exec.
func (u *upgrader) handOver(target string, up api.Upgrade, version int, offered handoverConfig, check *pendingCheck) (err error) {
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
	rec := u.c.record(f, up, version)
	return u.inherit.takeOver(target, rec, u.env, handoverPath(u.p.StateDir), func(rec *handoverRecord) ([]byte, error) {
		// The agents are encoded while the check parses the config.
		var agents func() ([]byte, error)
		if rec.Version >= agentsApart {
			agents = background(func() ([]byte, error) { return encodeAgents(rec.Agents) })
		} else {
			agents = func() ([]byte, error) { return nil, nil }
		}
		form, err := check.verdict()
		if err == nil {
			rec.Steps = stepList()
			rec.carry(parsedConfig{source: offered, form: form, build: check.ans.Build})
			err = check.ended()
		}
		line, aerr := agents()
		if err != nil {
			return nil, err
		}
		if aerr != nil {
			return nil, aerr
		}
		return encodeHandover(rec, line)
	})
}

// offer says what a handover would carry, for the new binary's check.
func (c *Controller) offer() handoverOffer {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := handoverOffer{Handover: MinHandoverVersion, Config: handoverConfig{Path: c.cfg.Path, Source: c.cfg.Source}}
	for _, act := range c.actors {
		if v := act.guardianVersion.Load(); v > 0 {
			o.Guardian = append(o.Guardian, int(v))
		}
	}
	return o
}

// record builds the handover record of a frozen controller, of the
// given version.
func (c *Controller) record(f *frozen, up api.Upgrade, version int) *handoverRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &handoverRecord{Version: version, Written: time.Now().UTC(), PID: os.Getpid(),
		Profile: c.opts.Paths.Profile, Upgrade: up,
		Config: handoverConfig{Path: c.cfg.Path, Source: c.cfg.Source}}
	for _, fa := range f.actors {
		rec.Agents = append(rec.Agents, fa.state)
	}
	rec.Reap = f.reap
	return rec
}

// carry makes rec carry parsed when that is the config it runs, in a
// version that carries it.
func (rec *handoverRecord) carry(parsed parsedConfig) {
	if rec.Version >= agentsApart && len(parsed.form) > 0 && parsed.build != "" &&
		parsed.source.Path == rec.Config.Path && bytes.Equal(parsed.source.Source, rec.Config.Source) {
		rec.Parsed, rec.ParsedBy = parsed.form, parsed.build
	}
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

// maxPauseLead bounds pauseLead.
const maxPauseLead = 500 * time.Millisecond

// pauseLead is how long the pause waits after the check's first answer
// for its verdict on the config, given prev, the timeline of the
// handover before (in this process, or in the one it took over from): as
// long as that check took to parse less what that freeze took, so that
// the freeze ends as the verdict comes, and the API is paused no longer
// than the handover needs. Without such a timeline the pause begins at
// once.
func pauseLead(prev []handoverStep) time.Duration {
	at := make(map[string]time.Duration, len(prev))
	for _, st := range prev {
		at[st.Step] = st.At
	}
	checked, ok1 := at["checked"]
	paused, ok2 := at["paused"]
	frozen, ok3 := at["frozen"]
	parsed, ok4 := at["parsed"]
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0
	}
	return min(max((parsed-checked)-(frozen-paused), 0), maxPauseLead)
}

// markAt marks step in the timeline at t, in its place by time.
func markAt(step string, t time.Time) {
	steps.mu.Lock()
	defer steps.mu.Unlock()
	if steps.began.IsZero() {
		return
	}
	st := handoverStep{Step: step, At: t.Sub(steps.began)}
	i := len(steps.list)
	for i > 0 && steps.list[i-1].At > st.At {
		i--
	}
	steps.list = slices.Insert(steps.list, i, st)
}

// stopAt marks step in the timeline, and stops this process there when
// a test asked for it.
func stopAt(step string) {
	markAt(step, time.Now())
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
