package cli

import (
	"fmt"
	"io"
	"strings"
)

// WriteMan writes tether(1), in roff's man macros, from the same text as
// `tether help`: the usage, every command's help and example, the global
// flags and the exit codes. version and date (YYYY-MM-DD) go into its
// title line. make dist generates the packaged page with it.
func WriteMan(w io.Writer, version, date string) {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH TETHER 1 %s %s \"User Commands\"\n", manQuote(date), manQuote("tether "+version))
	b.WriteString(".SH NAME\ntether \\- keep local agent processes on a leash\n")
	b.WriteString(".SH SYNOPSIS\n")
	manVerbatim(&b, strings.TrimPrefix(globalUsage, "usage: "))
	b.WriteString(".SH DESCRIPTION\n")
	manVerbatim(&b, manDescription)
	b.WriteString(".SH COMMANDS\n")
	for _, d := range docs {
		var h strings.Builder
		writeHelp(&h, d)
		text := strings.TrimPrefix(h.String(), "usage: tether "+d.usage+"\n")
		fmt.Fprintf(&b, ".SS %s\n", manQuote("tether "+d.usage))
		manVerbatim(&b, strings.Trim(text, "\n"))
	}
	b.WriteString(".SH GLOBAL FLAGS\n")
	manVerbatim(&b, globalFlagsText)
	b.WriteString(".SH EXIT STATUS\n")
	manVerbatim(&b, strings.TrimPrefix(strings.TrimRight(exitCodesText, "\n"), "exit codes: "))
	b.WriteString(".SH SEE ALSO\n")
	b.WriteString("https://github.com/tether-dev/tether\n")
	io.WriteString(w, b.String())
}

// manDescription opens the page: what tether is.
const manDescription = `tether supervises local agent processes for one user: a service per
profile starts the agents of its config (agents.yaml), each under a
guardian that holds the agent's identity, so that no identity runs
twice and nothing an agent started outlives it. The tray, the command
line and the local API show and control them.`

// manVerbatim writes text as lines kept as they are (.nf), each escaped
// for roff.
func manVerbatim(b *strings.Builder, text string) {
	b.WriteString(".nf\n")
	for line := range strings.SplitSeq(text, "\n") {
		b.WriteString(manEscape(line) + "\n")
	}
	b.WriteString(".fi\n")
}

// manEscape makes a line of text a line of roff: '\' is written \e, '-'
// \- (a minus, which stays a hyphen a user can copy), and a line that
// begins with '.' or '\” (a request) starts with \& instead.
func manEscape(line string) string {
	line = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(line)
	if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
		line = `\&` + line
	}
	return line
}

// manQuote makes s one argument of a macro: double-quoted, with '"'
// doubled and the text escaped.
func manQuote(s string) string {
	return `"` + strings.ReplaceAll(manEscape(s), `"`, `""`) + `"`
}
