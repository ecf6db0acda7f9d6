//go:build linux || windows

package secret

import "github.com/tether-dev/tether/service/config"

func keyringAgent(key string) config.Agent {
	return config.Agent{ID: "alice", Secrets: map[string]config.SecretRef{"TOKEN": {Keyring: key}}}
}
