package service

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tether-dev/tether/guardian"
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
		in, err := json.Marshal(handoverOffer{Handover: c.offer, Guardian: []int{guardian.ProtocolVersion}, Config: cfg})
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
	}
}
