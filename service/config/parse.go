package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/identity"
	"github.com/tether-dev/tether/internal/suggest"
	"gopkg.in/yaml.v3"
)

var (
	// Compiled on first use: every exec of the binary (each guardian,
	// each command) would otherwise pay for it at start.
	// yaml.v3 reports syntax errors only as text, "yaml: line N: ...";
	// this reads the line number back out so it can be a field.
	yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line ([0-9]+): (?s:(.*))$`) })
)

// strTag is the tag of a YAML string scalar, quoted or plain; mergeTag is
// the tag of the "<<" key.
const (
	strTag   = "!!str"
	mergeTag = "!!merge"
)

// validID reports whether s is an id: 1 to MaxIDLen letters, digits,
// '.', '_', '@' or '-', starting with a letter or digit (ASCII only).
func validID(s string) bool {
	if s == "" || len(s) > MaxIDLen || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '@' && c != '-' {
			return false
		}
	}
	return true
}

// validName reports whether s is an environment variable's name:
// letters, digits and '_', not starting with a digit (ASCII only).
func validName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// The keys an agent entry may have.
const (
	keyID          = "id"
	keyIdentity    = "identity"
	keyCommand     = "command"
	keyDir         = "dir"
	keyEnv         = "env"
	keyEnvFile     = "env_file"
	keyAutostart   = "autostart"
	keyRestart     = "restart"
	keyStopTimeout = "stop_timeout"
)

var agentKeys = []string{keyID, keyIdentity, keyCommand, keyDir, keyEnv, keyEnvFile, keyAutostart, keyRestart, keyStopTimeout,
	keyReady, keyStartTimeout, keyWatchdog, keyHealth, keyAfter, keyRequires, keySurvive, keyLease, keyNeeds, keyLogs, keySecrets}

// rootKeys are the keys at the top of the config.
var rootKeys = []string{"agents", keyLease, keyRestart, keyLogs}

// Parse parses and validates a config. path is used in messages and as the
// base of relative paths (the current directory when empty); env_file
// entries are checked on disk.
func Parse(path string, data []byte) (*Config, error) {
	cfg := &Config{Path: path, Source: data}
	base := "."
	if path != "" {
		if abs, err := filepath.Abs(path); err == nil {
			cfg.Path = abs
		}
		base = filepath.Dir(cfg.Path)
	} else if wd, err := os.Getwd(); err == nil {
		base = wd
	}
	p := &parser{file: path, base: base, restartRule: restartRule{DefaultRestart, DefaultRetry()}}
	if root := p.document(data); root != nil {
		p.allowed = expansionBudget(root)
		p.read, p.budget = map[*yaml.Node]struct{}{}, p.allowed
		cfg.Agents, cfg.Lease = p.config(root)
	}
	if p.overrun != nil {
		// What was read after the walk stopped short is no problem of
		// the file's.
		return nil, p.overrun
	}
	if len(p.errs) > 0 {
		// Report in the order of the config's lines; an env_file's line
		// problems sort by the line that names the env_file.
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].at < p.errs[j].at })
		errs := make(Errors, len(p.errs))
		for i, e := range p.errs {
			errs[i] = e.err
		}
		return nil, errs.err()
	}
	return cfg, nil
}

type parser struct {
	file string // as given, for messages
	base string // directory relative paths are joined to
	errs []located
	// read holds the entries and items the walk has read; budget is how
	// many it may read again, through aliases and merges; via is where the
	// walk met the alias or merge it is reading through, and overrun the
	// problem once the budget has run out.
	read    map[*yaml.Node]struct{}
	allowed int
	budget  int
	via     *yaml.Node
	viaKey  string
	overrun *Error
	// restartRule is the profile's restart default (the top of the
	// config), for every agent.
	restartRule restartRule
	// logsDefault is the top-level logs section, every agent's default.
	logsDefault logsSection
}

type located struct {
	at  int // line in the config, for the order of the report
	err *Error
}

func (p *parser) add(e *Error) { p.addAt(e.Line, e) }

func (p *parser) addAt(line int, e *Error) { p.errs = append(p.errs, located{line, e}) }

func (p *parser) errorf(line int, key, format string, args ...any) {
	p.add(&Error{File: p.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// unknownKey is the message for a key name that is none of known: with
// the key it most likely stands for, when one is near.
func unknownKey(name string, known []string) string {
	if s := suggest.Best(name, known); s != "" {
		return fmt.Sprintf("unknown key; did you mean %q?", s)
	}
	return "unknown key"
}

// The expansion of aliases and "<<" merges is bounded: each reads its
// anchor's entries again, and nine merges of nine merges of ... make a
// 1 KB file of 40 million entries. yaml.v3 bounds aliases only when it
// decodes into Go values, and the parser walks its nodes itself. The walk
// may read entries and items again minExpansion times, or expansionRatio
// times the number of nodes written in the file, whichever is more: a
// config merging a few defaults into each of 10,000 agents stays well
// within it, and no config is read for much longer than it is parsed.
const (
	minExpansion   = 1 << 16
	expansionRatio = 4
)

// ErrExpansion is the cause of the *Error that refuses a config whose
// aliases and "<<" merges expand to more than the walk may read.
var ErrExpansion = errors.New("aliases and \"<<\" merges expand the config too far")

// expansionBudget is how many entries and items the walk of root may read
// again.
func expansionBudget(root *yaml.Node) int {
	written := 0
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		written++
		for _, c := range n.Content {
			count(c)
		}
	}
	count(root)
	return max(minExpansion, expansionRatio*written)
}

// through notes that the walk reads n at key, unless it already reads
// through an alias or merge: when n is one, the expansion is blamed on it
// until the returned function is called.
func (p *parser) through(n *yaml.Node, key string) func() {
	if p.via != nil || n.Kind != yaml.AliasNode && n.Tag != mergeTag {
		return func() {}
	}
	p.via, p.viaKey = n, key
	return func() { p.via = nil }
}

// visit counts the walk's read of n, an entry's key or a list's item: its
// first read is free, each read again takes one from the budget. It
// reports false once the budget has run out, and the walk then reads no
// more. The problem is the first alias or merge the walk met on its way
// to n.
func (p *parser) visit(n *yaml.Node) bool {
	if p.overrun != nil {
		return false
	}
	if _, again := p.read[n]; !again {
		p.read[n] = struct{}{}
		return true
	}
	if p.budget--; p.budget >= 0 {
		return true
	}
	line, key := n.Line, ""
	if p.via != nil {
		line, key = p.via.Line, p.viaKey
	}
	p.overrun = &Error{File: p.file, Line: line, Key: key, Err: ErrExpansion,
		Msg: fmt.Sprintf("aliases and \"<<\" merges here expand the config too far: they would read more than %d entries again; write the entries out, or merge less", p.allowed)}
	return false
}

// document returns the root node of the single YAML document in data, or
// nil when there is nothing to read (an empty config is valid) or the YAML
// is malformed.
func (p *parser) document(data []byte) *yaml.Node {
	doc, extra, err := decodeYAML(data)
	switch {
	case err != nil:
		p.syntax(data, err)
		return nil
	case extra != nil:
		// The line of its content, or of its "---" when it is empty:
		// yaml.v3 puts an empty document's null past the end.
		line := extra.Line
		if c := extra.Content; len(c) > 0 && !(isNull(c[0]) && c[0].Value == "") {
			line = c[0].Line
		}
		p.errorf(line, "", "a second YAML document (after ---); the config is a single document")
		return nil
	case doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0:
		return nil
	}
	return doc.Content[0]
}

// config walks the root mapping.
func (p *parser) config(n *yaml.Node) ([]Agent, *Lease) {
	root := deref(n)
	if isNull(root) {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "the config must be a mapping with an %q list, not %s", "agents", kindName(root))
		return nil, nil
	}
	var (
		agents *yaml.Node
		lease  *Lease
	)
	for _, kv := range p.pairs(root, "", 0) {
		switch kv.name {
		case "agents":
			agents = kv.val
		case keyLease:
			lease = p.lease(kv)
		case keyRestart:
			p.profileRestart(kv)
		case keyLogs:
			p.logsDefault = p.logs(kv, keyLogs)
		default:
			p.errorf(kv.key.Line, kv.name, "%s (the config has %s)", unknownKey(kv.name, rootKeys), strings.Join(rootKeys, ", "))
		}
	}
	if agents == nil {
		return nil, lease
	}
	defer p.through(agents, "agents")()
	list := deref(agents)
	if isNull(list) {
		return nil, lease
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(agents.Line, "agents", "must be a list of agents (lines starting with \"- \"), not %s", kindName(list))
		return nil, lease
	}
	var (
		out        []Agent
		ids        = map[string]seen{}
		identities = map[string]seen{}
		edges      []edge
	)
	for i, item := range list.Content {
		if !p.visit(item) {
			break
		}
		key := "agents[" + strconv.Itoa(i) + "]"
		a, ok := p.agent(item, key)
		if a.id.ok {
			if first, dup := ids[a.ID]; dup {
				p.errorf(a.id.line, key+"."+keyID, "duplicate id %q: %s at line %d has it too", a.ID, first.key, first.line)
			} else {
				ids[a.ID] = seen{key, a.id.line}
			}
		}
		if a.identity.ok {
			if first, dup := identities[a.Identity]; dup {
				how := ""
				if a.identityDefaulted {
					how = " (defaulted from the id)"
				}
				p.errorf(a.identity.line, key+"."+keyIdentity, "duplicate identity %q%s: %s at line %d has it too; one identity runs at most once", a.Identity, how, first.key, first.line)
			} else {
				identities[a.Identity] = seen{key, a.identity.line}
			}
		}
		if ok && lease != nil {
			p.leaseFits(lease, a, key)
		}
		if ok {
			out = append(out, a.Agent)
		}
		edges = append(edges, a.edges...)
	}
	p.graph(edges, ids)
	return out, lease
}

type seen struct {
	key  string
	line int
}

// found records where a checked key was and whether its value was valid.
type found struct {
	line int
	ok   bool
}

type parsedAgent struct {
	Agent
	id, identity      found
	identityDefaulted bool
	stopLine          int    // the line of stop_timeout, when given
	edges             []edge // after: and requires:, checked once every id is known
}

// agent checks one entry of the agents list; ok is false if anything in it
// was wrong (and reported).
func (p *parser) agent(n *yaml.Node, key string) (a parsedAgent, ok bool) {
	before := len(p.errs)
	a.Line = n.Line
	a.StopTimeout = DefaultStopTimeout
	defer p.through(n, key)()
	m := deref(n)
	if m.Kind != yaml.MappingNode {
		p.errorf(n.Line, key, "each agent must be a mapping with at least %s and %s, not %s", keyID, keyCommand, kindName(m))
		return a, false
	}
	e := entry{vals: map[string]pair{}, line: n.Line, key: key}
	for _, kv := range p.pairs(m, key, 0) {
		if !slices.Contains(agentKeys, kv.name) {
			p.errorf(kv.key.Line, e.k(kv.name), "%s (an agent has %s)", unknownKey(kv.name, agentKeys), strings.Join(agentKeys, ", "))
			continue
		}
		e.vals[kv.name] = kv
	}
	// In this order: the identity defaults to the id.
	p.agentID(&a, e)
	p.agentIdentity(&a, e)
	p.agentCommand(&a, e)
	p.agentDir(&a, e)
	p.agentEnv(&a, e)
	p.agentEnvFile(&a, e)
	p.agentSecrets(&a, e)
	p.agentAutostart(&a, e)
	p.agentRestart(&a, e)
	p.agentStopTimeout(&a, e)
	p.agentReadiness(&a, e)
	p.agentSurvive(&a, e)
	p.agentLease(&a, e)
	p.agentNeeds(&a, e)
	p.agentLogs(&a, e)
	return a, len(p.errs) == before
}

// entry is the agent entry being checked: its pairs by key, its line and
// its key in messages ("agents[2]").
type entry struct {
	vals map[string]pair
	line int
	key  string
}

// k is the key of name in messages: "agents[2].id".
func (e entry) k(name string) string { return e.key + "." + name }

// value returns the pair of name, and whether it is there with a value
// (not empty, not null).
func (e entry) value(name string) (pair, bool) {
	kv, set := e.vals[name]
	return kv, set && !isNull(deref(kv.val))
}

// agentID checks the id, which every agent needs.
func (p *parser) agentID(a *parsedAgent, e entry) {
	kv, set := e.vals[keyID]
	if !set {
		p.errorf(e.line, e.k(keyID), "missing; every agent needs an id")
		return
	}
	s, good := p.str(kv, e.k(keyID))
	switch {
	case !good:
	case s == "":
		p.errorf(kv.val.Line, e.k(keyID), "is empty; every agent needs an id")
	case !validID(s):
		p.errorf(kv.val.Line, e.k(keyID), "%s is not a valid id: use 1 to %d letters, digits, '.', '_', '@' or '-', starting with a letter or digit", short(s), MaxIDLen)
	default:
		a.ID = s
		a.id = found{kv.val.Line, true}
	}
}

// agentIdentity checks the identity; without one, it is the id.
func (p *parser) agentIdentity(a *parsedAgent, e entry) {
	kv, set := e.value(keyIdentity)
	if !set {
		if a.id.ok {
			a.Identity = a.ID
			a.identity = a.id
			a.identityDefaulted = true
		}
		return
	}
	s, good := p.str(kv, e.k(keyIdentity))
	if !good {
		return
	}
	if err := identity.Validate(s); err != nil {
		p.add(&Error{File: p.file, Line: kv.val.Line, Key: e.k(keyIdentity), Msg: err.Error(), Err: err})
		return
	}
	a.Identity = s
	a.identity = found{kv.val.Line, true}
}

// agentCommand checks the command, which every agent needs.
func (p *parser) agentCommand(a *parsedAgent, e entry) {
	kv, set := e.value(keyCommand)
	if !set {
		p.errorf(e.line, e.k(keyCommand), "missing; write the program and its arguments as a list, e.g. [goose, acp]")
		return
	}
	a.Command = p.command(kv, e.k(keyCommand))
}

func (p *parser) agentDir(a *parsedAgent, e entry) {
	if kv, set := e.vals[keyDir]; set {
		if s, good := p.str(kv, e.k(keyDir)); good {
			a.Dir, _ = p.path(s, kv.val.Line, e.k(keyDir))
		}
	}
}

func (p *parser) agentEnv(a *parsedAgent, e entry) {
	if kv, set := e.vals[keyEnv]; set {
		a.Env = p.env(kv, e.k(keyEnv))
	}
}

// agentEnvFile checks the env_file's path, and the file itself now.
func (p *parser) agentEnvFile(a *parsedAgent, e entry) {
	kv, set := e.vals[keyEnvFile]
	if !set {
		return
	}
	if s, good := p.str(kv, e.k(keyEnvFile)); good && s != "" {
		if path, good := p.path(s, kv.val.Line, e.k(keyEnvFile)); good {
			a.EnvFile = path
			p.envFile(path, s, kv.val.Line, e.k(keyEnvFile))
		}
	}
}

func (p *parser) agentAutostart(a *parsedAgent, e entry) {
	if kv, set := e.value(keyAutostart); set {
		v := deref(kv.val)
		if err := v.Decode(&a.Autostart); err != nil || v.Kind != yaml.ScalarNode {
			p.errorf(kv.val.Line, e.k(keyAutostart), "%s is not true or false", describe(v))
		}
	}
}

// agentStopTimeout checks the stop timeout; without one,
// DefaultStopTimeout.
func (p *parser) agentStopTimeout(a *parsedAgent, e entry) {
	kv, set := e.value(keyStopTimeout)
	if !set {
		return
	}
	s, good := p.str(kv, e.k(keyStopTimeout))
	if !good {
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.errorf(kv.val.Line, e.k(keyStopTimeout), "%s is not a duration: write a number with a unit, e.g. 5s, 500ms or 1m30s", short(s))
	case d <= 0:
		p.errorf(kv.val.Line, e.k(keyStopTimeout), "%s must be more than 0", short(s))
	case d > MaxStopTimeout:
		p.errorf(kv.val.Line, e.k(keyStopTimeout), "%s is more than the limit of 1h", short(s))
	default:
		a.StopTimeout = d
		a.stopLine = kv.val.Line
	}
}

func (p *parser) command(kv pair, key string) []string {
	defer p.through(kv.val, key)()
	list := deref(kv.val)
	if list.Kind == yaml.ScalarNode {
		p.errorf(kv.val.Line, key, "must be a list such as [goose, acp], not a string: tether runs the command without a shell (write [sh, -c, \"...\"] if you want one)")
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(kv.val.Line, key, "must be a list such as [goose, acp], not %s", kindName(list))
		return nil
	}
	if len(list.Content) == 0 {
		p.errorf(kv.val.Line, key, "is empty; write the program and its arguments, e.g. [goose, acp]")
		return nil
	}
	argv := make([]string, 0, len(list.Content))
	ok := true
	for i, item := range list.Content {
		if !p.visit(item) {
			return nil
		}
		s, good := p.str(pair{key: kv.key, val: item}, key+"["+strconv.Itoa(i)+"]")
		switch {
		case !good:
			ok = false
		case i == 0 && s == "":
			p.errorf(item.Line, key+"[0]", "the program name is empty")
			ok = false
		case strings.IndexByte(s, 0) >= 0:
			p.errorf(item.Line, key+"["+strconv.Itoa(i)+"]", "contains a NUL byte")
			ok = false
		}
		argv = append(argv, s)
	}
	if !ok {
		return nil
	}
	return argv
}

func (p *parser) env(kv pair, key string) map[string]string {
	defer p.through(kv.val, key)()
	m := deref(kv.val)
	if isNull(m) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be a mapping of NAME: value, not %s", kindName(m))
		return nil
	}
	env := map[string]string{}
	for _, e := range p.pairs(m, key, 0) {
		k := key + "." + e.name
		if !validName(e.name) {
			p.errorf(e.key.Line, k, "%s is not a valid variable name: use letters, digits and '_', not starting with a digit", short(e.name))
			continue
		}
		s, good := p.str(e, k)
		if !good {
			continue
		}
		if strings.IndexByte(s, 0) >= 0 {
			p.errorf(e.val.Line, k, "the value contains a NUL byte")
			continue
		}
		env[e.name] = s
	}
	return env
}

// envFile checks the env file at load time; its values are dropped.
func (p *parser) envFile(path, written string, line int, key string) {
	_, e := readEnvFile(path)
	if e == nil {
		return
	}
	e.Key = key
	if e.Line == 0 {
		// A problem with the file as a whole: point at the config line.
		name := path
		if written != path {
			name = written + " (" + path + ")"
		}
		e.File, e.Line, e.Msg = p.file, line, name+" "+e.Msg
	} else if p.file != "" {
		e.Msg += fmt.Sprintf(" (env_file named at %s:%d)", p.file, line)
	}
	p.addAt(line, e)
}

// path expands "~" and makes s absolute against the config's directory.
func (p *parser) path(s string, line int, key string) (string, bool) {
	if s == "" {
		return "", true
	}
	if strings.IndexByte(s, 0) >= 0 {
		p.errorf(line, key, "the path contains a NUL byte")
		return "", false
	}
	if s == "~" || strings.HasPrefix(s, "~/") || (runtime.GOOS == "windows" && strings.HasPrefix(s, `~\`)) {
		home, err := os.UserHomeDir()
		if err != nil {
			p.add(&Error{File: p.file, Line: line, Key: key, Msg: "cannot expand ~: " + err.Error(), Err: err})
			return "", false
		}
		s = filepath.Join(home, s[1:])
	} else if strings.HasPrefix(s, "~") {
		p.errorf(line, key, "%s: only \"~\" and \"~/...\" are expanded; write the full path", short(s))
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.base, s)
	}
	return filepath.Clean(s), true
}

// str decodes a scalar into a string; null is "".
func (p *parser) str(kv pair, key string) (string, bool) {
	v := deref(kv.val)
	if v.Kind != yaml.ScalarNode {
		p.errorf(kv.val.Line, key, "must be a string, not %s", kindName(v))
		return "", false
	}
	if isNull(v) {
		return "", true
	}
	if v.ShortTag() == strTag {
		return v.Value, true
	}
	var s string
	if err := v.Decode(&s); err != nil {
		p.add(&Error{File: p.file, Line: kv.val.Line, Key: key, Msg: "must be a string", Err: err})
		return "", false
	}
	return s, true
}

type pair struct {
	name     string
	key, val *yaml.Node
}

// maxMergeDepth bounds "<<" merges, which can refer to themselves.
const maxMergeDepth = 8

// pairs lists the entries of mapping m. Keys given twice are reported
// (naming both lines). "<<: *anchor" merges are expanded; keys written in
// m win over merged ones, earlier merge sources over later ones.
func (p *parser) pairs(m *yaml.Node, key string, depth int) []pair {
	var (
		out    []pair
		at     = map[string]int{}
		merged []pair
	)
	join := func(name string) string {
		if key == "" {
			return name
		}
		return key + "." + name
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !p.visit(k) {
			return nil
		}
		if k.Kind == yaml.ScalarNode && k.Tag == mergeTag {
			merged = append(merged, p.merge(k, v, key, depth)...)
			continue
		}
		kk := deref(k)
		if kk.Kind != yaml.ScalarNode {
			p.errorf(k.Line, key, "keys must be plain names, not %s", kindName(kk))
			continue
		}
		name := kk.Value
		if name == "" {
			p.errorf(k.Line, key, "keys must be plain names, not empty")
			continue
		}
		if first, dup := at[name]; dup {
			p.errorf(k.Line, join(name), "given twice (also at line %d)", first)
			continue
		}
		at[name] = k.Line
		out = append(out, pair{name, k, v})
	}
	for _, kv := range merged {
		if _, dup := at[kv.name]; !dup {
			at[kv.name] = kv.key.Line
			out = append(out, kv)
		}
	}
	return out
}

func (p *parser) merge(k, v *yaml.Node, key string, depth int) []pair {
	if depth >= maxMergeDepth {
		p.errorf(k.Line, key, "\"<<\" merges nest more than %d deep (does an anchor merge itself?)", maxMergeDepth)
		return nil
	}
	blame := key
	if blame == "" {
		blame = "<<" // a merge into the root mapping
	}
	defer p.through(k, blame)()
	src := deref(v)
	var maps []*yaml.Node
	switch src.Kind {
	case yaml.MappingNode:
		maps = []*yaml.Node{src}
	case yaml.SequenceNode:
		for _, item := range src.Content {
			if !p.visit(item) {
				return nil
			}
			maps = append(maps, deref(item))
		}
	default:
		maps = []*yaml.Node{src}
	}
	var out []pair
	for _, mm := range maps {
		if mm.Kind != yaml.MappingNode {
			p.errorf(v.Line, key, "\"<<\" merges a mapping or a list of mappings, not %s", kindName(mm))
			continue
		}
		out = append(out, p.pairs(mm, key, depth+1)...)
	}
	// Within the merged sources the first one wins.
	seen := map[string]bool{}
	kept := out[:0]
	for _, kv := range out {
		if !seen[kv.name] {
			seen[kv.name] = true
			kept = append(kept, kv)
		}
	}
	return kept
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return "a scalar " + short(n.Value)
	}
	return "an unexpected node"
}

// describe quotes a scalar, or names what else it is.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return short(n.Value)
	}
	return kindName(n)
}

// policyList names the restart policies for messages: "never,
// on-failure, always".
func policyList() string {
	names := make([]string, 0, len(api.RestartPolicies()))
	for _, pol := range api.RestartPolicies() {
		names = append(names, string(pol))
	}
	return strings.Join(names, ", ")
}
