package config

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Environ returns the agent's environment: base, then the env_file's
// values, then Env (Env wins over the env_file, both over base). The
// env_file is read now, at start time, so that its secrets are in memory
// only as long as the caller keeps the result; it is checked again as at
// load time (regular file, not world-readable, well-formed), and a problem
// is an *Error naming the file and, for a bad line, its line (never its
// content). base is not modified.
//
// env_file syntax: one KEY=VALUE per line; blank lines and lines starting
// with # are skipped; an "export " prefix is allowed; a value wholly inside
// matching single or double quotes loses them and keeps its spaces; there
// is no escaping, no expansion and no comment after a value (a # in a value
// is part of it). A key given twice keeps the last value.
func (a Agent) Environ(base []string) ([]string, error) {
	var fromFile []envVar
	if a.EnvFile != "" {
		vars, e := readEnvFile(a.EnvFile)
		if e != nil {
			e.Key = keyEnvFile
			return nil, e
		}
		fromFile = vars
	}
	over := fromFile
	names := make([]string, 0, len(a.Env))
	for k := range a.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		over = append(over, envVar{k, a.Env[k]})
	}
	return mergeEnv(base, over), nil
}

type envVar struct{ name, value string }

// mergeEnv returns base without the names in over, then over, each name
// once (its last value, at its first place).
func mergeEnv(base []string, over []envVar) []string {
	last := map[string]string{}
	for _, v := range over {
		last[envKey(v.name)] = v.value
	}
	out := make([]string, 0, len(base)+len(last))
	for _, kv := range base {
		if _, replaced := last[envKey(envName(kv))]; !replaced {
			out = append(out, kv)
		}
	}
	done := map[string]bool{}
	for _, v := range over {
		k := envKey(v.name)
		if !done[k] {
			done[k] = true
			out = append(out, v.name+"="+last[k])
		}
	}
	return out
}

// envName is the name in "NAME=value". The search starts after the first
// byte because Windows keeps per-drive entries such as "=C:=C:\x".
func envName(kv string) string {
	start := 0
	if strings.HasPrefix(kv, "=") {
		start = 1
	}
	if i := strings.IndexByte(kv[start:], '='); i >= 0 {
		return kv[:start+i]
	}
	return kv
}

// readEnvFile reads and parses an env file. A returned *Error has File set
// to path and Line to the bad line, or 0 for a problem with the whole file;
// the caller fills in Key. Messages never contain the file's content.
func readEnvFile(path string) ([]envVar, *Error) {
	fail := func(line int, msg string, err error) ([]envVar, *Error) {
		return nil, &Error{File: path, Line: line, Msg: msg, Err: err}
	}
	// Stat before opening: opening a FIFO for reading would block.
	fi, err := os.Stat(path)
	if err != nil {
		return fail(0, "cannot be read: "+cause(err), err)
	}
	if !fi.Mode().IsRegular() {
		return fail(0, "is not a regular file ("+fileKind(fi.Mode())+")", nil)
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(0, "cannot be read: "+cause(err), err)
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return fail(0, "cannot be read: "+cause(err), err)
	}
	if !ofi.Mode().IsRegular() || !os.SameFile(fi, ofi) {
		return fail(0, "changed while it was being opened; try again", nil)
	}
	if msg := exposed(path, ofi); msg != "" {
		return fail(0, msg, nil)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEnvFileSize+1))
	if err != nil {
		return fail(0, "cannot be read: "+cause(err), err)
	}
	if len(data) > maxEnvFileSize {
		return fail(0, fmt.Sprintf("is larger than %d MiB", maxEnvFileSize>>20), nil)
	}
	vars, line, msg := parseEnv(string(data))
	// Best effort: do not leave the secrets in the read buffer.
	clear(data)
	if msg != "" {
		return fail(line, msg, nil)
	}
	return vars, nil
}

// parseEnv parses env file text. On a bad line it returns its number and
// a message that does not quote it.
func parseEnv(text string) (vars []envVar, line int, msg string) {
	for i, raw := range strings.Split(text, "\n") {
		line = i + 1
		s := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if s == "" || s[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			s = strings.TrimLeft(rest, " \t")
		}
		name, value, ok := strings.Cut(s, "=")
		if !ok {
			return nil, line, "not a KEY=VALUE line (and not a # comment)"
		}
		name = strings.TrimRight(name, " \t")
		if !validName(name) {
			return nil, line, "the name before '=' is not a valid variable name: use letters, digits and '_', not starting with a digit"
		}
		value = strings.TrimSpace(value)
		if value != "" && (value[0] == '"' || value[0] == '\'') {
			q := value[0]
			if len(value) < 2 || value[len(value)-1] != q {
				return nil, line, fmt.Sprintf("the value of %s opens a %c quote that does not close at the end of the line", name, q)
			}
			value = value[1 : len(value)-1]
		}
		if strings.IndexByte(value, 0) >= 0 {
			return nil, line, fmt.Sprintf("the value of %s contains a NUL byte", name)
		}
		vars = append(vars, envVar{name, value})
	}
	return vars, 0, ""
}
