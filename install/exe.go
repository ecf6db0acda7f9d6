package install

import (
	"fmt"
	"os"
	"runtime"
)

// checkExecutable makes sure the registered binary exists, so that a
// registration never points at nothing (a typo, a removed build).
func checkExecutable(exe string) error {
	fi, err := os.Stat(exe)
	if err != nil {
		return fmt.Errorf("the tether executable to register: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("the tether executable to register, %s, is not a regular file", exe)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("the tether executable to register, %s, is not executable (mode %v)", exe, fi.Mode().Perm())
	}
	return nil
}
