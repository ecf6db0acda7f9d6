//go:build linux

package peers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// execWatch records when each agent's first program began, from the
// kernel's own exec events (the process events connector, root only):
// the moment the exec of a process carrying the agent's tag returned,
// to the nanosecond on CLOCK_MONOTONIC. The /proc scans find a process
// only at their next look, and begin only once the start call has
// returned, so they measure themselves as much as the supervisor.
//
// A process's tag is read from its environ when its exec event arrives.
// A process that execs twice in quick succession (s6's run script execs
// env, which execs bash) may be read after its second exec and credited
// with the first's time, a fraction of a millisecond early.
type execWatch struct {
	fd   int
	stop atomic.Bool
	mu   sync.Mutex
	// execs holds, per tag, the exec times seen, in order.
	execs map[string][]int64
	done  chan struct{}
}

// Process events connector constants (linux/connector.h, linux/cn_proc.h).
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procEventExec     = 2
	nlmsgHdrLen       = 16
	cnMsgLen          = 20
)

// watchExecs starts listening for exec events.
func watchExecs() (*execWatch, error) {
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
	w := &execWatch{fd: fd, execs: map[string][]int64{}, done: make(chan struct{})}
	go w.read()
	return w, nil
}

func (w *execWatch) read() {
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
			b = b[(l+3)&^3:]
			// cn_msg, then proc_event: what, cpu, timestamp_ns, then
			// for an exec the pid and the tgid.
			if len(ev) < cnMsgLen+24 || le.Uint32(ev) != cnIdxProc {
				continue
			}
			pe := ev[cnMsgLen:]
			if le.Uint32(pe) != procEventExec {
				continue
			}
			ts := int64(le.Uint64(pe[8:]))
			tgid := int(le.Uint32(pe[20:]))
			if tag := tagOf(tgid); tag != "" {
				w.mu.Lock()
				w.execs[tag] = append(w.execs[tag], ts)
				w.mu.Unlock()
			}
		}
	}
}

// tagOf is the tag in pid's environ, or "".
func tagOf(pid int) string {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for kv := range strings.SplitSeq(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, tagEnv+"="); ok {
			return v
		}
	}
	return ""
}

// first returns how long after since (CLOCK_MONOTONIC nanoseconds) the
// first exec of a process of tag was, if one was seen. The events of a
// start are read within moments of it; first waits up to 100 ms for the
// reader to catch up.
func (w *execWatch) first(tag string, since int64) (time.Duration, bool) {
	deadline := time.Now().Add(100 * time.Millisecond)
	for {
		w.mu.Lock()
		for _, ts := range w.execs[tag] {
			if ts >= since {
				w.mu.Unlock()
				return time.Duration(ts - since), true
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(time.Millisecond)
	}
}

func (w *execWatch) close() {
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
func TestExecWatch(t *testing.T) {
	w, err := watchExecs()
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
}
