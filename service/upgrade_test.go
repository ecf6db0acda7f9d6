package service

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/wire"
)

// The record written is the newest version both sides read, so that a
// binary that reads only older records can still take over; a binary
// that reads none of those this service writes is refused before
// anything is paused.
func TestRecordVersion(t *testing.T) {
	for _, c := range []struct {
		reads [2]int
		want  int // 0: refused
	}{
		{[2]int{1, 1}, 1},
		{[2]int{1, HandoverVersion}, HandoverVersion},
		{[2]int{1, HandoverVersion + 3}, HandoverVersion},
		{[2]int{HandoverVersion, HandoverVersion + 1}, HandoverVersion},
		{[2]int{HandoverVersion + 1, HandoverVersion + 2}, 0},
		{[2]int{0, 0}, 0},
	} {
		v, err := recordVersion(successorCheck{Handover: c.reads})
		switch {
		case c.want == 0 && err == nil:
			t.Errorf("a successor reading %v: version %d, want a refusal", c.reads, v)
		case c.want != 0 && (err != nil || v != c.want):
			t.Errorf("a successor reading %v: version %d, %v; want %d", c.reads, v, err, c.want)
		}
	}
}

// The check answers for every record version this binary reads, and
// refuses an offer of a newer one: an older service offers its oldest
// version, which a newer binary still reads.
func TestHandoverCheckVersions(t *testing.T) {
	cfg := handoverConfig{Path: "agents.yaml", Source: []byte("agents:\n  - id: a\n    command: [sleep, \"1\"]\n")}
	for _, c := range []struct {
		offer int
		ok    bool
	}{
		{MinHandoverVersion, true},
		{HandoverVersion, true},
		{HandoverVersion + 1, false},
	} {
		in, err := json.Marshal(handoverOffer{Handover: c.offer, Guardian: []int{wire.Version}, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := HandoverCheck(Paths{}, "test", bytes.NewReader(in), &out)
		var ans successorCheck
		if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
			t.Fatalf("offer of version %d: the answer %q: %v", c.offer, out.String(), err)
		}
		if (code == 0) != c.ok || (ans.Error == "") != c.ok {
			t.Errorf("offer of version %d: exit %d, %q; want it taken: %v", c.offer, code, ans.Error, c.ok)
		}
		if ans.Handover != [2]int{MinHandoverVersion, HandoverVersion} {
			t.Errorf("the check says it reads %v, want %d to %d", ans.Handover, MinHandoverVersion, HandoverVersion)
		}
		if ans.Build == "" || ans.Build != selfBuild() {
			t.Errorf("the check says it is build %q, and this binary is %q", ans.Build, selfBuild())
		}
		if !c.ok {
			continue
		}
		// What it parsed, for its successor to read.
		parsed, err := config.FromParsedForm(cfg.Path, cfg.Source, ans.Parsed)
		if err != nil || len(parsed.Agents) != 1 || parsed.Agents[0].ID != "a" {
			t.Errorf("the check's parsed config %s: %+v, %v", ans.Parsed, parsed, err)
		}
	}
}

// Asked for the config's verdict apart, the check answers twice: first
// whether it can take over, then, once it has parsed the config, the
// verdict with the parsed form. A binary that cannot take over answers
// once; a config it rejects is the second answer's error.
func TestHandoverCheckParseApart(t *testing.T) {
	good := handoverConfig{Path: "agents.yaml", Source: []byte("agents:\n  - id: a\n    command: [sleep, \"1\"]\n")}
	bad := handoverConfig{Path: "agents.yaml", Source: []byte("agents:\n  - id: a\n    command: [sleep, \"1\"]\n    stop_timeout: soon\n")}
	for _, c := range []struct {
		name    string
		offer   handoverOffer
		answers int
		code    int
		want    string // in the last answer's error
	}{
		{"taken", handoverOffer{Handover: HandoverVersion, Config: good, ParseApart: true}, 2, 0, ""},
		{"config rejected", handoverOffer{Handover: HandoverVersion, Config: bad, ParseApart: true}, 2, 1, "stop_timeout"},
		{"record refused", handoverOffer{Handover: HandoverVersion + 1, Config: good, ParseApart: true}, 1, 1, "handover records of version"},
	} {
		in, err := json.Marshal(c.offer)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := HandoverCheck(Paths{}, "test", bytes.NewReader(in), &out)
		lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
		if code != c.code || len(lines) != c.answers {
			t.Fatalf("%s: exit %d with %d answers %q; want exit %d with %d", c.name, code, len(lines), out.String(), c.code, c.answers)
		}
		var first, last successorCheck
		if err := json.Unmarshal(lines[0], &first); err != nil {
			t.Fatalf("%s: the first answer %q: %v", c.name, lines[0], err)
		}
		if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil {
			t.Fatalf("%s: the last answer %q: %v", c.name, lines[len(lines)-1], err)
		}
		if c.answers == 2 && (!first.ParseFollows || first.Error != "" || len(first.Parsed) > 0 || first.Build != selfBuild()) {
			t.Errorf("%s: the first answer %+v, want a yes with the parse to follow", c.name, first)
		}
		if !strings.Contains(last.Error, c.want) || (c.want == "") != (last.Error == "") {
			t.Errorf("%s: the last answer's error %q, want %q", c.name, last.Error, c.want)
		}
		if c.code == 0 {
			if parsed, err := config.FromParsedForm(good.Path, good.Source, last.Parsed); err != nil || len(parsed.Agents) != 1 {
				t.Errorf("%s: the verdict's parsed config %s: %+v, %v", c.name, last.Parsed, parsed, err)
			}
		}
	}
}

// A successor of the build that parsed the config reads its parsed form;
// any other build parses the source.
func TestHandoverConfigParsedForm(t *testing.T) {
	// The form says one agent and the source none: which was read shows.
	form := []byte(`[{"ID":"from-form","Identity":"from-form","Command":["x"]}]`)
	rec := handoverRecord{Config: handoverConfig{Path: "agents.yaml", Source: []byte("agents: []\n")}, Parsed: form}
	for _, c := range []struct {
		by   string
		want int
	}{
		{selfBuild(), 1},
		{"another-build", 0},
		{"", 0},
	} {
		rec.ParsedBy = c.by
		cfg, err := rec.config()
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Agents) != c.want || cfg.Path != "agents.yaml" || string(cfg.Source) != "agents: []\n" {
			t.Errorf("parsed by %q: %+v, want %d agents", c.by, cfg, c.want)
		}
	}
	// A form that does not decode: the source is parsed.
	rec.Parsed, rec.ParsedBy = []byte(`{`), selfBuild()
	if cfg, err := rec.config(); err != nil || len(cfg.Agents) != 0 {
		t.Errorf("a broken form: %+v, %v; want the source's config", cfg, err)
	}
}

