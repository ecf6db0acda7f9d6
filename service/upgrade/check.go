package upgrade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// Bounds of the check.
const (
	checkTimeout  = 10 * time.Second
	checkExitWait = 2 * time.Second // for the check's exit once it has answered
)

// Answer is what a new binary answers to handover-check.
type Answer struct {
	Version  string `json:"version"`
	Build    string `json:"build"`
	Handover int    `json:"handover"` // the record version it reads
	Protocol [2]int `json:"protocol"` // the guardian protocol versions it speaks
	// Guardian is the guardian program it would start guardians with
	// (guardian.Program's String), the one beside it when there is one.
	Guardian string `json:"guardian,omitempty"`
	// Error says why it cannot take over; empty: it can.
	Error string `json:"error,omitempty"`
	// StandIn: it stays, on the control socket offered, to stand in
	// for the service while it hands over (see StandIn).
	StandIn bool `json:"stand_in,omitempty"`
	// PID is the check's process: a check stands in only when it is the
	// process the service started.
	PID int `json:"pid,omitempty"`
}

// Offer is what the running service tells the new binary.
type Offer struct {
	Handover int    `json:"handover"` // the record version this service writes
	Guardian []int  `json:"guardian"` // the protocol versions of the running guardians
	Config   Config `json:"config"`
	// StandIn: the check has a control socket (descriptor 3), and may
	// stand in for the service while it hands over (see StandIn).
	StandIn bool `json:"stand_in,omitempty"`
}

