package service

import (
	"os"
	"syscall"
)

// stopSignals make the service stop every agent and exit: Go delivers
// Ctrl-C and Ctrl-Break as os.Interrupt, and the console's close, logoff
// and shutdown events as SIGTERM (after which Windows ends the process
// within seconds; the guardians then see their owner die and stop the
// agents themselves). There is no reload signal: tether reload asks over
// the API.
var (
	stopSignals   = []os.Signal{os.Interrupt, syscall.SIGTERM}
	reloadSignals []os.Signal
)

// newOrphans has nothing to look after on Windows: a guardian's job
// object ends its tree when the guardian dies.
func newOrphans() (Orphans, error) { return nil, nil }
