//go:build unix

package unix

import "errors"

// ErrNoProcess reports that a process does not exist, or exists with a
// different start time than expected (its PID was reused).
var ErrNoProcess = errors.New("no such process")

// Proc is one process as seen in a scan of the process table.
type Proc struct {
	Pid   int
	PPid  int
	Pgid  int
	Sid   int
	State byte   // 'R', 'S', 'D', 'T', 'Z', ...; 'Z' is a zombie
	Start uint64 // start time in platform units; with Pid, names one process forever
	// threads is the number of threads, where the platform says. A
	// process whose main thread exited while others run shows state Z
	// with more than one thread: it is not a zombie.
	threads int
}

// Zombie reports whether the process has exited and only waits to be reaped.
func (p Proc) Zombie() bool {
	return p.State == 'X' || p.State == 'Z' && p.threads <= 1
}

// Ref names a process across PID reuse: a PID together with its start time.
type Ref struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Ref returns the reference of p.
func (p Proc) Ref() Ref { return Ref{Pid: p.Pid, Start: p.Start} }

// Alive reports whether the process r names still runs (a zombie counts as
// dead). A PID whose start time differs is another process.
func Alive(r Ref) bool {
	p, err := Stat(r.Pid)
	if err != nil {
		return false
	}
	return p.Start == r.Start && !p.Zombie()
}

// Descendants returns the processes of procs below root in the parent tree,
// root excluded.
func Descendants(procs []Proc, root int) []Proc {
	children := make(map[int][]Proc, len(procs))
	for _, p := range procs {
		children[p.PPid] = append(children[p.PPid], p)
	}
	var out []Proc
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if seen[c.Pid] {
				continue
			}
			seen[c.Pid] = true
			out = append(out, c)
			queue = append(queue, c.Pid)
		}
	}
	return out
}
