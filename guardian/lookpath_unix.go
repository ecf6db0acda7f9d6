//go:build unix

package guardian

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// commandHasDir says argv0 names a file rather than a command to look up
// in PATH, as execvp decides.
func commandHasDir(argv0 string) bool { return strings.Contains(argv0, "/") }

func defaultPath() string { return "/usr/local/bin:/usr/bin:/bin" }

// commandCandidates is the file itself: Unix adds no extensions.
func commandCandidates(p string, _ []string) []string { return []string{p} }

func notExecutable(p string, fi os.FileInfo, _ []string) string {
	if unix.Access(p, unix.X_OK) != nil {
		return fmt.Sprintf("command %q is not executable (mode %v)", p, fi.Mode().Perm())
	}
	return ""
}

// envKey is the environment key as Unix compares it: exactly.
func envKey(k string) string { return k }