// HandoverCheck is "tether service handover-check": it reads an Offer on
// stdin and answers with an Answer on stdout, once it has parsed the
// offered config, saying whether this binary can take over the service
// that asks. It exits 0 when it can; offered a control socket, it then
// stands in for the service, with serve, until the handover ends.
func HandoverCheck(version string, stdin io.Reader, stdout io.Writer, serve StatusServer) int {
	ans := Answer{Version: version, Build: SelfBuild(), Handover: Version,
		Protocol: [2]int{wire.Version, wire.Version}, PID: os.Getpid()}
	// The guardian program beside this binary is asked for its
	// protocol while the offer is read.
	guardianCheck := make(chan guardianProgramCheck, 1)
	go func() { guardianCheck <- checkGuardianProgram() }()
	var offer Offer
	var problems []string
	if err := json.NewDecoder(io.LimitReader(stdin, 16<<20)).Decode(&offer); err != nil {
		problems = append(problems, "reading the offer: "+err.Error())
	}
	if offer.Handover != Version {
		problems = append(problems, fmt.Sprintf("it writes handover records of version %d; this tether reads version %d", offer.Handover, Version))
	}
	for _, v := range slices.Compact(slices.Sorted(slices.Values(offer.Guardian))) {
		if v != wire.Version {
			problems = append(problems, fmt.Sprintf("a guardian speaks protocol version %d; this tether takes over %d", v, wire.Version))
		}
	}
	g := <-guardianCheck
	ans.Guardian = g.program
	if g.problem != "" {
		problems = append(problems, g.problem)
	}
	if len(problems) == 0 {
		rec := Record{Config: offer.Config}
		if _, err := rec.ParseConfig(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	ans.Error = strings.Join(problems, "; ")
	ans.StandIn = ans.Error == "" && offer.StandIn && serve != nil && canStandIn()
	b, _ := json.Marshal(ans)
	_, _ = stdout.Write(append(b, '\n'))
	if ans.Error != "" {
		return 1
	}
	if ans.StandIn {
		return standIn(serve)
	}
	return 0
}

// guardianProgramCheck is what checkGuardianProgram found: the
// guardian program, and why it cannot serve (empty: it can).
type guardianProgramCheck struct{ program, problem string }

// checkGuardianProgram finds the guardian program this binary's service
// would run and checks it: when it is the guardian's own executable
// beside this one (which a package or an install replaces apart from
// this one), it must speak the protocol version this binary speaks.
func checkGuardianProgram() guardianProgramCheck {
	exe, err := os.Executable()
	if err != nil {
		return guardianProgramCheck{problem: "finding its own executable: " + err.Error()}
	}
	prog := guardian.ProgramFor(exe)
	c := guardianProgramCheck{program: prog.String()}
	if prog.Tether {
		return c
	}
	v, err := prog.Protocol(context.Background())
	switch {
	case err != nil:
		c.problem = err.Error()
	case v != wire.Version:
		c.problem = fmt.Sprintf("its guardian %s speaks protocol version %d; this tether speaks %d", prog, v, wire.Version)
	}
	return c
}

// check runs exe's handover-check with offer, and returns its answer
// once it has said yes: checkTimeout at most for the answer. A check
// that stands in is returned, running; one that does not must exit 0
// within checkExitWait more, or it is killed.
func check(exe string, globalArgs []string, offer Offer) (Answer, *StandIn, error) {
	var ans Answer
	fi, err := os.Stat(exe)
	switch {
	case err != nil:
		return ans, nil, err
	case !fi.Mode().IsRegular():
		return ans, nil, fmt.Errorf("%s is not a regular file", exe)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		return ans, nil, fmt.Errorf("%s is not executable (mode %v)", exe, fi.Mode().Perm())
	}
	lk, theirs, err := newLink()
	if err != nil {
		return ans, nil, err
	}
	if theirs != nil {
		defer theirs.Close()
		offer.StandIn = true
	}
	kept := false
	defer func() {
		if !kept && lk != nil {
			lk.close()
		}
	}()
	in, err := json.Marshal(offer)
	if err != nil {
		return ans, nil, err
	}
	// The context ends the check (its group) when it does not answer in
	// time, or once it has exited; a stand-in's lasts until it exits.
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		if !kept {
			cancel()
		}
	}()
	timedOut := make(chan struct{})
	timer := time.AfterFunc(checkTimeout, func() { close(timedOut); cancel() })
	defer timer.Stop()
	cmd := exec.CommandContext(ctx, exe, slices.Concat(globalArgs, []string{"service", "handover-check"})...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	cmd.WaitDelay = time.Second
	if theirs != nil {
		cmd.ExtraFiles = []*os.File{theirs}
	}
	// What it forks is killed with it, and once it has ended: no check
	// leaves a process behind (it would be the service's child).
	platform.IsolateGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return ans, nil, err
	}
	if err := platform.StartChild(cmd); err != nil {
		return ans, nil, fmt.Errorf("%s cannot take over: %w", exe, err)
	}
	if theirs != nil {
		// Its end is the check's alone: the stand-in's end is seen.
		theirs.Close()
	}
	defer func() {
		if !kept {
			platform.KillGroup(cmd)
		}
	}()
	// What it wrote, kept for the message when it is not an answer.
	var out bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(io.LimitReader(stdout, 16<<20), &out))
	err = dec.Decode(&ans)
	// It stands in when it says it does and is the process started (not
	// a wrapper of one, whose exit is the verdict), and it can.
	if err == nil && ans.Error == "" && ans.Handover == Version && ans.StandIn && ans.PID == cmd.Process.Pid && lk != nil {
		timer.Stop()
		kept = true
		return ans, &StandIn{cmd: cmd, link: lk, cancel: cancel}, nil
	}
	if lk != nil {
		// Ended before it is waited for: a check that would stand in
		// ends with its control socket.
		lk.close()
	}
	if err != nil {
		runErr := platform.WaitChild(cmd)
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		select {
		case <-timedOut:
			runErr = fmt.Errorf("no answer within %v", checkTimeout)
		default:
			if runErr == nil {
				runErr = errors.New("it answered no handover check")
			}
		}
		return ans, nil, fmt.Errorf("%s cannot take over (is it a tether that knows handover-check?): %v: %.300s", exe, runErr, msg)
	}
	timer.Stop()
	if ans.Error != "" {
		_ = platform.WaitChild(cmd)
		return ans, nil, fmt.Errorf("%s (tether %s) cannot take over: %s", exe, ans.Version, ans.Error)
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
		return ans, nil, fmt.Errorf("%s: handover check: %v", exe, err)
	}
	if ans.Handover != Version {
		return ans, nil, fmt.Errorf("%s (tether %s) reads handover records of version %d; this service writes version %d", exe, ans.Version, ans.Handover, Version)
	}
	return ans, nil, nil
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
// which is the running binary even after the path holds another.
func selfExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// SelfBuild is BuildOf the file this process runs, or "" when it cannot
// be read.
func SelfBuild() string {
	exe, err := selfExecutable()
	if err != nil {
		return ""
	}
	b, _ := BuildOf(exe)
	return b
}
