//go:build linux || darwin

package install

import (
	"fmt"

	"github.com/kardianos/service"
)

// program is the kardianos Interface of a service we only control from
// outside (start, stop, status); it is never run through kardianos here.
type program struct{}

func (program) Start(service.Service) error { return nil }
func (program) Stop(service.Service) error  { return nil }

// kardianosService returns kardianos's service for system ("linux-systemd",
// "darwin-launchd") with UserService set, taken from AvailableSystems
// rather than from kardianos's own choice: on Linux that choice is made at
// init from weaker evidence than ours (see the package doc), and callers
// have already checked that the manager answers.
func kardianosService(system, name string) (service.Service, error) {
	for _, s := range service.AvailableSystems() {
		if s.String() == system {
			return s.New(program{}, &service.Config{
				Name:   name,
				Option: service.KeyValue{"UserService": true},
			})
		}
	}
	return nil, fmt.Errorf("%w: kardianos/service offers no %s here (it chose %q)", ErrNoServiceManager, system, service.Platform())
}
