package unix

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

// statLine builds a /proc/PID/stat line with the given command name, state,
// ppid, pgrp, session and start time; the other fields are plausible filler
// (a zombie has one thread, as the kernel shows it).
func statLine(pid int, comm string, state byte, ppid, pgrp, sid int, start uint64) string {
	threads := 7
	if state == 'Z' {
		threads = 1
	}
	return statLineThreads(pid, comm, state, ppid, pgrp, sid, start, threads)
}

func statLineThreads(pid int, comm string, state byte, ppid, pgrp, sid int, start uint64, threads int) string {
	f := []string{
		strconv.Itoa(pid), "(" + comm + ")", string(state),
		strconv.Itoa(ppid), strconv.Itoa(pgrp), strconv.Itoa(sid),
		"34816", "4242", "4194560", // tty_nr tpgid flags
		"120", "0", "0", "0", // minflt cminflt majflt cmajflt
		"3", "1", "0", "0", // utime stime cutime cstime
		"20", "0", strconv.Itoa(threads), "0", // priority nice num_threads itrealvalue
		strconv.FormatUint(start, 10),
		"1234567", "890", "18446744073709551615", // vsize rss rsslim
	}
	return strings.Join(f, " ") + " 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
}

func TestParseStat(t *testing.T) {
	for _, comm := range []string{
		"sleep",
		"a b",
		"x) (y",
		") S 1 2 3 ",        // looks like the fields that follow
		"((((",              // only openings
		"))))",              // only closings
		"tmux: server) R 9", // spaces, a ')' and digits
		"",
	} {
		line := statLine(4242, comm, 'S', 17, 4000, 3999, 987654321)
		p, err := parseStat(4242, []byte(line))
		if err != nil {
			t.Errorf("parseStat(%q): %v", line, err)
			continue
		}
		want := Proc{Pid: 4242, PPid: 17, Pgid: 4000, Sid: 3999, State: 'S', Start: 987654321}
		if !sameProc(p, want) {
			t.Errorf("parseStat(comm %q) = %+v, want %+v", comm, p, want)
		}
	}
	p, err := parseStat(7, []byte(statLine(7, "z", 'Z', 1, 7, 7, 5)))
	if err != nil || !p.Zombie() {
		t.Errorf("parseStat(zombie) = %+v, %v; want a zombie", p, err)
	}
}

func TestParseStatMalformed(t *testing.T) {
	good := statLine(1, "x", 'S', 0, 1, 1, 5)
	for _, b := range []string{
		"",
		"1 (x",
		"1 (x)",
		"1 (x) ",
		"1 (x) S 0 1 1", // too few fields
		strings.Replace(good, ") S ", ") SS ", 1),              // state is one letter
		strings.Replace(good, " 5 1234567 ", " x 1234567 ", 1), // start is a number
		strings.Replace(good, " 5 1234567 ", " -5 1234567 ", 1),
	} {
		if p, err := parseStat(1, []byte(b)); err == nil {
			t.Errorf("parseStat(%q) = %+v, nil; want an error", b, p)
		}
	}
}

