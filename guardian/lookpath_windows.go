//go:build windows

package guardian

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// commandHasDir says argv0 names a file rather than a command to look up
// in PATH.
func commandHasDir(argv0 string) bool {
	return strings.ContainsAny(argv0, `/\`) || filepath.VolumeName(argv0) != ""
}

func defaultPath() string {
	root := os.Getenv("SYSTEMROOT")
	if root == "" {
		root = `C:\Windows`
	}
	return root + `\System32;` + root
}

// pathExt returns the extensions that make a file a program, from the
// agent's PATHEXT.
func pathExt(env []string) []string {
	v, ok := lookupEnv(env, "PATHEXT")
	if !ok || v == "" {
		v = ".COM;.EXE;.BAT;.CMD"
	}
	var out []string
	for _, e := range strings.Split(strings.ToLower(v), ";") {
		if strings.HasPrefix(e, ".") {
			out = append(out, e)
		}
	}
	return out
}

// commandCandidates are the files a command may name, as the Windows
// search tries them: the name itself when its extension makes it a
// program, otherwise the name with each PATHEXT extension, then the bare
// name (so that an existing file of another type is reported as not a
// program rather than not found).
func commandCandidates(p string, env []string) []string {
	exts := pathExt(env)
	ext := strings.ToLower(filepath.Ext(p))
	for _, e := range exts {
		if e == ext {
			return []string{p}
		}
	}
	out := make([]string, 0, len(exts)+1)
	for _, e := range exts {
		out = append(out, p+e)
	}
	return append(out, p)
}

func notExecutable(p string, _ os.FileInfo, env []string) string {
	ext := strings.ToLower(filepath.Ext(p))
	for _, e := range pathExt(env) {
		if e == ext {
			return ""
		}
	}
	return fmt.Sprintf("command %q is not a program (its extension is not one of PATHEXT %v)", p, pathExt(env))
}

// envKey is the environment key as Windows compares it: without case.
func envKey(k string) string { return strings.ToUpper(k) }
