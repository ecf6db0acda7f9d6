package upgrade

import "time"

// stopSelf holds this process where a test asked (Windows has no
// SIGSTOP): a test kills it there.
func stopSelf() { time.Sleep(time.Hour) }
