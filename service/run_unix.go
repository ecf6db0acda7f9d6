//go:build unix

package service

import (
	"os"
	"syscall"
)

// stopSignals make the service stop every agent and exit; reloadSignals
// make it apply its config again.
var (
	stopSignals   = []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	reloadSignals = []os.Signal{syscall.SIGHUP}
)
