package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/service"
)

// upgradeWait bounds the wait for the successor to answer.
const upgradeWait = time.Minute

// upgrade is "service upgrade [BINARY]": the running service hands over
// to BINARY (this tether's own binary by default) and every agent keeps
// running (I9).
func (inv *invocation) upgrade(p service.Paths, args []string) int {
	fs := newFlags("service upgrade", inv)
	if err := parseFlags(fs, args); err != nil || fs.NArg() > 1 {
		return inv.commandUsage(err, "usage: tether service upgrade [BINARY]")
	}
	exe := fs.Arg(0)
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return inv.fail("%v", err)
		}
	}
	exe, err := filepath.Abs(exe)
	if err != nil {
		return inv.fail("%v", err)
	}
	c := client.New(p.Socket)
	up, err := upgradeService(c, exe)
	if err != nil {
		return inv.apiFailure(p, err)
	}
	fmt.Fprintf(inv.stdout, "upgraded to %s (build %s) in %v; every agent kept running\n", exe, up.To, up.Took.Round(time.Millisecond))
	return ExitOK
}

// upgradeService asks the service behind c to become exe and waits until
// its successor serves, or the attempt failed: the error is then an
// *api.Error with code upgrade, the service running as before.
func upgradeService(c *client.Client, exe string) (api.Upgrade, error) {
	ctx, cancel := context.WithTimeout(context.Background(), upgradeWait)
	defer cancel()
	before, err := c.Status(ctx)
	if err != nil {
		return api.Upgrade{}, err
	}
	ans, err := c.Upgrade(ctx, api.UpgradeRequest{Executable: exe})
	// Another upgrade was handing over: this one is asked of the
	// service that comes of it (the request queues until it answers).
	for ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Code == api.CodeHandingOver; {
		select {
		case <-ctx.Done():
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: fmt.Sprintf("another upgrade was under way, and the service did not take this one within %s", human.Duration(upgradeWait))}
		case <-time.After(5 * time.Millisecond):
		}
		ans, err = c.Upgrade(ctx, api.UpgradeRequest{Executable: exe})
	}
	if err != nil {
		return api.Upgrade{}, err
	}
	id := ans.Upgrade.ID
	// A stand-in answered for the service while it handed over: the
	// successor had not answered yet.
	stoodIn := false
	for {
		st, err := c.Status(ctx)
		switch {
		case errors.Is(err, client.ErrNotRunning) && stoodIn:
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: "the service ended during the upgrade: its successor died before it answered; the service manager, if any, starts it again"}
		case errors.Is(err, client.ErrNotRunning):
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: "the service stopped during the upgrade: its successor died after taking over (the service manager, if any, starts it again)"}
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: fmt.Sprintf("no word of upgrade %s within %s", id, human.Duration(upgradeWait))}
		case err != nil && !errors.As(err, new(*api.Error)):
			// The connection was reset or cut: the process that held
			// the socket (the successor, after the exec) ended before
			// it answered.
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: fmt.Sprintf("the service ended during the upgrade: its successor died before it answered (%v); the service manager, if any, starts it again", err)}
		case err != nil:
			return api.Upgrade{}, err
		case st.ServicePID != before.ServicePID && runtime.GOOS != "windows":
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: fmt.Sprintf("the service now runs as pid %d, not %d: its successor died and the service was started again", st.ServicePID, before.ServicePID)}
		case st.Service != nil && st.Service.Upgrade != nil && st.Service.Upgrade.ID == id:
			u := *st.Service.Upgrade
			if u.Error != nil {
				return u, u.Error
			}
			if u.Took > 0 {
				return u, nil
			}
			stoodIn = stoodIn || u.Paused > 0
		}
		select {
		case <-ctx.Done():
			return api.Upgrade{}, &api.Error{Code: api.CodeUpgrade, Message: fmt.Sprintf("no word of upgrade %s within %s", id, human.Duration(upgradeWait))}
		case <-time.After(5 * time.Millisecond):
		}
	}
}
