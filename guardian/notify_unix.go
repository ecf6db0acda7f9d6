//go:build unix

package guardian

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/probe"
)

// datagramNotify adapts the platform's datagram socket to notifySource.
type datagramNotify struct{ d *punix.Datagram }

func listenNotify(path string) (notifySource, error) {
	d, err := punix.ListenDatagram(path)
	if err != nil {
		return nil, err
	}
	return datagramNotify{d}, nil
}

func (n datagramNotify) Receive(buf []byte) (int, notifySender, bool, error) {
	k, from, trunc, err := n.d.Receive(buf)
	return k, &datagramSender{from}, trunc, err
}

// datagramSender is the platform's Sender as a notifySender.
type datagramSender struct{ s punix.Sender }

func (d *datagramSender) PID() int { return d.s.PID }

// GoneOwn: the agent runs as the guardian's user.
func (d *datagramSender) GoneOwn() bool { return d.s.UID == os.Geteuid() && d.s.Exited() }

func (d *datagramSender) Close() { d.s.Close() }

func (n datagramNotify) Path() string { return n.d.Path() }
func (n datagramNotify) Close() error { return n.d.Close() }

// member says whether pid is a live process of the agent's tree: the
// sender of a notification must be.
func (g *guardian) member(pid int) bool {
	if g.tree == nil {
		return false
	}
	if pid == g.tree.Leader.Pid {
		// The agent's main process, the usual sender: no scan of the
		// tree. It is alive, or not yet reaped, as it just sent.
		return true
	}
	ms, err := g.tree.Members()
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.Pid == pid {
			return true
		}
	}
	return false
}

// checkRunner runs an exec check's command through the guardian's reaper,
// which reaps every child of the guardian (os/exec's Wait would race it),
// in a session of its own so that its whole group is killed when the
// check's time is up.
func (g *guardian) checkRunner() probe.Runner {
	return func(ctx context.Context, c probe.Cmd, out io.Writer) error {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer null.Close()
		rd, wr, err := os.Pipe()
		if err != nil {
			return err
		}
		defer rd.Close()
		spec := punix.SpawnSpec{Path: c.Path, Argv: c.Argv, Dir: c.Dir, Env: c.Env, Stdin: null, Stdout: wr, Stderr: wr}
		pid, exit, err := g.reaper.Start(func() (int, error) { return punix.StartSession(spec) })
		wr.Close()
		if err != nil {
			return err
		}
		copied := make(chan struct{})
		go func() {
			_, _ = io.Copy(out, rd)
			close(copied)
		}()
		var st punix.ExitStatus
		select {
		case st = <-exit:
		case <-ctx.Done():
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			st = <-exit
		}
		// A descendant of the check may still hold the pipe: its
		// output is not worth waiting for.
		_ = rd.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		<-copied
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e := toExit(st); e.Code != 0 {
			return errors.New(e.String())
		}
		return nil
	}
}
