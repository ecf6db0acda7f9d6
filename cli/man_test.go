package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The man page carries the text of `tether help` and of every command's
// help, line for line, so the two cannot drift apart.
func TestManPageHasTheHelp(t *testing.T) {
	var b strings.Builder
	WriteMan(&b, "1.2.3", "2026-12-05")
	page := b.String()
	lines := map[string]bool{}
	for l := range strings.SplitSeq(page, "\n") {
		lines[l] = true
	}
	want := func(what, text string) {
		for l := range strings.SplitSeq(strings.Trim(text, "\n"), "\n") {
			if !lines[manEscape(l)] {
				t.Errorf("%s: the man page has no line %q", what, l)
			}
		}
	}
	for _, d := range docs {
		var h strings.Builder
		writeHelp(&h, d)
		want("help "+d.name, strings.TrimPrefix(h.String(), "usage: tether "+d.usage+"\n"))
		if !lines[".SS "+manQuote("tether "+d.usage)] {
			t.Errorf("no section for %s", d.name)
		}
	}
	want("global flags", globalFlagsText)
	want("exit codes", strings.TrimPrefix(exitCodesText, "exit codes: "))
	if !strings.HasPrefix(page, `.TH TETHER 1 "2026\-12\-05" "tether 1.2.3" "User Commands"`+"\n") {
		t.Errorf("title line: %q", strings.SplitN(page, "\n", 2)[0])
	}
}

func TestManEscape(t *testing.T) {
	for in, want := range map[string]string{
		`.agents[] | select(.state == "failed")`: `\&.agents[] | select(.state == "failed")`,
		`'quoted'`:                               `\&'quoted'`,
		`a\b --json`:                             `a\eb \-\-json`,
	} {
		if got := manEscape(in); got != want {
			t.Errorf("manEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// groff reads the page without a warning.
func TestManPageFormats(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: no groff: %v", err)
		}
		t.Skip("no groff")
	}
	var page bytes.Buffer
	WriteMan(&page, "1.2.3", "2026-12-05")
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = &page
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}
