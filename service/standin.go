package service

import (
	"context"
	"net"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/localapi"
	"github.com/tether-dev/tether/service/upgrade"
)

// ServeStandIn is the server of an upgrade's stand-in
// (upgrade.StatusServer): the local API on l, answering a status with
// status (the body, encoded once by the service before), once per
// connection, until l is closed. The stand-in gives it nothing
// else; any other request is answered handing_over, which the client
// asks again of the service.
func ServeStandIn(l net.Listener, status []byte) {
	srv := localapi.New(standInAPI{body: status}, l)
	srv.CloseAfterAnswer()
	go func() { _ = srv.Serve() }()
}

var _ upgrade.StatusServer = ServeStandIn

// standInAPI answers a status, and nothing else.
type standInAPI struct{ body []byte }

var (
	_ localapi.Backend       = standInAPI{}
	_ localapi.EncodedStatus = standInAPI{}
)

// StatusBody is the status as the service before encoded it.
func (s standInAPI) StatusBody() []byte { return s.body }

// Status and StatusWithUsage are not asked: StatusBody answers a status,
// and a status with usage is not given to a stand-in.
func (s standInAPI) Status() api.Status          { return api.Status{} }
func (s standInAPI) StatusWithUsage() api.Status { return api.Status{} }
func (standInAPI) Start(context.Context, string, bool) (api.Agent, error) {
	return api.Agent{}, localapi.ErrHandingOver
}
func (standInAPI) Stop(context.Context, string) (api.Agent, error) {
	return api.Agent{}, localapi.ErrHandingOver
}
func (standInAPI) Restart(context.Context, string, bool) (api.Agent, error) {
	return api.Agent{}, localapi.ErrHandingOver
}
func (standInAPI) Reload(context.Context) (api.Reloaded, error) {
	return api.Reloaded{}, localapi.ErrHandingOver
}
func (standInAPI) Logs(string, int) ([]string, error) { return nil, localapi.ErrHandingOver }
func (standInAPI) Subscribe([]string, int) (<-chan api.Event, func()) {
	ch := make(chan api.Event)
	close(ch)
	return ch, func() {}
}
func (standInAPI) Quit(context.Context) error { return localapi.ErrHandingOver }
func (standInAPI) Upgrade(context.Context, api.UpgradeRequest) (api.UpgradeAnswer, error) {
	return api.UpgradeAnswer{}, localapi.ErrHandingOver
}
