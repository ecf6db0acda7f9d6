package guardian

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-dev/tether/wire"
)

// The agent's command is looked up the way the platform's own search
// would, as os/exec's LookPath is: this file holds the search, and
// lookpath_unix.go and lookpath_windows.go what differs.
//
//   - commandHasDir(argv0) says argv0 names a file, not a command to look
//     up in PATH.
//   - defaultPath() is the PATH of an environment that has none.
//   - commandCandidates(p, env) are the files that p may name.
//   - notExecutable(p, fi, env) says why the file p is no program, or "".
//   - envKey(k) is an environment key as the platform compares keys.

// lookupEnv returns the value of key in env, compared as the platform
// compares keys; the last entry wins.
func lookupEnv(env []string, key string) (string, bool) {
	var v string
	var found bool
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && envKey(k) == envKey(key) {
			v, found = val, true
		}
	}
	return v, found
}

// resolveCommand finds argv0 the way the platform's own search would
// (execvp's PATH walk; on Windows also PATHEXT), in the PATH of the
// agent's environment, and says precisely why it cannot be run.
func resolveCommand(argv0, dir string, env []string) (string, *wire.Failure) {
	check := func(p string) (string, *wire.Failure) {
		var missing *wire.Failure
		for _, c := range commandCandidates(p, env) {
			fi, err := os.Stat(c)
			switch {
			case err != nil && errors.Is(err, os.ErrNotExist):
				if missing == nil {
					missing = &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseNotFound, Path: p, Message: "command " + quote(p) + " not found"}
				}
				continue
			case err != nil:
				return "", &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseNotExecutable, Path: c, Message: err.Error()}
			case fi.IsDir():
				return "", &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseNotExecutable, Path: c, Message: "command " + quote(c) + " is a directory"}
			}
			if why := notExecutable(c, fi, env); why != "" {
				return "", &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseNotExecutable, Path: c, Message: why}
			}
			return c, nil
		}
		return "", missing
	}
	if commandHasDir(argv0) {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return check(p)
	}
	pathEnv, ok := lookupEnv(env, "PATH")
	if !ok {
		pathEnv = defaultPath()
	}
	var firstBad *wire.Failure
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p, fl := check(filepath.Join(d, argv0))
		if fl == nil {
			return p, nil
		}
		if fl.Cause == wire.CauseNotExecutable && firstBad == nil {
			firstBad = fl
		}
	}
	if firstBad != nil {
		return "", firstBad
	}
	return "", &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseNotFound, Path: argv0, Message: fmt.Sprintf("command %q not found in PATH %q", argv0, pathEnv)}
}

// ResolveCommand finds the program argv0 names the way a guardian
// starting it would: in dir, with the PATH of env (the agent's whole
// environment), and returns its path. An empty dir stands for the
// private directory, which exists only once the agent starts: a relative
// argv0, or a relative entry of PATH, is then not looked at, and argv0
// alone comes back. The error is a *StartError of code spawn whose Cause
// says why (not_found, not_executable) and whose Path names the file.
func ResolveCommand(argv0, dir string, env []string) (string, error) {
	if dir == "" {
		if commandHasDir(argv0) && !filepath.IsAbs(argv0) {
			return argv0, nil
		}
		env = absolutePath(env)
	}
	p, fl := resolveCommand(argv0, dir, env)
	if fl != nil {
		return "", &StartError{Code: fl.Code, Cause: fl.Cause, Path: fl.Path, Message: fl.Message}
	}
	return p, nil
}

// absolutePath returns env with the relative entries of its PATH
// dropped, or with the default PATH, written out, when it has none.
func absolutePath(env []string) []string {
	v, ok := lookupEnv(env, "PATH")
	if !ok {
		v = defaultPath()
	}
	var keep []string
	for _, d := range filepath.SplitList(v) {
		if filepath.IsAbs(d) {
			keep = append(keep, d)
		}
	}
	return append(append([]string(nil), env...), "PATH="+strings.Join(keep, string(filepath.ListSeparator)))
}
