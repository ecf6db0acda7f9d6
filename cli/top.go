package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tether-dev/tether/top"
)

const topUsage = "usage: tether top [--interval D]"

// top runs the live terminal view of the profile's agents (package top)
// on the process's terminal, until the person quits it.
func (inv *invocation) top(args []string) int {
	fs := newFlags("top", inv)
	interval := fs.Duration("interval", 0, "measure CPU and memory every D while the view is open (0: only at u)")
	if err := parseFlags(fs, args); err != nil || fs.NArg() > 0 {
		return inv.commandUsage(err, topUsage)
	}
	if *interval != 0 && *interval < top.MinInterval {
		fmt.Fprintf(inv.stderr, "tether top: --interval %s: at least %s, or 0 for none\n", *interval, top.MinInterval)
		return inv.commandUsage(nil, topUsage)
	}
	c, p, err := inv.client()
	if err != nil {
		return inv.fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = top.Run(ctx, top.Options{Client: c, Profile: p.Profile, In: os.Stdin, Out: os.Stdout,
		NoColor: os.Getenv("NO_COLOR") != "", Interval: *interval})
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return ExitOK
	case errors.Is(err, top.ErrNotTerminal):
		return inv.fail("%v: run it in a terminal, or use tether status", err)
	}
	return inv.fail("%v", err)
}
