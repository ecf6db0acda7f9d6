//go:build unix

package unix

import (
	"errors"
	"os"
	"reflect"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

// sameProc compares the fields Proc documents.
func sameProc(a, b Proc) bool {
	return a.Pid == b.Pid && a.PPid == b.PPid && a.Pgid == b.Pgid && a.Sid == b.Sid && a.State == b.State && a.Start == b.Start
}

func TestProcessesIncludesSelf(t *testing.T) {
	procs, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"pid": os.Getpid(), "ppid": os.Getppid(), "pgid": syscall.Getpgrp(), "sid": sid}
	var self *Proc
	for i := range procs {
		if procs[i].Pid == os.Getpid() {
			if self != nil {
				t.Fatalf("pid %d listed twice", os.Getpid())
			}
			self = &procs[i]
		}
	}
	if self == nil {
		t.Fatalf("Processes() (%d entries) does not include the calling process %d", len(procs), os.Getpid())
	}
	got := map[string]int{"pid": self.Pid, "ppid": self.PPid, "pgid": self.Pgid, "sid": self.Sid}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("self in Processes() = %v, want %v", got, want)
	}
	if self.Zombie() || self.Start == 0 {
		t.Errorf("self = %+v: want a live process with a start time", *self)
	}
	st, err := Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.Ref() != self.Ref() {
		t.Errorf("Stat(self).Ref() = %+v, Processes() has %+v", st.Ref(), self.Ref())
	}
	if !Alive(st.Ref()) {
		t.Errorf("Alive(self) = false")
	}
}

func TestStatNonexistent(t *testing.T) {
	for _, pid := range []int{1 << 30, 0, -1} {
		if p, err := Stat(pid); !errors.Is(err, ErrNoProcess) {
			t.Errorf("Stat(%d) = %+v, %v; want ErrNoProcess", pid, p, err)
		}
		if Alive(Ref{Pid: pid}) {
			t.Errorf("Alive(pid %d) = true", pid)
		}
	}
}

func TestAlive(t *testing.T) {
	rp := newReadyPipe(t)
	cmd := startHelper(t, "sleep", helperOpts{tag: "p", ready: rp})
	r := rp.wait(t, "p")["p"]
	if !Alive(r) {
		t.Fatalf("Alive(%+v) = false for a running helper", r)
	}
	for _, start := range []uint64{r.Start + 1, r.Start - 1} {
		if Alive(Ref{Pid: r.Pid, Start: start}) {
			t.Errorf("Alive(pid %d, start %d) = true; the process started at %d", r.Pid, start, r.Start)
		}
	}
	// Dead but not reaped yet: a zombie counts as dead.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, waitLimit, func() bool {
		p, err := Stat(r.Pid)
		return err == nil && p.Zombie()
	}, "timed out after %v waiting for the helper to become a zombie", waitLimit)
	if Alive(r) {
		t.Errorf("Alive(zombie) = true")
	}
	_ = cmd.Wait()
	if Alive(r) {
		t.Errorf("Alive(reaped) = true")
	}
}

func TestZombie(t *testing.T) {
	for state, want := range map[byte]bool{'R': false, 'S': false, 'D': false, 'T': false, 't': false, 'I': false, 'Z': true, 'X': true} {
		if got := (Proc{State: state}).Zombie(); got != want {
			t.Errorf("Proc{State: %q}.Zombie() = %v, want %v", state, got, want)
		}
	}
}

func TestDescendants(t *testing.T) {
	procs := []Proc{
		{Pid: 1, PPid: 0},
		{Pid: 10, PPid: 1},  // root
		{Pid: 11, PPid: 10}, // child
		{Pid: 12, PPid: 10}, // child
		{Pid: 13, PPid: 11}, // grandchild
		{Pid: 14, PPid: 13}, // great-grandchild
		{Pid: 20, PPid: 1},  // unrelated
		{Pid: 21, PPid: 20}, // unrelated child
		{Pid: 30, PPid: 31}, // a parent cycle off the tree
		{Pid: 31, PPid: 30},
	}
	pids := func(ps []Proc) []int {
		out := []int{}
		for _, p := range ps {
			out = append(out, p.Pid)
		}
		return out
	}
	for _, tc := range []struct {
		root int
		want []int
	}{
		{10, []int{11, 12, 13, 14}}, // breadth first, root excluded
		{11, []int{13, 14}},
		{14, []int{}},
		{99, []int{}},
		{20, []int{21}},
		{30, []int{31}}, // the cycle ends, without the root
		{1, []int{10, 20, 11, 12, 21, 13, 14}},
	} {
		if got := pids(Descendants(procs, tc.root)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Descendants(root %d) = %v, want %v", tc.root, got, tc.want)
		}
	}
	if got := Descendants(nil, 1); len(got) != 0 {
		t.Errorf("Descendants(nil) = %v", got)
	}
}

func TestProcessesSeesChild(t *testing.T) {
	rp := newReadyPipe(t)
	startHelper(t, "sleep", helperOpts{tag: "p", ready: rp, attr: &syscall.SysProcAttr{Setsid: true}})
	r := rp.wait(t, "p")["p"]
	procs, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Pid != r.Pid {
			continue
		}
		want := Proc{Pid: r.Pid, PPid: os.Getpid(), Pgid: r.Pid, Sid: r.Pid, State: p.State, Start: r.Start}
		if !sameProc(p, want) || p.Zombie() {
			t.Errorf("child in Processes() = %+v, want %+v", p, want)
		}
		if got := Descendants(procs, os.Getpid()); len(got) == 0 {
			t.Errorf("Descendants(self) is empty")
		}
		return
	}
	t.Errorf("Processes() does not list the child %d", r.Pid)
}
