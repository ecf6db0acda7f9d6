package guardian

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Private directories.
//
// Each identity has a directory of its own below the private root, named
// by its key (see Key), and each run of the identity makes its private
// directory in there, named by randomName:
//
//	<private root>/<key>/<key>-<32 hex digits>
//
// The identity's directory stays, empty, between runs of a service, as
// its lock file does; a service starting removes the empty ones
// (RemoveEmptyIdentityDirs). That is what lets hundreds of guardians whose owner died remove
// their private directories at the same moment: a removal locks the
// directory it removes from, and no two identities share that one. (With
// every private directory in the root, the guardians queued on the root's
// lock for a tenth of a second.) Guardians of earlier versions made their
// private directories in the root itself; PrivateDirs finds both.

// randomName is the name of a new private directory for the identity of
// key: the key, a dash and 32 hex digits.
func randomName(key string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return key + "-" + hex.EncodeToString(b[:]), nil
}

// identityDir is the directory below root that holds the private
// directories of the identity of key.
func identityDir(root, key string) string { return filepath.Join(root, key) }

// PrivateDirKey returns the key (see Key) of the identity that a private
// directory named name was made for, and false for a name no guardian
// makes.
func PrivateDirKey(name string) (string, bool) {
	const suffix = 1 + 32 // "-" and the hex digits of randomName
	if len(name) <= suffix || name[len(name)-suffix] != '-' {
		return "", false
	}
	if _, err := hex.DecodeString(name[len(name)-32:]); err != nil {
		return "", false
	}
	key := name[:len(name)-suffix]
	if !isKey(key) {
		return "", false
	}
	return key, true
}

// isKey reports whether name has the shape of a Key: something, a dash
// and 16 hex digits (an identity's directory below the private root has).
func isKey(name string) bool {
	if len(name) <= 17 || name[len(name)-17] != '-' {
		return false
	}
	_, err := hex.DecodeString(name[len(name)-16:])
	return err == nil
}

// PrivateDir is a private directory found below a private root.
type PrivateDir struct {
	Path string
	Key  string // the key of the identity it was made for
}

// PrivateDirs lists the private directories below root, in the layout
// above and in the earlier one (straight in the root). Anything not named
// as guardians name them is left out, and so are the identities' own
// directories. A root that does not exist holds none.
func PrivateDirs(root string) ([]PrivateDir, error) {
	var dirs []PrivateDir
	err := walkPrivateRoot(root, func(path string, e os.DirEntry) {
		if key, ok := PrivateDirKey(e.Name()); ok && e.IsDir() {
			dirs = append(dirs, PrivateDir{Path: path, Key: key})
		}
	}, func(key, path string, e os.DirEntry) {
		if k, ok := PrivateDirKey(e.Name()); ok && k == key && e.IsDir() {
			dirs = append(dirs, PrivateDir{Path: path, Key: key})
		}
	})
	return dirs, err
}

// RemoveEmptyIdentityDirs removes the identities' directories below root
// that hold nothing: a directory in use holds its run's private
// directory, and the removal of a directory that is not empty fails, so
// only the directories of identities not running are removed. What else
// is in root is left alone.
func RemoveEmptyIdentityDirs(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && isKey(e.Name()) {
			_ = os.Remove(filepath.Join(root, e.Name()))
		}
	}
}

// Leftovers lists what is below root apart from the identities'
// directories themselves: the private directories of both layouts, and
// anything else, in root or in an identity's directory. Once every agent
// of root has stopped and been cleaned up, there is nothing.
func Leftovers(root string) ([]string, error) {
	var left []string
	add := func(path string, _ os.DirEntry) { left = append(left, path) }
	err := walkPrivateRoot(root, add, func(_, path string, e os.DirEntry) { add(path, e) })
	return left, err
}

// walkPrivateRoot calls top with the path of each entry of root but the
// identities' directories, and inner with the key and the path of each
// entry in an identity's directory. A root that does not exist has no
// entries; an identity's directory that cannot be read is an error, and
// the walk goes on.
func walkPrivateRoot(root string, top func(path string, e os.DirEntry), inner func(key, path string, e os.DirEntry)) error {
	entries, err := entriesOf(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(root, e.Name())
		if !e.IsDir() || !isKey(e.Name()) {
			top(path, e)
			continue
		}
		ents, err := os.ReadDir(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range ents {
			inner(e.Name(), filepath.Join(path, d.Name()), d)
		}
	}
	return errors.Join(errs...)
}

// entriesOf lists dir; a directory that does not exist has no entries.
func entriesOf(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return entries, err
}
