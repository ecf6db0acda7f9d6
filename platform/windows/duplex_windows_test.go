package windows

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

func startEcho(t *testing.T) (*os.File, *exec.Cmd, *bufio.Reader) {
	t.Helper()
	own, child, err := DuplexPair("tether-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })
	cmd := testproc.Command("helper", "echo", fmt.Sprintf("%#x", child.Value()))
	cmd.SysProcAttr = &syscall.SysProcAttr{AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(child.Value())}}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	child.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return own, cmd, bufio.NewReader(stdout)
}

// Lines go both ways; closing this end is EOF for the child.
func TestDuplexPairEOFWhenOwnerCloses(t *testing.T) {
	own, cmd, stdout := startEcho(t)
	fmt.Fprintln(own, "ping")
	_ = own.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(own).ReadString('\n')
	if err != nil || line != "echo ping\n" {
		t.Fatalf("read %q %v", line, err)
	}
	own.Close()
	said, _ := stdout.ReadString('\n')
	if said != "eof <nil>\n" {
		t.Fatalf("child said %q, want eof", said)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// The child dies by TerminateProcess: a read on this end returns EOF.
func TestDuplexPairEOFWhenChildDies(t *testing.T) {
	own, cmd, _ := startEcho(t)
	fmt.Fprintln(own, "ping")
	rd := bufio.NewReader(own)
	_ = own.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_, err := rd.ReadString('\n')
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read after the child died: %v, want EOF", err)
	}
}

// A deadline ends a read that has nothing to read.
func TestDuplexPairDeadline(t *testing.T) {
	own, _, _ := startEcho(t)
	_ = own.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := own.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want a deadline error", err)
	}
}
