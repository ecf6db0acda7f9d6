//go:build unix

package config

import (
	"fmt"
	"io/fs"
	"strconv"
)

// exposed says why an env_file is not private enough, or "". On Unix the
// mode bits are the access control: "other" read permission means every
// local user can read the secrets.
func exposed(path string, fi fs.FileInfo) string {
	if fi.Mode().Perm()&0o004 != 0 {
		return fmt.Sprintf("is readable by every user on this computer (mode %#o); an env_file holds secrets, so make it private: chmod 600 %s",
			fi.Mode().Perm(), strconv.Quote(path))
	}
	return ""
}

// envKey is how environment names compare: exactly, on Unix.
func envKey(name string) string { return name }
