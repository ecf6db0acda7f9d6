package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/tether-dev/tether/top"
)

// top runs the live terminal view of the profile's agents (package top)
// on the process's terminal, until the person quits it.
func (inv *invocation) top(args []string) int {
	fs := newFlags("top", inv)
	if err := parseFlags(fs, args); err != nil || fs.NArg() > 0 {
		return inv.commandUsage(err, "usage: tether top")
	}
	c, p, err := inv.client()
	if err != nil {
		return inv.fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = top.Run(ctx, top.Options{Client: c, Profile: p.Profile, In: os.Stdin, Out: os.Stdout,
		NoColor: os.Getenv("NO_COLOR") != ""})
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return ExitOK
	case errors.Is(err, top.ErrNotTerminal):
		return inv.fail("%v: run it in a terminal, or use tether status", err)
	}
	return inv.fail("%v", err)
}
