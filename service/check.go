package service

import (
	"errors"
	"fmt"
	"os"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/service/config"
)

// CheckAgents verifies, without starting anything, what a config can
// only say about this machine: each agent's dir exists and is a
// directory, and its command resolves to an executable file, looked up
// as its guardian would, in the PATH of the environment the service
// would give it (base, with the agent's env and env_file). A bare
// "tether" is this binary, which needs no lookup. Every problem is a
// *config.Error naming the file, the agent's line and the key; several
// are config.Errors.
func CheckAgents(cfg *config.Config, base []string) error {
	var errs config.Errors
	add := func(a config.Agent, i int, key string, err error) {
		errs = append(errs, &config.Error{File: cfg.Path, Line: a.Line, Key: fmt.Sprintf("agents[%d].%s", i, key),
			Msg: fmt.Sprintf("agent %q: %v", a.ID, err), Err: err})
	}
	for i, a := range cfg.Agents {
		if a.Dir != "" {
			if fi, err := os.Stat(a.Dir); err != nil {
				add(a, i, "dir", err)
			} else if !fi.IsDir() {
				add(a, i, "dir", fmt.Errorf("%s is not a directory", a.Dir))
			}
		}
		if a.Command[0] == "tether" {
			continue
		}
		env, err := a.Environ(base)
		if err != nil {
			add(a, i, "env_file", err)
			continue
		}
		if _, err := guardian.ResolveCommand(a.Command[0], a.Dir, env); err != nil {
			var se *guardian.StartError
			if errors.As(err, &se) {
				err = errors.New(se.Message)
			}
			add(a, i, "command", err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errs
}
