package guardian

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tether-dev/tether/wire"
)

// ProgramName is the guardian's own executable (cmd/tether-guardian),
// which the owner looks for beside the tether binary: "tether-guardian",
// with ".exe" on Windows.
var ProgramName = func() string {
	if runtime.GOOS == "windows" {
		return "tether-guardian.exe"
	}
	return "tether-guardian"
}()

// Program is what a guardian process runs: the guardian's own executable,
// or, where it is missing, the tether binary with the guardian argument.
type Program struct {
	Path string
	// Tether says that Path is the tether binary, run as "tether
	// guardian"; else it is the guardian's own executable.
	Tether bool
}

// ProgramFor returns the guardian program of the tether binary exe:
// ProgramName beside it (beside the file a symbolic link exe points to,
// when not beside the link) when it is a regular file that may be run,
// else exe itself. An exe named ProgramName is the guardian's own.
//
// It is looked up at each guardian's start, so that a service runs the
// files that are on disk now: after a package replaced both, the new
// guardian, as the new tether would be.
func ProgramFor(exe string) Program {
	if filepath.Base(exe) == ProgramName {
		return Program{Path: exe}
	}
	beside := filepath.Join(filepath.Dir(exe), ProgramName)
	if runnable(beside) {
		return Program{Path: beside}
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Dir(real) != filepath.Dir(exe) {
		if beside := filepath.Join(filepath.Dir(real), ProgramName); runnable(beside) {
			return Program{Path: beside}
		}
	}
	return Program{Path: exe, Tether: true}
}

// runnable says whether path is a regular file that may be run: on Unix,
// one with an execute bit.
func runnable(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}

// argv is the program's command line before the guardian's own
// arguments.
func (p Program) argv() []string {
	if p.Tether {
		return []string{p.Path, "guardian"}
	}
	return []string{p.Path}
}

// String is the program as a command line: "/usr/bin/tether-guardian",
// or "/usr/bin/tether guardian".
func (p Program) String() string {
	if p.Tether {
		return p.Path + " guardian"
	}
	return p.Path
}

// protocolArg, alone on a guardian program's command line, asks it which
// protocol version its guardians speak (see Program.Protocol).
const protocolArg = "--protocol"

// protocolAnswer is a guardian program's answer to protocolArg.
type protocolAnswer struct {
	Protocol int `json:"protocol"`
}

// answerProtocol writes this program's protocolAnswer as one line.
func answerProtocol(w io.Writer) int {
	b, _ := json.Marshal(protocolAnswer{Protocol: wire.Version})
	if _, err := w.Write(append(b, '\n')); err != nil {
		return 1
	}
	return 0
}

// protocolWait bounds a guardian program's answer to protocolArg.
const protocolWait = 5 * time.Second

// Protocol runs p to ask which protocol version its guardians speak. It
// waits for the program with os/exec: the caller must be a process that
// reaps no orphans of its own (not the service; its successor's handover
// check).
func (p Program) Protocol(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, protocolWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path, append(p.argv()[1:], protocolArg)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ans protocolAnswer
	if err == nil {
		err = json.Unmarshal(bytes.TrimSpace(out), &ans)
	}
	if err == nil && ans.Protocol < 1 {
		err = fmt.Errorf("version %d", ans.Protocol)
	}
	if err != nil {
		return 0, fmt.Errorf("guardian %s does not say which protocol it speaks: %v: %.200s", p, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return ans.Protocol, nil
}
