package unix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// The helper "removeall DIR" builds and removes a tree under DIR (see
// removeAllIn), as whatever user it runs as.
func init() {
	testproc.Register("removeall", func(args []string) int {
		if err := removeAllIn(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	})
}

// removeAllIn makes, under dir, what an agent may leave in its private
// directory: a subdirectory made 0500 with a file in it, one made 0000
// below another, and a link to a directory outside made 0500; then it
// removes it all with RemoveAll and checks that the link's target was
// neither followed nor changed.
func removeAllIn(dir string) error {
	tree := filepath.Join(dir, "private")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(tree, "ro"), filepath.Join(tree, "deep", "none"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	for _, f := range []string{filepath.Join(tree, "ro", "f"), filepath.Join(tree, "deep", "none", "g"), filepath.Join(outside, "keep")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			return err
		}
	}
	if err := os.Symlink(outside, filepath.Join(tree, "link")); err != nil {
		return err
	}
	for d, mode := range map[string]fs.FileMode{filepath.Join(tree, "ro"): 0o500, filepath.Join(tree, "deep", "none"): 0, outside: 0o500} {
		if err := os.Chmod(d, mode); err != nil {
			return err
		}
	}
	if err := RemoveAll(tree); err != nil {
		return fmt.Errorf("RemoveAll: %w", err)
	}
	if _, err := os.Lstat(tree); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is still there (%v)", tree, err)
	}
	fi, err := os.Stat(outside)
	if err != nil || fi.Mode().Perm() != 0o500 {
		return fmt.Errorf("the link's target %s was changed: %v %v", outside, fi.Mode(), err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "keep")); err != nil {
		return fmt.Errorf("the link was followed: %v", err)
	}
	return os.Chmod(outside, 0o700)
}

// RemoveAll removes a private directory that its agent made partly
// unremovable for its own user (chmod 500 on a directory holding files),
// giving the user's directories their permissions back without following
// a link. Root is not bound by permissions, so as root the test runs the
// removal as nobody.
func TestRemoveAllRestoresOwnerPermissions(t *testing.T) {
	if os.Geteuid() != 0 {
		if err := removeAllIn(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		return
	}
	const nobody = 65534
	// Not t.TempDir: its parents are 0700, closed to nobody.
	bin, err := os.MkdirTemp("", "tether-removeall-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "unix.test")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(bin, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := testproc.Command("removeall", work)
	cmd.Path = exe
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the helper did not finish within %v", waitLimit)
	}
	if err != nil {
		t.Fatalf("as nobody: %v: %s", err, strings.TrimSpace(string(out)))
	}
}
