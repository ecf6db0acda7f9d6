package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// proc is one process held through a pidfd: polling, signalling and
// reaping it can never reach a process that later reused its PID.
type proc struct {
	pid int
	fd  int
}

// openProc opens a pidfd for r and checks, after opening, that the PID
// still names the process started at r.Start (a zombie still does).
func openProc(r punix.Ref) (*proc, error) {
	fd, err := unix.PidfdOpen(r.Pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", r.Pid, err)
	}
	p, err := punix.Stat(r.Pid)
	if err != nil || p.Start != r.Start {
		unix.Close(fd)
		return nil, fmt.Errorf("pid %d: %w", r.Pid, punix.ErrNoProcess)
	}
	return &proc{pid: r.Pid, fd: fd}, nil
}

// openPid opens the process that pid names now.
func openPid(pid int) (*proc, error) {
	p, err := punix.Stat(pid)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	return openProc(p.Ref())
}

// exited reports whether the process has exited; a zombie has.
func (p *proc) exited() bool {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// kill sends SIGKILL; a process that is already gone is no error.
func (p *proc) kill() {
	_ = unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
}

// reap collects the exit status of the process if it is an exited child
// of this one, and reports whether the process is gone for good: reaped
// here, or exited and not a child of this process.
func (p *proc) reap() bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, p.fd, &info, unix.WEXITED|unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err == nil && info.Signo == int32(unix.SIGCHLD):
			return true
		case errors.Is(err, unix.ECHILD):
			// Not a child of this process: its parent reaps it.
			return p.exited()
		default:
			return false
		}
	}
}

// reapWithin waits until the process is gone for good (see reap).
func (p *proc) reapWithin(d time.Duration) error {
	if !testproc.Until(d, p.reap) {
		return fmt.Errorf("pid %d (%s) still there after %v", p.pid, comm(p.pid), d)
	}
	return nil
}

// close releases the pidfd.
func (p *proc) close() { unix.Close(p.fd) }

// stillAlive returns the pidfds in fds (polled for POLLIN) whose process
// has not exited, in one poll(2).
func stillAlive(fds []unix.PollFd) []unix.PollFd {
	if _, err := unix.Poll(fds, 0); err != nil {
		return fds
	}
	var out []unix.PollFd
	for _, f := range fds {
		if f.Revents == 0 {
			out = append(out, f)
		}
	}
	return out
}

// comm returns the command name of pid, or "?" when it is gone.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// statusField returns the value of one "Name:\tvalue" line of a
// /proc/.../status file.
func statusField(path, name string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: no %s line", path, name)
}

// rssMiB returns the resident set size of pid (VmRSS) in MiB.
func rssMiB(pid int) (float64, error) {
	v, err := statusField("/proc/"+strconv.Itoa(pid)+"/status", "VmRSS")
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64)
	if err != nil {
		return 0, fmt.Errorf("pid %d: VmRSS %q: %v", pid, v, err)
	}
	return kb / 1024, nil
}

// contextSwitches returns the voluntary plus involuntary context switches
// of every thread of pid: each is a time a thread left the CPU, so an
// idle process that never wakes has a constant count.
func contextSwitches(pid int) (int64, error) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, fmt.Errorf("pid %d: %w", pid, punix.ErrNoProcess)
	}
	var sum int64
	for _, t := range tasks {
		for _, name := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
			v, err := statusField(t, name)
			if err != nil {
				return 0, err
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s %q: %v", t, name, v, err)
			}
			sum += n
		}
	}
	return sum, nil
}