// The check's answer is what encoding/json would write, the parsed form
// included as it is.
func TestSuccessorCheckEncode(t *testing.T) {
	for _, c := range []successorCheck{
		{Version: "v1", Build: "b", Handover: [2]int{1, 3}, Protocol: [2]int{1, 2}},
		{Version: "v1", Build: "b", Handover: [2]int{1, 3}, Protocol: [2]int{1, 2}, Error: "no"},
		{Version: "v1", Handover: [2]int{1, 3}, Parsed: json.RawMessage(`[{"ID":"a","Command":["x","y"]}]`)},
	} {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got := c.encode()
		if string(got) != string(want)+"\n" {
			t.Errorf("%+v: encoded\n%s\nwant\n%s", c, got, want)
		}
	}
}

// The pause waits after the check's first answer for as long as the
// check of the handover before parsed, less what its freeze took: none
// without a whole timeline, none when the freeze took longer, and never
// more than maxPauseLead.
func TestPauseLead(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	steps := func(checked, paused, frozen, parsed float64) []handoverStep {
		return []handoverStep{{"checked", ms(checked)}, {"paused", ms(paused)}, {"frozen", ms(frozen)}, {"parsed", ms(parsed)}, {"running", ms(parsed + 10)}}
	}
	for _, c := range []struct {
		name string
		prev []handoverStep
		want time.Duration
	}{
		{"no handover before", nil, 0},
		{"a check that refused", []handoverStep{{"checked", ms(9)}}, 0},
		{"the parse longer than the freeze", steps(10, 11, 17, 22), ms(6)},
		{"the freeze longer than the parse", steps(10, 11, 20, 15), 0},
		{"a parse of seconds", steps(10, 11, 17, 5000), maxPauseLead},
	} {
		if got := pauseLead(c.prev); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A step marked at a time goes in its place by time.
func TestMarkAt(t *testing.T) {
	began := time.Now()
	beginSteps(began, []handoverStep{{"checked", time.Millisecond}, {"paused", 2 * time.Millisecond}, {"frozen", 5 * time.Millisecond}})
	defer beginSteps(time.Time{}, nil)
	markAt("parsed", began.Add(3*time.Millisecond))
	var names []string
	for _, st := range stepList() {
		names = append(names, st.Step)
	}
	if got := strings.Join(names, " "); got != "checked paused parsed frozen" {
		t.Errorf("the timeline %q, want the parse between the pause and the freeze", got)
	}
}
