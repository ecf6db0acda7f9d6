//go:build linux || darwin

package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fileTx writes files atomically and remembers how to undo every write
// and every directory it created, so that a registration that fails half
// way leaves nothing behind.
type fileTx struct {
	undo []func() error // run in reverse order
}

// write puts f in place (temp file, fsync, rename, fsync of the
// directory). It reports false, and records nothing, when f is already
// there byte for byte with its mode.
func (tx *fileTx) write(f File) (changed bool, err error) {
	old, oldErr := os.ReadFile(f.Path)
	var oldMode fs.FileMode
	if oldErr == nil {
		fi, err := os.Stat(f.Path)
		if err != nil {
			return false, err
		}
		oldMode = fi.Mode().Perm()
		if bytes.Equal(old, f.Content) && oldMode == f.Mode.Perm() {
			return false, nil
		}
	} else if !errors.Is(oldErr, fs.ErrNotExist) {
		return false, fmt.Errorf("reading %s: %w", f.Path, oldErr)
	}
	if err := tx.mkdirAll(filepath.Dir(f.Path)); err != nil {
		return false, err
	}
	if err := writeAtomic(f.Path, f.Content, f.Mode); err != nil {
		return false, err
	}
	if oldErr == nil {
		tx.undo = append(tx.undo, func() error { return writeAtomic(f.Path, old, oldMode) })
	} else {
		tx.undo = append(tx.undo, func() error { return os.Remove(f.Path) })
	}
	return true, nil
}

// mkdirAll creates dir and its missing parents (0700: only the user's
// session reads them) and records them for removal.
func (tx *fileTx) mkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", d, err)
		}
		// os.Remove removes only an empty directory: anything someone else
		// put there meanwhile stays.
		tx.undo = append(tx.undo, func() error { return os.Remove(d) })
	}
	return nil
}

// rollback undoes every write, newest first.
func (tx *fileTx) rollback() error {
	var errs []error
	for i := len(tx.undo) - 1; i >= 0; i-- {
		if err := tx.undo[i](); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	tx.undo = nil
	return errors.Join(errs...)
}

// rollbackInto undoes tx and adds any failure to do so to err.
func (tx *fileTx) rollbackInto(err error) error {
	if rerr := tx.rollback(); rerr != nil {
		return fmt.Errorf("%w (and undoing what was written failed: %v)", err, rerr)
	}
	return err
}

func writeAtomic(path string, content []byte, mode fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if _, err := tmp.Write(content); err != nil {
		return err
	}
	if err := tmp.Chmod(mode.Perm()); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: the rename is already visible
		d.Close()
	}
	return nil
}

// removeFile removes path and reports whether there was anything to remove.
func removeFile(path string) (bool, error) {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing %s: %w", path, err)
	}
	return true, nil
}

// lexists reports whether path exists, not following a final symlink.
func lexists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// readInstalled reads what is installed at f.Path and compares it with f.
func readInstalled(f File) (installed, current bool, err error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("reading %s: %w", f.Path, err)
	}
	return true, bytes.Equal(b, f.Content), nil
}

// installFile writes one file with nothing to do after it (tray entries,
// the LaunchAgent).
func installFile(f File, what string) (Result, error) {
	var tx fileTx
	changed, err := tx.write(f)
	if err != nil {
		return Result{}, tx.rollbackInto(err)
	}
	if !changed {
		return Result{Paths: []string{f.Path}, Message: fmt.Sprintf("%s is already installed: %s is up to date", what, f.Path)}, nil
	}
	return Result{Changed: true, Paths: []string{f.Path}, Message: fmt.Sprintf("installed %s: wrote %s", what, f.Path)}, nil
}

// uninstallFile removes one file with nothing to do before it.
func uninstallFile(path, what string) (Result, error) {
	removed, err := removeFile(path)
	if err != nil {
		return Result{}, err
	}
	if !removed {
		return Result{Message: fmt.Sprintf("%s is not installed (no %s): nothing to remove", what, path)}, nil
	}
	return Result{Changed: true, Paths: []string{path}, Message: fmt.Sprintf("uninstalled %s: removed %s", what, path)}, nil
}
