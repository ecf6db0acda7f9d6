//go:build linux || darwin

package testproc

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The sweep finds, kills and reaps a process the test did not wait for,
// and the child that process started.
func TestSweep(t *testing.T) {
	rp := NewReady(t)
	cmd := Command("relay", "grandchild", "child")
	rp.Pass(cmd)
	// os.StartProcess, not exec.Cmd: the sweep reaps it, and GODEBUG
	// execwait=2 would see an exec.Cmd that was never waited for.
	stdin, keep, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	p, err := os.StartProcess(cmd.Path, cmd.Args, &os.ProcAttr{Env: cmd.Env, Files: []*os.File{stdin, nil, os.Stderr, rp.w}})
	stdin.Close()
	if err != nil {
		t.Fatal(err)
	}
	if line, err := rp.Line(20 * time.Second); err != nil || line != "grandchild" {
		t.Fatalf("Line = %q, %v", line, err)
	}
	left := sweep()
	if len(left) != 2 || left[0].pid != p.Pid || !strings.Contains(left[0].cmdline, "relay") || !strings.Contains(left[1].cmdline, "announce") {
		t.Fatalf("sweep found %v, want the relay (pid %d) and its announcer", left, p.Pid)
	}
	if err := syscall.Kill(p.Pid, 0); err == nil {
		t.Errorf("pid %d still there after the sweep", p.Pid)
	}
	if again := sweep(); len(again) != 0 {
		t.Errorf("a second sweep found %v", again)
	}
}
