package upgrade

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tether-dev/tether/wire"
)

// The check takes an offer of the record version this binary reads and a
// config it parses, and refuses any other version, or a config it
// rejects, saying why.
func TestHandoverCheck(t *testing.T) {
	good := Config{Path: "agents.yaml", Source: []byte("agents:\n  - id: a\n    command: [sleep, \"1\"]\n")}
	bad := Config{Path: "agents.yaml", Source: []byte("agents:\n  - id: a\n    command: [sleep, \"1\"]\n    stop_timeout: soon\n")}
	for _, c := range []struct {
		name  string
		offer Offer
		want  string // in the answer's error; empty: taken
	}{
		{"taken", Offer{Handover: Version, Config: good}, ""},
		{"another record version", Offer{Handover: Version + 1, Config: good}, "handover records of version 2; this tether reads version 1"},
		{"config rejected", Offer{Handover: Version, Config: bad}, "stop_timeout"},
	} {
		c.offer.Guardian = []int{wire.Version}
		in, err := json.Marshal(c.offer)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := HandoverCheck("test", bytes.NewReader(in), &out, nil)
		if bytes.Count(out.Bytes(), []byte("\n")) != 1 {
			t.Fatalf("%s: the answer %q, want one line", c.name, out.String())
		}
		var ans Answer
		if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
			t.Fatalf("%s: the answer %q: %v", c.name, out.String(), err)
		}
		if (code == 0) != (c.want == "") || !strings.Contains(ans.Error, c.want) || (c.want == "") != (ans.Error == "") {
			t.Errorf("%s: exit %d, %q; want %q", c.name, code, ans.Error, c.want)
		}
		if ans.Handover != Version {
			t.Errorf("%s: the check says it reads version %d, want %d", c.name, ans.Handover, Version)
		}
		if ans.Build == "" || ans.Build != SelfBuild() {
			t.Errorf("%s: the check says it is build %q, and this binary is %q", c.name, ans.Build, SelfBuild())
		}
		// No guardian's own executable beside the test binary: it
		// would run itself as the guardian.
		if exe, _ := os.Executable(); ans.Guardian != exe+" guardian" {
			t.Errorf("%s: the check says its guardians run %q, want %q", c.name, ans.Guardian, exe+" guardian")
		}
	}
}
