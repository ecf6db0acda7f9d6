//go:build linux

package peers

import (
	"os"
	"os/exec"
)

// The pinned peers are not Debian packages: make peers installs PM2 with
// npm and builds process-compose from its Go module under a cache
// directory (.ci/peers-deps) and names them in these variables. Without
// them the ones on PATH are used.
const (
	pm2Env            = "PEERS_PM2"             // the pm2 command
	processComposeEnv = "PEERS_PROCESS_COMPOSE" // the process-compose binary
)

// findPinnedPeers returns the pm2 command and the process-compose binary,
// and the names of those it found neither way.
func findPinnedPeers() (pm2, pc string, missing []string) {
	find := func(env, name string) string {
		if p := os.Getenv(env); p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		} else if p, err := exec.LookPath(name); err == nil {
			return p
		}
		missing = append(missing, name)
		return ""
	}
	pm2 = find(pm2Env, "pm2")
	pc = find(processComposeEnv, "process-compose")
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	return pm2, pc, missing
}
