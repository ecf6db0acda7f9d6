package windows

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func allowedSIDs(t *testing.T, path string) (sids []string, protected bool) {
	t.Helper()
	sids, protected, err := AllowedSIDs(path)
	if err != nil {
		t.Fatal(err)
	}
	return sids, protected
}

// A private directory admits its user alone. Under Wine, which derives a
// file's descriptor from its Unix mode instead of storing it, SYSTEM is
// listed too and the protection bit is not kept; a directory made the
// ordinary way still shows the difference there (it admits Everyone).
func TestMkdirPrivateAdmitsOnlyTheUser(t *testing.T) {
	user, err := UserSID()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tempDir(t), "private")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{user: true}
	if underWine() {
		allowed["S-1-5-18"] = true
	}
	sids, protected := allowedSIDs(t, dir)
	if len(sids) == 0 {
		t.Fatal("the DACL grants nothing, not even to the user")
	}
	for _, s := range sids {
		if !allowed[s] {
			t.Errorf("private dir grants access to %s (DACL for %v)", s, sids)
		}
	}
	if !underWine() && !protected {
		t.Error("DACL is not protected from inheritance")
	}
	if err := MkdirPrivate(dir); !errors.Is(err, os.ErrExist) {
		t.Errorf("second MkdirPrivate: %v, want ErrExist", err)
	}
	if underWine() {
		plain := filepath.Join(tempDir(t), "plain")
		if err := os.Mkdir(plain, 0o700); err != nil {
			t.Fatal(err)
		}
		sids, _ := allowedSIDs(t, plain)
		everyone := false
		for _, s := range sids {
			everyone = everyone || s == "S-1-1-0"
		}
		if !everyone {
			t.Logf("a plain directory does not admit Everyone here either (%v): the check above proves less", sids)
		}
	}
}

func TestSecureDir(t *testing.T) {
	root := tempDir(t)
	dir := filepath.Join(root, "a", "b")
	if err := SecureDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SecureDir(dir); err != nil {
		t.Fatalf("again: %v", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var ufe *UnsafeFileError
	if err := SecureDir(file); !errors.As(err, &ufe) {
		t.Fatalf("SecureDir(file): %v, want *UnsafeFileError", err)
	}
}

func TestLockFile(t *testing.T) {
	path := filepath.Join(tempDir(t), "x.owner")
	a, err := OpenLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := TryLockFile(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLockFile(b); !errors.Is(err, ErrFileLocked) {
		t.Fatalf("second lock: %v, want ErrFileLocked", err)
	}
	if err := UnlockFile(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLockFile(b); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	if f, err := OpenLockFile(filepath.Dir(path)); err == nil {
		f.Close()
		t.Fatal("OpenLockFile opened a directory")
	}
}
