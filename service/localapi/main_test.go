package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as a client run under another uid: the helper
// "status".
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.NoLeaks(leakOptions...))
}

func init() { testproc.Register("status", statusHelper) }

// helperResult is what a helper prints, one JSON line on stdout.
type helperResult struct {
	UID   int        `json:"uid"`
	Agent int        `json:"agents"`
	Error *api.Error `json:"error,omitempty"` // the service's answer
	Other string     `json:"other,omitempty"` // any other error
}

// statusHelper asks for the status on the socket args[0] and reports
// what came back.
func statusHelper(args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := helperResult{UID: os.Geteuid()}
	st, err := api.NewClient(args[0]).Status(ctx)
	if ae, ok := errors.AsType[*api.Error](err); ok {
		res.Error = ae
	} else if err != nil {
		res.Other = err.Error()
	}
	res.Agent = len(st.Agents)
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}
