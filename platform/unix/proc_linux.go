package unix

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Stat reads one process from /proc.
func Stat(pid int) (Proc, error) {
	var buf [512]byte
	b, err := readSmall("/proc/"+strconv.Itoa(pid)+"/stat", buf[:0])
	if err != nil {
		if os.IsNotExist(err) {
			return Proc{}, ErrNoProcess
		}
		return Proc{}, err
	}
	return parseStat(pid, b)
}

// parseStat parses /proc/PID/stat. The command name is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseStat(pid int, b []byte) (Proc, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return Proc{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	num := func(k int) int {
		n, _ := strconv.Atoi(string(f[k]))
		return n
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return Proc{}, fmt.Errorf("/proc/%d/stat: malformed start time", pid)
	}
	// f[17] is field 20, num_threads.
	return Proc{Pid: pid, State: f[0][0], PPid: num(1), Pgid: num(2), Sid: num(3), Start: start, threads: num(17)}, nil
}

// Processes scans the process table. Processes that exit during the scan
// are left out.
func Processes() ([]Proc, error) {
	entries, err := readDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make([]Proc, 0, len(entries))
	for _, e := range entries {
		if !e.dir {
			continue
		}
		pid, err := strconv.Atoi(e.name)
		if err != nil || pid <= 0 {
			continue
		}
		p, err := Stat(pid)
		if err != nil {
			continue
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// FileHolders returns the processes that have the file at path open (by
// device and inode). Processes whose descriptors cannot be read are left
// out.
func FileHolders(path string) ([]Proc, error) {
	want, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	procs, err := Processes()
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, p := range procs {
		if p.Zombie() {
			continue
		}
		dir := "/proc/" + strconv.Itoa(p.Pid) + "/fd/"
		fds, err := readDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			fi, err := os.Stat(dir + fd.name)
			if err == nil && os.SameFile(fi, want) {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}

// childrenOf returns the children of pid from the children lists of all
// its threads (a child belongs to the thread that forked it).
func childrenOf(pid int) ([]int, error) {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := readDir(base)
	if err != nil {
		// Gone, or not ours to read, or it exited while its directory
		// was read: either way it has no children we could act on.
		return nil, nil
	}
	var out []int
	var buf [256]byte
	for _, tid := range tids {
		b, err := readSmall(base+tid.name+"/children", buf[:0])
		if err != nil {
			continue
		}
		for f := range bytes.FieldsSeq(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// DescendantProcs returns the processes below root by walking the
// kernel's children lists, touching only the tree instead of the whole
// process table. Like any walk of /proc it is not atomic: a process being
// reparented during the walk can be missed, so a subreaper confirms an
// empty tree by having no children left (see Reaper.ReapNow).
//
// A dying process's children move between its threads' lists and then to
// the subreaper, so one walk can miss them; the walk is repeated until two
// in a row agree.
func DescendantProcs(root int) ([]Proc, error) { return stableWalk(root, nil) }

// walkOnce is DescendantProcs with one walk.
func walkOnce(root int) ([]Proc, error) { return walkDescendants(root, nil) }

// stableWalk walks below root until two walks in a row agree, leaving
// out the children of root that skip names and everything below them.
func stableWalk(root int, skip func(pid int) bool) ([]Proc, error) {
	prev, err := walkDescendants(root, skip)
	if err != nil {
		return nil, err
	}
	for range 10 {
		cur, err := walkDescendants(root, skip)
		if err != nil {
			return nil, err
		}
		if sameRefs(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

func sameRefs(a, b []Proc) bool {
	if len(a) != len(b) {
		return false
	}
	in := make(map[Ref]bool, len(a))
	for _, p := range a {
		in[p.Ref()] = true
	}
	for _, p := range b {
		if !in[p.Ref()] {
			return false
		}
	}
	return true
}

// walkDescendants walks the kernel's children lists below root once,
// leaving out the children of root that skip (if not nil) names, with
// everything below them.
func walkDescendants(root int, skip func(pid int) bool) ([]Proc, error) {
	var out []Proc
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		kids, err := childrenOf(pid)
		if err != nil {
			return nil, err
		}
		for _, c := range kids {
			if seen[c] || pid == root && skip != nil && skip(c) {
				continue
			}
			seen[c] = true
			if p, err := Stat(c); err == nil {
				out = append(out, p)
				queue = append(queue, c)
			}
		}
	}
	return out, nil
}

// Environ returns the environment pid was started with, as
// /proc/PID/environ keeps it; only the process's own user (or root) may
// read it.
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, err
	}
	var env []string
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env, nil
}
