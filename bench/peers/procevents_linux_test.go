//go:build linux

package peers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// procWatch records when each agent's processes began and ended, from
// the kernel's own process events (the connector, root only): the moment
// the exec of a process carrying the agent's tag returned, and the moment
// such a process exited, to the nanosecond on CLOCK_MONOTONIC. The /proc
// scans find a process or its absence only at their next look (and a
// start's scans begin only once the start call has returned), so they
// measure themselves as much as the supervisor.
//
// A process's tag is read from its environ when its exec event arrives.
// A process that execs twice in quick succession (s6's run script execs
// env, which execs bash) may be read after its second exec and credited
// with the first's time, a fraction of a millisecond early.
type procWatch struct {
	fd   int
	stop atomic.Bool
	mu   sync.Mutex
	// execs and exits hold, per tag, the exec (with the process's role)
	// and exit times seen, in order; tags names the tag of each process
	// seen exec'd, until it exits (an exit leaves no environ to read).
	execs map[string][]execStamp
	exits map[string][]int64
	tags  map[int]string
	done  chan struct{}
}

// execStamp is one exec of a tagged process: when, and its role.
type execStamp struct {
	ts   int64
	role string
}

// Process events connector constants (linux/connector.h, linux/cn_proc.h).
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procEventExec     = 2
	procEventExit     = 0x80000000
	nlmsgHdrLen       = 16
	cnMsgLen          = 20
)

// watchProcs starts listening for process events.
func watchProcs() (*procWatch, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("process events socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc, Pid: uint32(os.Getpid())}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("process events bind: %w", err)
	}
	// A bigger buffer, so that a burst of execs is not dropped, and a
	// receive timeout, so that the reader sees close.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000})
	msg := make([]byte, nlmsgHdrLen+cnMsgLen+4)
	le := binary.LittleEndian
	le.PutUint32(msg[0:], uint32(len(msg)))      // nlmsg_len
	le.PutUint16(msg[4:], unix.NLMSG_DONE)       // nlmsg_type
	le.PutUint32(msg[12:], uint32(os.Getpid()))  // nlmsg_pid
	le.PutUint32(msg[nlmsgHdrLen:], cnIdxProc)   // cn_msg.id.idx
	le.PutUint32(msg[nlmsgHdrLen+4:], cnValProc) // cn_msg.id.val
	le.PutUint16(msg[nlmsgHdrLen+16:], 4)        // cn_msg.len
	le.PutUint32(msg[nlmsgHdrLen+cnMsgLen:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("process events listen: %w", err)
	}
	w := &procWatch{fd: fd, execs: map[string][]execStamp{}, exits: map[string][]int64{}, tags: map[int]string{}, done: make(chan struct{})}
	go w.read()
	return w, nil
}

func (w *procWatch) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	le := binary.LittleEndian
	for !w.stop.Load() {
		n, _, err := unix.Recvfrom(w.fd, buf, 0)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		for b := buf[:n]; len(b) >= nlmsgHdrLen; {
			l := int(le.Uint32(b))
			if l < nlmsgHdrLen || l > len(b) {
				break
			}
			ev := b[nlmsgHdrLen:l]
			b = b[min((l+3)&^3, len(b)):]
			// cn_msg, then proc_event: what, cpu, timestamp_ns, then
			// the event's data, which for an exec and an exit begins
			// with the pid and the tgid.
			if len(ev) < cnMsgLen+24 || le.Uint32(ev) != cnIdxProc {
				continue
			}
			pe := ev[cnMsgLen:]
			what, ts := le.Uint32(pe), int64(le.Uint64(pe[8:]))
			pid, tgid := int(le.Uint32(pe[16:])), int(le.Uint32(pe[20:]))
			switch {
			case what == procEventExec:
				if tag, role := tagOf(tgid); tag != "" {
					w.mu.Lock()
					w.execs[tag] = append(w.execs[tag], execStamp{ts, role})
					w.tags[tgid] = tag
					w.mu.Unlock()
				}
			case what == procEventExit && pid == tgid:
				w.mu.Lock()
				if tag, ok := w.tags[tgid]; ok {
					w.exits[tag] = append(w.exits[tag], ts)
					delete(w.tags, tgid)
				}
				w.mu.Unlock()
			}
		}
	}
}

// tagOf is the tag and the role in pid's environ, or "" (the scans
// read them the same way).
func tagOf(pid int) (tag, role string) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", ""
	}
	for kv := range strings.SplitSeq(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, tagEnv+"="); ok {
			tag = v
		} else if v, ok := strings.CutPrefix(kv, "ROLE="); ok {
			role = v
		}
	}
	return tag, role
}

// first returns how long after since (CLOCK_MONOTONIC nanoseconds) the
// first exec of a process of tag was, if one was seen; whole, when the
// last of the tree's three roles (see agentScript) first ran, if all did.
// The events of a start are read within moments of it; each waits up to
// 100 ms for the reader to catch up.
func (w *procWatch) first(tag string, since int64) (time.Duration, bool) {
	return w.execAfter(tag, since, nil)
}

