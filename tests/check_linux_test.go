package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tether check also verifies what it can without starting anything: each
// dir exists, and each command resolves to an executable in the PATH the
// agent would have (its own env included), each problem naming the
// file, the agent's line and the key.
func TestCheckResolvesCommandsAndDirs(t *testing.T) {
	w := newWorld(t)
	plain := filepath.Join(w.dir, "not-a-program")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`agents:
  - id: ok
    command: [sh, -c, "true"]
    dir: %s
  - id: missing
    command: [/nonexistent/prog]
  - id: notinpath
    command: [no-such-command-anywhere]
  - id: plainfile
    command: [%s]
  - id: nodir
    command: [/bin/sh]
    dir: %s
  - id: ownpath
    command: [sh]
    env: {PATH: /nonexistent}
`, w.dir, plain, filepath.Join(w.dir, "gone")))
	r := w.run(10*time.Second, "check")
	if r.code != 1 {
		t.Fatalf("check: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"agents.yaml:5: agents[1].command: agent \"missing\": command \"/nonexistent/prog\" not found",
		"agents.yaml:7: agents[2].command: agent \"notinpath\": command \"no-such-command-anywhere\" not found in PATH",
		"agents.yaml:9: agents[3].command: agent \"plainfile\": command \"" + plain + "\" is not executable",
		"agents.yaml:11: agents[4].dir: agent \"nodir\":",
		"agents.yaml:14: agents[5].command: agent \"ownpath\": command \"sh\" not found in PATH \"/nonexistent\"",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("check's errors lack %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, `"ok"`) {
		t.Errorf("check complains of the agent that is fine:\n%s", r.stderr)
	}
}
