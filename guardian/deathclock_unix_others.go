//go:build unix && !linux

package guardian

import "os"

func ownerDeathFile() *os.File { return nil }

func openDeathClock() *deathClock { return nil }
