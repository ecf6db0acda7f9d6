package testproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// processes reaps the zombie children, then reads the process table from
// /proc; processes that exit during the scan are left out.
func processes() ([]proc, error) {
	reapChildren()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			if p, err := stat(pid); err == nil {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// stat reads /proc/PID/stat, whose fields are counted from the last ')'
// (the command name may hold spaces and parentheses).
func stat(pid int) (proc, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return proc{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, fmt.Errorf("%s/stat: malformed", dir)
	}
	// f[0] is field 3 (state), f[17] field 20 (threads), f[19] field 22
	// (start time).
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, fmt.Errorf("%s/stat: malformed", dir)
	}
	num := func(k int) int {
		n, _ := strconv.Atoi(string(f[k]))
		return n
	}
	start, _ := strconv.ParseUint(string(f[19]), 10, 64)
	state := f[0][0]
	cmd, _ := os.ReadFile(dir + "/cmdline")
	return proc{
		pid: pid, ppid: num(1), sid: num(3), state: state, start: start,
		// A process whose main thread exited while others run shows Z
		// with more than one thread: it is not a zombie.
		zombie:  state == 'X' || state == 'Z' && num(17) <= 1,
		cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))),
	}, nil
}

// kill SIGKILLs p through a pidfd, once sure the pid is still p's.
func (p proc) kill() {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if now, err := stat(p.pid); err == nil && now.start == p.start {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}
