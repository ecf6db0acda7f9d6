package service

import (
	"context"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/secret"
)

// environ is the environment the agent is to start with: its config's
// (the service's base, the env_file, env) and its secrets, read now from
// the keychain or their commands. It travels to the guardian on the
// tether, in the start request, and is kept nowhere else. A failure is
// the start's error: config for the env_file, secret for a secret.
func (a *actor) environ() ([]string, *api.Error) {
	env, err := a.cfg.Environ(a.c.opts.BaseEnv)
	if err != nil {
		return nil, &api.Error{Code: api.CodeConfig, Message: err.Error()}
	}
	if len(a.cfg.Secrets) == 0 {
		return env, nil
	}
	// The commands get the service's environment, not the agent's.
	vals, err := secret.Resolve(context.Background(), a.c.opts.Paths.Profile, a.cfg, a.c.opts.BaseEnv)
	if err != nil {
		return nil, &api.Error{Code: api.CodeSecret, Message: err.Error()}
	}
	env = config.Overlay(env, vals)
	clear(vals)
	return env, nil
}