func (w *procWatch) whole(tag string, since int64) (time.Duration, bool) {
	return w.execAfter(tag, since, []string{"agent", "worker", "grand"})
}

// execAfter is the first exec of tag after since of each of roles (any,
// when there are none), and the latest of those.
func (w *procWatch) execAfter(tag string, since int64, roles []string) (time.Duration, bool) {
	var last int64
	if !testproc.Until(100*time.Millisecond, func() bool {
		w.mu.Lock()
		firsts := map[string]int64{}
		for _, e := range w.execs[tag] {
			role := e.role
			if len(roles) == 0 {
				role = ""
			}
			if _, had := firsts[role]; e.ts >= since && !had {
				firsts[role] = e.ts
			}
		}
		w.mu.Unlock()
		all := len(firsts) > 0
		for _, r := range roles {
			if _, ok := firsts[r]; !ok {
				all = false
			}
		}
		last = -1
		for r, ts := range firsts {
			if len(roles) == 0 || slices.Contains(roles, r) {
				last = max(last, ts)
			}
		}
		return all
	}) {
		return 0, false
	}
	return time.Duration(last - since), true
}

// lastExit returns how long after since the last exit of a process of
// tag was, once tag has no process left that the watch saw exec'd, and
// at least one exited after since; it waits up to 100 ms for the reader
// to catch up.
func (w *procWatch) lastExit(tag string, since int64) (time.Duration, bool) {
	var d time.Duration
	var ok bool
	if testproc.Until(100*time.Millisecond, func() bool {
		d, ok = w.exitSince(tag, since, false)
		return ok
	}) {
		return d, true
	}
	return w.exitSince(tag, since, true)
}

// exitSince is one look of lastExit; late says the reader has had its
// time.
func (w *procWatch) exitSince(tag string, since int64, late bool) (time.Duration, bool) {
	w.mu.Lock()
	live := false
	for pid, t := range w.tags {
		if t != tag {
			continue
		}
		// Once the reader has had its time, one whose exit event
		// was lost (the socket's buffer overflowed) is gone or a
		// zombie.
		if p, err := punix.Stat(pid); late && (err != nil || p.Zombie()) {
			delete(w.tags, pid)
			continue
		}
		live = true
	}
	last := int64(-1)
	for _, ts := range w.exits[tag] {
		if ts >= since {
			last = max(last, ts)
		}
	}
	w.mu.Unlock()
	if !live && last >= 0 {
		return time.Duration(last - since), true
	}
	return 0, false
}

func (w *procWatch) close() {
	w.stop.Store(true)
	<-w.done
	unix.Close(w.fd)
}

// monoNow is CLOCK_MONOTONIC in nanoseconds, the clock of the events.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// The watch sees the exec of a tagged process, at a time between the
// request and the moment the process is known to run.
func TestProcWatch(t *testing.T) {
	w, err := watchProcs()
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("SKIP process events need root: %v", err)
		}
		t.Fatal(err)
	}
	defer w.close()
	tag := fmt.Sprintf("execwatch-%d", os.Getpid())
	begin := monoNow()
	cmd := exec.Command("sleep", "1")
	cmd.Env = append(os.Environ(), tagEnv+"="+tag)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	started := time.Duration(monoNow() - begin)
	d, ok := w.first(tag, begin)
	if !ok {
		t.Fatal("no exec event of the tagged sleep")
	}
	if d <= 0 || d > started+50*time.Millisecond {
		t.Errorf("exec at %v after the request; the start returned after %v", d, started)
	}
	if _, ok := w.first("no-such-tag", begin); ok {
		t.Error("an exec of a tag nobody ran")
	}
	if _, ok := w.whole(tag, begin); ok {
		t.Error("a whole tree of a lone sleep")
	}
	// A tree of the three roles, in a process group of its own.
	treeTag := tag + "-tree"
	tree := exec.Command("sh", "-c", "ROLE=worker sleep 1 & ROLE=grand sleep 1 & ROLE=agent exec sleep 1")
	tree.Env = append(os.Environ(), tagEnv+"="+treeTag)
	tree.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	treeBegin := monoNow()
	if err := tree.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-tree.Process.Pid, syscall.SIGKILL); _ = tree.Wait() }()
	if d, ok := w.whole(treeTag, treeBegin); !ok || d <= 0 {
		t.Errorf("the whole tree: %v, %v", d, ok)
	}
	if _, ok := w.lastExit(tag, begin); ok {
		t.Error("an exit of a process that runs")
	}
	killed := time.Duration(monoNow() - begin)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	reaped := time.Duration(monoNow() - begin)
	e, ok := w.lastExit(tag, begin)
	if !ok {
		t.Fatal("no exit event of the killed sleep")
	}
	if e < killed || e > reaped {
		t.Errorf("exit at %v after the request; killed at %v, reaped at %v", e, killed, reaped)
	}
}
