package upgrade

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The bound is the process's real-time interval timer (ITIMER_REAL),
// which an execve keeps: armed just before the exec, its SIGALRM ends a
// successor whose signals are as exec leaves them (the default action
// terminates), and a Go successor that Bound watches.

// armBound arms the timer for ServeBound, or disarms it (d zero).
func armBound(on bool) {
	var it unix.Itimerval
	if on {
		it.Value = unix.NsecToTimeval(ServeBound.Nanoseconds())
	}
	_, _ = unix.Setitimer(unix.ItimerReal, it)
}

// Bound, in a successor, ends this process when the bound armed before
// the exec runs out first: the Go runtime ignores a SIGALRM nobody asked
// for. served, called once the API serves, disarms it.
func Bound(logf func(string, ...any)) (served func()) {
	alarms := make(chan os.Signal, 1)
	signal.Notify(alarms, syscall.SIGALRM)
	stop := make(chan struct{})
	go func() {
		select {
		case <-alarms:
			logf("this successor did not serve within %v of the handover: it ends, as a crash", ServeBound)
			os.Exit(1)
		case <-stop:
		}
	}()
	return func() {
		armBound(false)
		signal.Stop(alarms)
		close(stop)
	}
}
