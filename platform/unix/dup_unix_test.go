//go:build unix

package unix

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDupOnto(t *testing.T) {
	dir := t.TempDir()
	from, err := os.Create(filepath.Join(dir, "from"))
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	to, err := os.Create(filepath.Join(dir, "to"))
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()
	if !closeOnExec(t, to) {
		t.Fatal("os.Create returned an inheritable descriptor")
	}
	if err := DupOnto(int(from.Fd()), int(to.Fd())); err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(int(from.Fd()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(int(to.Fd()), &b); err != nil {
		t.Fatal(err)
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		t.Errorf("after DupOnto the target refers to another file")
	}
	if closeOnExec(t, to) {
		t.Errorf("the new descriptor is close-on-exec; it must be inherited")
	}
	if !closeOnExec(t, from) {
		t.Errorf("DupOnto changed the source descriptor's flags")
	}
	// Writes through either share the offset: one open file description.
	if _, err := to.WriteString("ab"); err != nil {
		t.Fatal(err)
	}
	if off, _ := from.Seek(0, 1); off != 2 {
		t.Errorf("source offset %d after writing 2 bytes through the duplicate", off)
	}
}
