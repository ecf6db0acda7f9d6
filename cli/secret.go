package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/charmbracelet/x/term"

	"github.com/tether-dev/tether/service"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/secret"
)

// errSecretUsage is the usage of "tether secret".
var errSecretUsage = errors.New("usage: tether secret set ID NAME (the value on standard input) | tether secret ls ID")

// secretCmd runs "tether secret set|ls". Both work from the config: NAME
// is a variable of agent ID's secrets, and its {keyring: KEY} names the
// keychain entry. Neither needs the service.
func (inv *invocation) secretCmd(args []string) int {
	switch {
	case len(args) == 3 && args[0] == "set":
		return inv.secretSet(args[1], args[2], os.Stdin)
	case len(args) == 2 && args[0] == "ls":
		return inv.secretLs(args[1])
	}
	return inv.usage(errSecretUsage)
}

// secretAgent loads the config and returns agent id's entry and the
// profile's name.
func (inv *invocation) secretAgent(id string) (config.Agent, string, error) {
	p, err := inv.paths()
	if err != nil {
		return config.Agent{}, "", err
	}
	cfg, err := service.LoadConfig(p)
	if err != nil {
		return config.Agent{}, "", err
	}
	ids := make([]string, len(cfg.Agents))
	for i, a := range cfg.Agents {
		if a.ID == id {
			return a, p.Profile, nil
		}
		ids[i] = a.ID
	}
	return config.Agent{}, "", fmt.Errorf("no agent %q in %s%s", id, cfg.Path, didYouMean(id, ids))
}

// secretSet stores the value read from in as the keychain entry of agent
// id's secret name. On a terminal it asks for it without echoing it, one
// line; otherwise it reads everything, without one trailing newline.
func (inv *invocation) secretSet(id, name string, in *os.File) int {
	a, profile, err := inv.secretAgent(id)
	if err != nil {
		return inv.fail("%v", err)
	}
	ref, ok := a.Secrets[name]
	switch {
	case !ok:
		return inv.fail("agent %q has no secret %s: add to its entry\n    secrets: {%s: {keyring: KEY}}\nthen store its value with this command again%s",
			id, name, name, didYouMean(name, a.SecretNames()))
	case ref.Exec != nil:
		return inv.fail("secret %s of agent %q is read from a command (%s), not from the keychain: there is nothing to store", name, id, ref)
	}
	var value string
	if term.IsTerminal(in.Fd()) {
		b, err := readHidden(in, func() { fmt.Fprintf(inv.stderr, "value of %s for agent %q (not shown): ", name, id) })
		fmt.Fprintln(inv.stderr)
		if err != nil {
			return inv.fail("reading the value: %v", err)
		}
		value = string(b)
		clear(b)
	} else {
		b, err := io.ReadAll(io.LimitReader(bufio.NewReader(in), secret.MaxValue+3))
		if err != nil {
			return inv.fail("reading the value from standard input: %v", err)
		}
		value = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		clear(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), secret.Timeout)
	defer cancel()
	if err := secret.Set(ctx, profile, ref.Keyring, value); err != nil {
		return inv.fail("secret %s of agent %q: %v", name, id, err)
	}
	fmt.Fprintf(inv.stdout, "stored %s of agent %q in the keychain (service %s, account %s); it is read at the agent's next start\n",
		name, id, secret.Service(profile), ref.Keyring)
	return ExitOK
}

// secretLs lists agent id's secrets: each name, where it is read from,
// and for a keychain entry whether it is there. Never a value.
func (inv *invocation) secretLs(id string) int {
	a, profile, err := inv.secretAgent(id)
	if err != nil {
		return inv.fail("%v", err)
	}
	if len(a.Secrets) == 0 {
		fmt.Fprintf(inv.stderr, "agent %q has no secrets\n", id)
		return ExitOK
	}
	code := ExitOK
	tw := tabwriter.NewWriter(inv.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFROM\tSTORED")
	for _, name := range a.SecretNames() {
		ref := a.Secrets[name]
		stored := "-" // a command: not run here
		if ref.Exec == nil {
			ctx, cancel := context.WithTimeout(context.Background(), secret.Timeout)
			has, err := secret.Has(ctx, profile, ref.Keyring)
			cancel()
			switch {
			case err != nil:
				stored = "unknown"
				fmt.Fprintf(inv.stderr, "tether: secret %s: %v\n", name, err)
				code = ExitFailure
			case has:
				stored = "yes"
			default:
				stored = "no"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, ref, stored)
	}
	tw.Flush()
	return code
}

// errInterrupted: Ctrl-C or Ctrl-D at the prompt.
var errInterrupted = errors.New("interrupted")

// readHidden reads one line from the terminal in, echoing nothing. The
// terminal is put in raw mode before prompt writes the prompt, so that
// nothing typed after the prompt is shown, however soon it comes (a
// terminal that echoes until the read begins would show what is typed
// ahead). Backspace deletes a character, Ctrl-U the line; Ctrl-C, and
// Ctrl-D on an empty line, give up.
func readHidden(in *os.File, prompt func()) ([]byte, error) {
	st, err := term.MakeRaw(in.Fd())
	if err != nil {
		return nil, err
	}
	defer term.Restore(in.Fd(), st)
	prompt()
	var line []byte
	var b [1]byte
	for {
		n, err := in.Read(b[:])
		if n == 0 {
			if err == nil {
				continue
			}
			clear(line)
			return nil, err
		}
		switch c := b[0]; c {
		case '\r', '\n':
			return line, nil
		case 0x7f, 0x08: // backspace, delete: the last character
			_, size := utf8.DecodeLastRune(line)
			line = line[:len(line)-size]
		case 0x15: // Ctrl-U
			clear(line)
			line = line[:0]
		case 0x03, 0x04: // Ctrl-C, Ctrl-D
			if c == 0x04 && len(line) > 0 {
				continue
			}
			clear(line)
			return nil, errInterrupted
		default:
			line = append(line, c)
		}
	}
}
