package tray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tether-dev/tether/client"
)

// hostWait is how long the tray waits for a tray host before it says
// that there is none: at login, the tray may start before the panel does.
// It goes on waiting after that.
const hostWait = 10 * time.Second

// setLoginNow does what the tray's "Start at login" does, without a tray:
// on registers the login service and the tray's autostart entry and
// starts the service if it does not run; off makes neither start at
// login and stops nothing. It is for scripts and tests.
func setLoginNow(o Options, arg string) int {
	on, ok := map[string]bool{"on": true, "off": false}[arg]
	if !ok {
		fmt.Fprintf(o.Stderr, "tether tray: --set-login=on or --set-login=off, not %q\n", arg)
		return 2
	}
	if err := setLogin(o, on); err != nil {
		fmt.Fprintf(o.Stderr, "tether tray: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := client.New(o.Socket).Status(ctx)
	cancel()
	if on && errors.Is(err, client.ErrNotRunning) {
		if _, _, err := startService(o); err != nil {
			fmt.Fprintf(o.Stderr, "tether tray: starting the service: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(o.Stderr, "tether tray: start at login is %s\n", arg)
	return 0
}

// Main runs the tray until it is quit (its menu, SIGINT, SIGTERM) and
// returns the exit code: 0, also when a tray of the profile already runs
// on this display (it says so, and starts no second one), 1 when it
// cannot run (no session bus, no tray in this build), 2 for arguments.
//
// Where the desktop has no tray host yet (Linux: no StatusNotifierWatcher
// on the session bus, such as GNOME without the AppIndicator extension),
// the tray waits for one as long as it runs, and meanwhile watches the
// service and raises its notifications all the same; after hostWait it
// says once, in a notification, how to get a tray.
func Main(o Options) int {
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if len(o.Args) == 1 && o.Args[0] == "--at-login" {
		o.AtLogin, o.Args = true, nil
	}
	if len(o.Args) == 1 && strings.HasPrefix(o.Args[0], "--set-login=") {
		return setLoginNow(o, strings.TrimPrefix(o.Args[0], "--set-login="))
	}
	if len(o.Args) > 0 {
		fmt.Fprintf(o.Stderr, "tether tray: takes no arguments but --at-login, got %q\n", strings.Join(o.Args, " "))
		return 2
	}
	if err := prepareBus(); err != nil {
		fmt.Fprintf(o.Stderr, "tether tray: %v\n", err)
		return 1
	}
	// One tray per profile and display: a second would show a second
	// icon and raise every notice twice.
	lock, err := claimTray(trayLockPath(o.StateDir))
	if errors.Is(err, errAnotherTray) {
		fmt.Fprintf(o.Stderr, "tether tray: %v; not starting another\n", err)
		return 0
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "tether tray: %v\n", err)
		return 1
	}
	defer lock.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n := newNotifier()
	defer n.close()
	u := &lateUI{}
	e := newEngine(ctx, o, osDeps(n), u)
	// Ages in the menu are recomputed when it opens; where the tray
	// cannot tell, it shows since when instead.
	e.ageAsClock = !watchMenuOpens(ctx, e.opened)
	n.fileOf(e.fileOf)
	e.start()
	err = waitHost(ctx, hostWait, func() {
		e.logf("no system tray host yet (%s); waiting for one", watcherName)
		e.post(noTrayNotice())
	})
	switch {
	case err == nil:
		err = runUI(e, u.attach)
	case ctx.Err() != nil:
		err = nil // quit while waiting
	}
	if !e.stop(5 * time.Second) {
		e.logf("some requests were still under way at exit")
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "tether tray: %v\n", err)
		return 1
	}
	return 0
}
