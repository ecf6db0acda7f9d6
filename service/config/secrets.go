package config

import (
	"sort"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// The key of an agent's secrets, and the kinds of reference inside it.
const (
	keySecrets = "secrets"
	keyKeyring = "keyring"
	keyExec    = "exec"
)

// MaxKeyringKey bounds the name of a keychain entry, in bytes.
const MaxKeyringKey = 128

// SecretRef says where the value of one of an agent's secrets is read,
// at each start: the OS keychain's entry Keyring (see package
// service/secret for its service and account names), or the standard
// output of the command Exec, run without a shell. Exactly one is set.
// It holds no value: the config never does.
type SecretRef struct {
	Keyring string   `json:"keyring,omitempty"`
	Exec    []string `json:"exec,omitempty"`
}

// String is the reference as messages name it: keyring "alice-token",
// or exec [op read "op://vault/item/field"].
func (r SecretRef) String() string {
	if r.Exec == nil {
		return keyKeyring + " " + strconv.Quote(r.Keyring)
	}
	words := make([]string, len(r.Exec))
	for i, w := range r.Exec {
		words[i] = w
		if w == "" || strings.ContainsFunc(w, func(c rune) bool { return unicode.IsSpace(c) || strings.ContainsRune(`"'[],:`, c) }) {
			words[i] = strconv.Quote(w)
		}
	}
	return keyExec + " [" + strings.Join(words, " ") + "]"
}

// SecretNames returns the names of the agent's secrets, sorted.
func (a Agent) SecretNames() []string {
	names := make([]string, 0, len(a.Secrets))
	for n := range a.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Overlay returns env with vars set: each replaces a variable of the
// same name (as this system compares names), and they come last, in
// name order. env is not modified.
func Overlay(env []string, vars map[string]string) []string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	over := make([]envVar, len(names))
	for i, n := range names {
		over[i] = envVar{n, vars[n]}
	}
	return mergeEnv(env, over)
}

// agentSecrets reads secrets: a mapping of variable names to references,
// {keyring: NAME} or {exec: [argv]}. A name may not be in env too: the
// agent would get one of two values, and the file would not say which.
func (p *parser) agentSecrets(a *parsedAgent, e entry) {
	kv, set := e.value(keySecrets)
	if !set {
		return
	}
	key := e.k(keySecrets)
	defer p.through(kv.val, key)()
	m := deref(kv.val)
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be a mapping of NAME: {keyring: KEY} or NAME: {exec: [command, args...]}, not %s", kindName(m))
		return
	}
	out := map[string]SecretRef{}
	for _, s := range p.pairs(m, key, 0) {
		k := key + "." + s.name
		if !validName(s.name) {
			p.errorf(s.key.Line, k, "%s is not a valid variable name: use letters, digits and '_', not starting with a digit", short(s.name))
			continue
		}
		if _, dup := a.Env[s.name]; dup {
			p.errorf(s.key.Line, k, "%s is in env too: give it in one place", s.name)
			continue
		}
		if ref, ok := p.secretRef(s, k); ok {
			out[s.name] = ref
		}
	}
	if len(out) > 0 {
		a.Secrets = out
	}
}

// secretRef reads one reference: a mapping of exactly one of keyring and
// exec.
func (p *parser) secretRef(kv pair, key string) (SecretRef, bool) {
	defer p.through(kv.val, key)()
	m := deref(kv.val)
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be {keyring: KEY} or {exec: [command, args...]}, not %s (a secret's value is never written in the config)", kindName(m))
		return SecretRef{}, false
	}
	kvs := p.pairs(m, key, 0)
	if len(kvs) != 1 {
		p.errorf(kv.val.Line, key, "must name exactly one of keyring and exec, not %d keys", len(kvs))
		return SecretRef{}, false
	}
	arg := kvs[0]
	k := key + "." + arg.name
	switch arg.name {
	case keyKeyring:
		s, good := p.str(arg, k)
		switch {
		case !good:
		case s == "" || len(s) > MaxKeyringKey || strings.TrimSpace(s) != s || strings.ContainsFunc(s, unicode.IsControl):
			p.errorf(arg.val.Line, k, "%s is not a keychain entry name: use 1 to %d bytes, without control characters or spaces at either end", short(s), MaxKeyringKey)
		default:
			return SecretRef{Keyring: s}, true
		}
	case keyExec:
		if argv := p.command(arg, k); argv != nil {
			return SecretRef{Exec: argv}, true
		}
	default:
		p.errorf(arg.key.Line, k, "unknown kind of secret: write {keyring: KEY} (the OS keychain) or {exec: [command, args...]} (a command's output)")
	}
	return SecretRef{}, false
}
