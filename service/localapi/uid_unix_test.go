//go:build unix

package localapi

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
)

const nobody = 65534

// TestOtherUIDRefused: a client of another uid that can reach the socket is
// refused by the peer-credential check, not by the file's mode. The test
// opens the way on purpose (directory 0711, socket 0666, which the service
// never does) and runs the client as uid 65534.
func TestOtherUIDRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "running a client as another uid needs root")
	}
	dir := shortDir(t)
	// The helper is a copy of the test binary where uid 65534 can run it:
	// the go tool builds it in a directory only we can enter.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "helper")
	copyFile(t, exe, helper, 0o755)
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}

	f := newFake()
	ts := serveAt(t, f, filepath.Join(dir, "s", "t.sock"))
	run := func() helperResult {
		t.Helper()
		// A plain dial: client.Client would refuse another user's
		// service itself, before this one's check could.
		cmd := testproc.Command("rawstatus", ts.path)
		cmd.Path = helper
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, stderr.Bytes())
		}
		var res helperResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("helper said %q: %v", out, err)
		}
		t.Logf("client as uid %d: %+v", nobody, res)
		if res.UID != nobody {
			t.Fatalf("helper ran as uid %d, want %d", res.UID, nobody)
		}
		return res
	}

	// As the service leaves it (socket 0600 in a 0700 directory), the
	// socket is out of reach.
	if res := run(); res.Error != nil || !strings.Contains(res.Other, "permission denied") {
		t.Errorf("uid %d with the service's modes: %+v, want permission denied", nobody, res)
	}

	// Opened up, the connection is made and the uid check refuses it.
	if err := os.Chmod(filepath.Dir(ts.path), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ts.path, 0o666); err != nil {
		t.Fatal(err)
	}
	res := run()
	if res.Error == nil || res.Error.Code != api.CodeForbidden || res.Agent != 0 {
		t.Fatalf("uid %d with the socket open: %+v, want forbidden", nobody, res)
	}
	if !strings.Contains(res.Error.Message, "uid 65534") {
		t.Errorf("the refusal does not name the caller: %q", res.Error.Message)
	}
	// The service's own user still gets in.
	if _, err := client.New(ts.path).Status(testCtx(t)); err != nil {
		t.Errorf("own uid: %v", err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