// A process whose command name holds spaces and parentheses parses right
// from the real /proc: the kernel takes the name from the executable's
// file name.
func TestStatOddCommandName(t *testing.T) {
	name := filepath.Join(t.TempDir(), "x) (y z)")
	if err := os.Symlink(testproc.Executable(), name); err != nil {
		t.Fatal(err)
	}
	rp := newReadyPipe(t)
	cmd := helperCommand("sleep", "p")
	cmd.Path, cmd.Args[0] = name, name
	rp.Pass(cmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	testproc.Start(t, cmd)
	r := rp.wait(t, "p")["p"]
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(r.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "(x) (y z))") {
		t.Fatalf("/proc/%d/stat = %q: the command name is not the odd one", r.Pid, raw)
	}
	p, err := Stat(r.Pid)
	if err != nil {
		t.Fatal(err)
	}
	want := Proc{Pid: r.Pid, PPid: os.Getpid(), Pgid: r.Pid, Sid: p.Sid, State: p.State, Start: r.Start}
	if !sameProc(p, want) || !strings.ContainsRune("RS", rune(p.State)) {
		t.Errorf("Stat(%q) = %+v, want %+v in state R or S", raw, p, want)
	}
	if sid, _ := unix.Getsid(0); p.Sid != sid {
		t.Errorf("Stat: sid %d, want %d", p.Sid, sid)
	}
}

// FileHolders finds the processes that have a file open, here through a
// helper holding a lock and the test process itself.
func TestFileHolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.lock")
	rp := newReadyPipe(t)
	startHelper(t, "lock-hold", helperOpts{tag: "holder", args: []string{path}, ready: rp})
	holder := rp.wait(t, "holder")["holder"]
	pids := func() []int {
		ps, err := FileHolders(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, p := range ps {
			out = append(out, p.Pid)
		}
		return out
	}
	if got := pids(); !slices.Equal(got, []int{holder.Pid}) {
		t.Errorf("FileHolders = %v, want [%d]", got, holder.Pid)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := pids(); !slices.Contains(got, os.Getpid()) || !slices.Contains(got, holder.Pid) {
		t.Errorf("FileHolders = %v, want %d and %d", got, os.Getpid(), holder.Pid)
	}
	if _, err := FileHolders(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Errorf("FileHolders(absent file): no error")
	}
}

// A process whose main thread has exited while other threads run (what
// pthread_exit in main does) shows state Z in /proc/PID/stat, yet it is
// alive: it runs, and it holds its descriptors and locks. Counting it as
// dead would let a Tree.Stop report success while it lives on.
func TestZombieLeaderIsAlive(t *testing.T) {
	rp := newReadyPipe(t)
	cmd := startHelper(t, "zombie-leader", helperOpts{tag: "p", ready: rp, attr: &syscall.SysProcAttr{Setsid: true}})
	r := rp.wait(t, "p")["p"]
	testproc.Eventually(t, waitLimit, func() bool {
		p, err := Stat(r.Pid)
		return err == nil && p.State == 'Z'
	}, "timed out after %v waiting for the helper's main thread to exit", waitLimit)
	// It does run: other threads are there, and its pidfd is not
	// readable (the kernel does not consider it exited).
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(r.Pid) + "/task")
	if err != nil || len(tasks) < 2 {
		t.Fatalf("/proc/%d/task: %d entries, %v; want the live threads", r.Pid, len(tasks), err)
	}
	// The kernel says so in /proc/PID/stat too: num_threads (field 20)
	// counts the live threads, where a real zombie has 1.
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(r.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if n, _ := strconv.Atoi(f[17]); n < 2 {
		t.Fatalf("/proc/%d/stat has num_threads %d, want the live threads counted", r.Pid, n)
	}
	h := openHandle(t, r)
	if done, err := WaitExit([]*Handle{h}, 10*time.Millisecond); err != nil || len(done) != 0 {
		t.Fatalf("WaitExit = %v, %v: the process has not exited", done, err)
	}

	line := statLineThreads(r.Pid, "x", 'Z', 1, r.Pid, r.Pid, r.Start, 3)
	if p, err := parseStat(r.Pid, []byte(line)); err != nil || p.Zombie() {
		t.Errorf("parseStat(%q) = %+v, %v: state Z with 3 threads is not a zombie", line, p, err)
	}
	if !Alive(r) {
		t.Errorf("Alive = false for a running process whose main thread exited")
	}
	tree := &Tree{Leader: r}
	ms, err := tree.Members()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Pid != r.Pid {
		t.Errorf("Tree{Leader}.Members() = %+v, want the running process %d", ms, r.Pid)
	}
	if _, err := tree.Stop(time.Second, time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if done, _ := WaitExit([]*Handle{h}, 0); len(done) != 1 {
		t.Errorf("after Tree.Stop returned, the process still runs")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// DescendantProcs walks the kernel's children lists (of every thread: a Go
// program forks from any of its threads) and finds what a scan of the
// whole process table finds.
func TestDescendantProcs(t *testing.T) {
	rp := newReadyPipe(t)
	startHelper(t, "leader", helperOpts{tag: "leader", ready: rp, attr: &syscall.SysProcAttr{Setsid: true},
		args: []string{"child:sleep:a", "pgrp:leader:b", "escape:sleep:escapee"}})
	procs := rp.wait(t, "leader", "a", "b", "escapee")
	for _, tag := range []string{"a", "b", "escapee"} { // the leader is exec's to wait for
		t.Cleanup(func() { killAndReap(t, procs[tag]) })
	}
	escapee := procs["escapee"]
	testproc.Eventually(t, waitLimit, func() bool {
		p, err := Stat(escapee.Pid)
		return err == nil && p.PPid == os.Getpid()
	}, "timed out after %v waiting for the escapee to be adopted", waitLimit)
	pidsOf := func(ps []Proc) []int {
		var out []int
		for _, p := range ps {
			if !p.Zombie() {
				out = append(out, p.Pid)
			}
		}
		slices.Sort(out)
		return out
	}
	leader := procs["leader"].Pid
	walked, err := DescendantProcs(leader)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	want := []int{procs["a"].Pid, procs["b"].Pid}
	slices.Sort(want)
	if got := pidsOf(walked); !slices.Equal(got, want) {
		t.Errorf("DescendantProcs(leader) = %v, want %v", got, want)
	}
	if got, scanned := pidsOf(walked), pidsOf(Descendants(all, leader)); !slices.Equal(got, scanned) {
		t.Errorf("DescendantProcs(leader) = %v, the scan finds %v", got, scanned)
	}
	for _, p := range walked {
		if p.Zombie() {
			continue // the exited middle process, reaped any moment now
		}
		if st, err := Stat(p.Pid); err != nil || st.Ref() != p.Ref() || st.PPid != p.PPid {
			t.Errorf("DescendantProcs gave %+v, Stat says %+v, %v", p, st, err)
		}
	}
	self, err := DescendantProcs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for tag, r := range procs {
		if !slices.Contains(pidsOf(self), r.Pid) {
			t.Errorf("DescendantProcs(self) = %v lacks %s (%d)", pidsOf(self), tag, r.Pid)
		}
	}
	if got, err := DescendantProcs(1 << 30); err != nil || len(got) != 0 {
		t.Errorf("DescendantProcs(nonexistent) = %v, %v; want none", got, err)
	}
}
