package guardian

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether-dev/tether/internal/testdir"
)

// PrivateDirs finds the private directories of both layouts, with the key
// each was made for, and nothing else: not the identities' directories,
// not a file or a directory named otherwise, not another identity's
// directory inside one.
func TestPrivateDirsFindsBothLayouts(t *testing.T) {
	root := testdir.Temp(t)
	a, b := Key("a@relay"), Key("b@relay")
	nested := filepath.Join(root, a, a+"-"+strings.Repeat("01", 16))
	flat := filepath.Join(root, b+"-"+strings.Repeat("02", 16))
	for _, d := range []string{
		nested, flat,
		filepath.Join(root, b),                                 // an identity's directory, empty
		filepath.Join(root, a, b+"-"+strings.Repeat("03", 16)), // another identity's name inside a's
		filepath.Join(root, a, "cache"),
		filepath.Join(root, "not-tethers"),
	} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, a+"-"+strings.Repeat("04", 16)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := PrivateDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(x, y PrivateDir) int { return strings.Compare(x.Path, y.Path) })
	want := []PrivateDir{{Path: nested, Key: a}, {Path: flat, Key: b}}
	slices.SortFunc(want, func(x, y PrivateDir) int { return strings.Compare(x.Path, y.Path) })
	if !slices.Equal(got, want) {
		t.Errorf("PrivateDirs = %v, want %v", got, want)
	}
	if got, err := PrivateDirs(filepath.Join(root, "missing")); err != nil || got != nil {
		t.Errorf("PrivateDirs of a missing root = %v, %v; want none and no error", got, err)
	}
	// Leftovers: all of it but the identities' directories themselves.
	left, err := Leftovers(root)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	wantLeft := []string{nested, flat, filepath.Join(root, a, b+"-"+strings.Repeat("03", 16)), filepath.Join(root, a, "cache"),
		filepath.Join(root, "not-tethers"), filepath.Join(root, a+"-"+strings.Repeat("04", 16))}
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Errorf("Leftovers = %v, want %v", left, wantLeft)
	}
	if got, err := Leftovers(filepath.Join(root, "missing")); err != nil || got != nil {
		t.Errorf("Leftovers of a missing root = %v, %v; want none and no error", got, err)
	}
}

// A new private directory is made in its identity's directory, and its
// name says whose it is.
func TestPrivateDirLayout(t *testing.T) {
	key := Key("x@relay")
	name, err := randomName(key)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := PrivateDirKey(name); !ok || k != key {
		t.Errorf("PrivateDirKey(%q) = %q, %v; want %q", name, k, ok, key)
	}
	if !isKey(key) || isKey("x") || isKey(name) {
		t.Errorf("IsKey: %q %v, %q %v, %q %v", key, isKey(key), "x", isKey("x"), name, isKey(name))
	}
	if got, want := identityDir("/p", key), filepath.Join("/p", key); got != want {
		t.Errorf("identityDir = %q, want %q", got, want)
	}
}
