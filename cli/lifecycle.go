package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/install"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/service"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/upgrade"
)

// answerWait bounds the wait for a started service to answer on its
// socket.
const answerWait = 30 * time.Second

// installOptions are the registration of p's service: this binary, the
// profile and config, the PATH of this shell, the stop timeout the config
// needs, and the tray's icon.
func (inv *invocation) installOptions(p service.Paths) (install.Options, error) {
	exe, err := os.Executable()
	if err != nil {
		return install.Options{}, err
	}
	o := install.Options{Executable: exe, Profile: p.Profile, Icon: assets.PNG(assets.Mark)}
	if p.ConfigSet {
		o.ConfigPath = p.Config
	}
	// A config that does not load gets the default stop timeout; the
	// service will say what is wrong with it.
	if cfg, err := service.LoadConfig(p); err == nil {
		o.StopTimeout = service.StopBudget(cfg)
	}
	return o, nil
}

// install is "service install": it registers the service and, unless
// start is false, makes sure the service of this binary runs: a service
// not running is started and waited for; one of another binary is
// upgraded to this one, every agent kept.
func (inv *invocation) install(p service.Paths, o install.Options, start bool) int {
	r, err := install.Install(o)
	if err != nil {
		return inv.installFailure(err)
	}
	fmt.Fprintln(inv.stdout, r.Message)
	if !start {
		return ExitOK
	}
	c := client.New(p.Socket)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := c.Status(ctx)
	cancel()
	switch {
	case errors.Is(err, client.ErrNotRunning):
		return inv.startService(p, o)
	case err != nil:
		return inv.apiFailure(p, err)
	}
	build, berr := upgrade.BuildOf(o.Executable)
	if st.Service == nil || berr != nil || st.Service.Build == build {
		fmt.Fprintf(inv.stdout, "the service already runs (pid %d)\n", st.ServicePID)
		return ExitOK
	}
	fmt.Fprintf(inv.stdout, "the running service (pid %d) runs %s (build %s): upgrading it to this binary\n", st.ServicePID, st.Service.Executable, st.Service.Build)
	up, err := upgradeService(c, o.Executable)
	if err != nil {
		return inv.apiFailure(p, err)
	}
	fmt.Fprintf(inv.stdout, "upgraded to %s (build %s) in %v; every agent kept running\n", o.Executable, up.To, up.Took.Round(time.Millisecond))
	return ExitOK
}

// startService is "service start": it starts the registered service and
// returns once it answers, or fails with what the manager says.
func (inv *invocation) startService(p service.Paths, o install.Options) int {
	if err := install.Start(o); err != nil {
		return inv.installFailure(err)
	}
	st, err := waitAnswer(p, answerWait)
	if err != nil {
		info, serr := install.Status(o)
		why := fmt.Sprintf("%s %s is %s", info.Manager, info.Name, info.State)
		if info.Detail != "" {
			why += " (" + info.Detail + ")"
		}
		if serr != nil {
			why = serr.Error()
		}
		return inv.fail("the service was started but does not answer on %s within %v: %v; %s", p.Socket, answerWait, err, why)
	}
	fmt.Fprintf(inv.stdout, "started: the service answers on %s (pid %d, %s)\n", p.Socket, st.ServicePID, human.Count(len(st.Agents), "agent", "agents"))
	return ExitOK
}

// waitAnswer polls the service until it answers, up to within.
func waitAnswer(p service.Paths, within time.Duration) (api.Status, error) {
	c := client.New(p.Socket)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		st, err := c.Status(ctx)
		if err == nil {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// uninstall is "service uninstall": where the OS stops the service with
// its registration, it says which agents went with it; the tray's
// autostart entry is removed too.
func (inv *invocation) uninstall(p service.Paths, o install.Options) int {
	c := client.New(p.Socket)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	before, beforeErr := c.Status(ctx)
	cancel()
	r, err := install.Uninstall(o)
	if err != nil {
		return inv.installFailure(err)
	}
	fmt.Fprintln(inv.stdout, r.Message)
	// The tray's autostart entry goes too: left, its tray would start the
	// service at the next login, outside the service manager.
	if tr, err := install.UninstallTrayAutostart(o); err != nil {
		return inv.installFailure(err)
	} else if tr.Changed {
		fmt.Fprintln(inv.stdout, tr.Message)
	}
	if beforeErr != nil {
		return ExitOK
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	_, afterErr := c.Status(ctx)
	cancel()
	if !errors.Is(afterErr, client.ErrNotRunning) {
		fmt.Fprintf(inv.stdout, "the service (pid %d) goes on running; `tether service stop` stops it and its agents\n", before.ServicePID)
		return ExitOK
	}
	var ran []string
	for _, a := range before.Agents {
		if a.State != api.StateStopped && a.State != api.StateFailed {
			ran = append(ran, a.ID)
		}
	}
	if len(ran) == 0 {
		fmt.Fprintf(inv.stdout, "stopped the service (pid %d); no agent was running\n", before.ServicePID)
	} else {
		fmt.Fprintf(inv.stdout, "stopped the service (pid %d) and its %s: %s\n", before.ServicePID, human.Count(len(ran), "running agent", "running agents"), strings.Join(ran, ", "))
	}
	return ExitOK
}

// serviceWarnings compares cfg with the installed login service: a stop
// that may take longer than the manager waits, and an agent command found
// in this shell's PATH but not in the one the service runs with.
func serviceWarnings(p service.Paths, cfg *config.Config) []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	o := install.Options{Executable: exe, Profile: p.Profile}
	if p.ConfigSet {
		o.ConfigPath = p.Config
	}
	s, ok, err := install.Installed(o)
	if err != nil || !ok {
		return nil
	}
	var out []string
	if budget := service.StopBudget(cfg); s.StopTimeout > 0 && budget+install.StopMargin > s.StopTimeout {
		out = append(out, fmt.Sprintf("stopping these agents may take %v (the longest chain of stop_timeout, each with 2s to be killed), "+
			"and the installed service is killed %v after it is asked to stop: run `tether service install` again", budget, s.StopTimeout))
	}
	if s.Path == "" {
		return out
	}
	shell := os.Getenv("PATH")
	for _, a := range cfg.Agents {
		argv0 := a.Command[0]
		if _, own := a.Env["PATH"]; own || argv0 == "tether" || strings.ContainsRune(argv0, '/') || s.Path == shell {
			continue
		}
		if lookIn(s.Path, argv0) == "" {
			if found := lookIn(shell, argv0); found != "" {
				out = append(out, fmt.Sprintf("%s, line %d: agent %s: command %q is %s in this shell, but not in the PATH the installed service gives its agents (%s): "+
					"write its absolute path, or run `tether service install` again from this shell", cfg.Path, a.Line, a.ID, argv0, found, s.Path))
			}
		}
	}
	return out
}

// lookIn finds an executable name in the directories of pathList.
func lookIn(pathList, name string) string {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		for _, ext := range executableExts() {
			p := filepath.Join(dir, name+ext)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0) {
				return p
			}
		}
	}
	return ""
}

func executableExts() []string {
	if runtime.GOOS != "windows" {
		return []string{""}
	}
	exts := []string{""}
	for _, e := range filepath.SplitList(os.Getenv("PATHEXT")) {
		if !slices.Contains(exts, strings.ToLower(e)) {
			exts = append(exts, strings.ToLower(e))
		}
	}
	return exts
}
