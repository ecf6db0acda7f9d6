//go:build unix || windows

package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/localapi"
	"github.com/tether-dev/tether/service/state"
)

// Run runs the service of one profile in the foreground until it is
// told to quit (a stop signal, see stopSignals, or the API), and returns
// the exit code. A reload signal (SIGHUP on Unix; Windows has none)
// reloads the config.
func Run(p Paths, exe string, stderr io.Writer) int {
	logf := func(format string, args ...any) { logline.Printf(stderr, "service", format, args...) }
	if err := platform.SecureDir(p.StateDir); err != nil {
		logf("state directory: %v", err)
		return 1
	}
	lock, err := takeServiceLock(p)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer lock.Close()

	cfg, err := loadConfig(p)
	if err != nil {
		logf("%v", err)
		return 1
	}
	store, err := state.Open(p.StateDir)
	if err != nil {
		logf("state: %v", err)
		return 1
	}
	defer store.Close()
	if err := store.Err(); err != nil {
		logf("the state file is malformed and left as it is (intent will not be saved until it is fixed): %v", err)
	}
	for _, note := range sweepPrivateDirs(p) {
		logf("%s", note)
	}
	l, err := listenAPI(p.Socket, logf)
	if err != nil {
		logf("local API: %v", err)
		return 1
	}
	c := NewController(Options{Paths: p, Executable: exe}, cfg, store)
	srv := localapi.New(c, l)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	logf("profile %q serving on %s with %d agent(s) from %s", p.Profile, p.Socket, len(cfg.Agents), cfg.Path)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, slices.Concat(stopSignals, reloadSignals)...)
	defer signal.Stop(sigs)
	for {
		select {
		case s := <-sigs:
			if slices.Contains(reloadSignals, s) {
				l.check()
				if err := c.Reload(context.Background()); err != nil {
					logf("reload: %v", err)
				} else {
					logf("reloaded %s", p.Config)
				}
				continue
			}
			logf("received %v: stopping every agent", s)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				if err := c.Shutdown(ctx, false); err != nil {
					logf("%v (send the signal again to exit anyway)", err)
				}
			}()
		case <-c.Done():
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
			logf("stopped")
			return 0
		case err := <-served:
			logf("local API stopped: %v", err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			_ = c.Shutdown(ctx, true)
			cancel()
			return 1
		}
	}
}

// ErrAlreadyRunning: another service runs this profile.
var ErrAlreadyRunning = errors.New("the service of this profile is already running")

// takeServiceLock makes this the only service of the profile: a lock on
// service.lock in the state directory, which holds the pid of its holder
// at platform.LockDataOffset, for the message a second one prints.
func takeServiceLock(p Paths) (io.Closer, error) {
	f, err := platform.OpenLockFile(filepath.Join(p.StateDir, "service.lock"))
	if err != nil {
		return nil, err
	}
	if err := platform.TryLock(f); err != nil {
		b, _ := io.ReadAll(io.NewSectionReader(f, platform.LockDataOffset, 64))
		f.Close()
		if errors.Is(err, platform.ErrLocked) {
			pid := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w: profile %q runs as pid %s", ErrAlreadyRunning, p.Profile, pid)
		}
		return nil, err
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), platform.LockDataOffset)
	return f, nil
}
