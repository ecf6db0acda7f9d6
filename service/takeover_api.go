package service

import (
	"context"
	"os"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/localapi"
)

// takeoverAPI is the local API's backend in an upgrade's successor: it
// serves as soon as the handover record is read, before the config is
// parsed, the state opened and the controller made (some 10 ms of a
// core for 200 agents, which the API's silence would otherwise hold,
// D140). Until the controller runs, a status is answered from what the
// record carried (every row as the service before left it, frozen, and
// this upgrade); every other request waits for the controller, which
// answers it. Nothing is refused meanwhile, and nothing changes: the
// actors were frozen at the pause, and their successors are not made
// yet.
type takeoverAPI struct {
	status api.Status    // answered until ready is closed
	ready  chan struct{} // closed once c is set
	c      *Controller
}

var _ localapi.Backend = (*takeoverAPI)(nil)

// newTakeoverAPI answers a status of p's service info svc and of the rows
// handed over, in the config's order, until the controller is given.
func newTakeoverAPI(p Paths, svc api.Service, rows []api.Agent) *takeoverAPI {
	return &takeoverAPI{
		status: api.Status{Profile: p.Profile, ServicePID: os.Getpid(), ConfigPath: p.Config, ConfigGiven: p.ConfigSet,
			Service: &svc, Agents: rows},
		ready: make(chan struct{}),
	}
}

// run hands every request from now on to c.
func (t *takeoverAPI) run(c *Controller) {
	t.c = c
	close(t.ready)
}

// controller waits for the controller, or for ctx.
func (t *takeoverAPI) controller(ctx context.Context) (*Controller, error) {
	select {
	case <-t.ready:
		return t.c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *takeoverAPI) Status() api.Status {
	select {
	case <-t.ready:
		return t.c.Status()
	default:
		return t.status
	}
}

// StatusWithUsage waits for the controller: the usage is measured from
// the trees its actors know.
func (t *takeoverAPI) StatusWithUsage() api.Status {
	<-t.ready
	return t.c.StatusWithUsage()
}

func (t *takeoverAPI) Start(ctx context.Context, id string, noWait bool) (api.Agent, error) {
	c, err := t.controller(ctx)
	if err != nil {
		return api.Agent{}, err
	}
	return c.Start(ctx, id, noWait)
}

func (t *takeoverAPI) Stop(ctx context.Context, id string) (api.Agent, error) {
	c, err := t.controller(ctx)
	if err != nil {
		return api.Agent{}, err
	}
	return c.Stop(ctx, id)
}

func (t *takeoverAPI) Restart(ctx context.Context, id string, noWait bool) (api.Agent, error) {
	c, err := t.controller(ctx)
	if err != nil {
		return api.Agent{}, err
	}
	return c.Restart(ctx, id, noWait)
}

func (t *takeoverAPI) Reload(ctx context.Context) (api.Reloaded, error) {
	c, err := t.controller(ctx)
	if err != nil {
		return api.Reloaded{}, err
	}
	return c.Reload(ctx)
}

func (t *takeoverAPI) Logs(id string, n int) ([]string, error) {
	<-t.ready
	return t.c.Logs(id, n)
}

func (t *takeoverAPI) Subscribe(logs []string, tail int) (<-chan api.Event, func()) {
	<-t.ready
	return t.c.Subscribe(logs, tail)
}

func (t *takeoverAPI) Quit(ctx context.Context) error {
	c, err := t.controller(ctx)
	if err != nil {
		return err
	}
	return c.Quit(ctx)
}

func (t *takeoverAPI) Upgrade(ctx context.Context, req api.UpgradeRequest) (api.UpgradeAnswer, error) {
	c, err := t.controller(ctx)
	if err != nil {
		return api.UpgradeAnswer{}, err
	}
	return c.Upgrade(ctx, req)
}
