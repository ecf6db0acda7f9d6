//go:build linux

package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// removeOurs removes path if `tether service install` wrote it (it
// begins with the header of what Install writes), and records how to put
// it back. It reports whether it removed it.
func (tx *fileTx) removeOurs(path string) (bool, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if !bytes.HasPrefix(old, []byte(header)) {
		return false, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if err := os.Remove(path); err != nil {
		return false, err
	}
	mode := fi.Mode().Perm()
	tx.undo = append(tx.undo, func() error { return writeAtomic(path, old, mode) })
	return true, nil
}
