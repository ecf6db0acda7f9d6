package upgrade

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// stopSelf stops this process (a test's handover step). The signal is
// sent to this very thread: sent to the process, another thread could
// take it while this one went on (into the execve, at step "exec").
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP)
}
