package layers

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the module path the rules' patterns are relative to.
const Module = "github.com/tether-dev/tether"

// A rule says what the packages matching Who may depend on, directly or
// through others, among the module's packages. Patterns are relative to
// Module: "service" is that package, "service/..." it and every package
// below it, "." the module's root.
type rule struct {
	Who []string
	// Not lists what they may not reach.
	Not []string
	// Only, when not nil, lists all they may reach (an empty list:
	// nothing of ours).
	Only []string
	// By, when not nil, lists the only packages, besides those of Who,
	// that may import Who's directly.
	By  []string
	Why string
}

// rules is the layering: the thin clients above the service, the
// guardian beside it knowing nothing of it, the contracts and data
// packages below, the OS halves at the bottom.
var rules = []rule{
	{Who: []string{"tray/...", "top/...", "api/...", "client/..."}, Not: []string{"service/...", "guardian/..."},
		Why: "the tray, the terminal view and the local API's contract and client own no agent"},
	{Who: []string{"guardian/..."}, Not: []string{"service/...", "tray/...", "client/...", "api/...", "cli/..."},
		Why: "the guardian knows nothing of its owner and links no client"},
	{Who: []string{"api/..."}, Only: []string{"wire"},
		Why: "the contract is a leaf: types only, beside the guardian protocol's"},
	{Who: []string{"wire/..."}, Only: []string{},
		Why: "the guardian protocol's vocabulary is a leaf"},
	{Who: []string{"internal/rowtext/..."}, Only: []string{"api", "wire"},
		Why: "how a row reads is said from the contract alone, so that the command line, the terminal view and the tray may share it"},
	{Who: []string{"service/config/...", "service/state/..."}, Not: []string{"platform/..."},
		Why: "config and state are data: they never reach the OS layer"},
	{Who: []string{"platform/unix/...", "platform/windows/..."}, Only: []string{},
		Why: "the OS halves are the bottom layer"},
	{Who: []string{"identity/...", "probe/...", "sdnotify/...", "internal/logline/...", "internal/suggest/...", "internal/human/...", "internal/quietterm/...", "logfile/...", "assets/...", "install/...", "power/...", "netwatch/..."}, Only: []string{},
		Why: "a leaf imports nothing of ours, so that any package may use it"},
	{Who: []string{"..."}, Not: []string{"service", "tray/...", "top/...", "demo/...", "cli/..."},
		Why: "only the command line starts the service, the tray, the terminal view and the demo"},
	{Who: []string{"service/lease/..."}, By: []string{"service", "internal/etcdtest"},
		Why: "the etcd client is the service's (and the etcd test harness's, which only tests import): the guardian and the rest link none of it"},
	{Who: []string{"service/secret/..."}, By: []string{"service", "cli"},
		Why: "the keychain's library is the service's, which reads secrets, and the command line's, which stores them: the guardian links none of it"},
}

// GuardianNever are the modules the guardian's executable must never
// link, directly or not: what the service alone pays for.
var GuardianNever = []string{"go.etcd.io/", "google.golang.org/grpc", "go.uber.org/zap", "github.com/zalando/go-keyring", "github.com/danieljoos/wincred"}

// exempt are the packages a rule with Who "..." leaves out: the command
// line and the binary's main.
var exempt = []string{".", "cli"}

// match reports whether the package path (relative to Module) matches
// pattern.
func match(pattern, path string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// within reports whether path is one of the packages a rule is about,
// named by a pattern other than "...": what they reach of themselves.
func within(who []string, path string) bool {
	return slices.ContainsFunc(who, func(p string) bool { return p != "..." && match(p, path) })
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// graph is the module's packages: each one's direct imports among them.
type graph map[string][]string

// check returns every breach of the rules in g, one line each.
func check(g graph) []string {
	var out []string
	for _, from := range sortedKeys(g) {
		for _, r := range rules {
			if r.By == nil || matchAny(r.Who, from) || matchAny(r.By, from) {
				continue
			}
			for _, to := range g[from] {
				if matchAny(r.Who, to) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", name(from), name(to), r.Why))
				}
			}
		}
		reach := g.reach(from)
		for _, r := range rules {
			if !matchAny(r.Who, from) || slices.Contains(r.Who, "...") && slices.Contains(exempt, from) {
				continue
			}
			for _, to := range reach {
				bad := matchAny(r.Not, to) || r.Only != nil && !matchAny(r.Only, to)
				if bad && !within(r.Who, to) {
					out = append(out, fmt.Sprintf("%s reaches %s (%s): %s", name(from), name(to), strings.Join(mapNames(g.path(from, to)), " -> "), r.Why))
				}
			}
		}
	}
	return out
}

// reach lists the packages from depends on, directly or not, sorted.
func (g graph) reach(from string) []string {
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		for _, q := range g[p] {
			if !seen[q] {
				seen[q] = true
				walk(q)
			}
		}
	}
	walk(from)
	delete(seen, from)
	return sortedKeys(seen)
}

// path is a shortest chain of imports from from to to.
func (g graph) path(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range g[p] {
			if _, ok := prev[q]; !ok {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

func name(p string) string {
	if p == "." {
		return "tether (main)"
	}
	return p
}

func mapNames(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = name(p)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
