package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tether-dev/tether/api"
)

// The test binary doubles as a client run under another uid: with
// helperEnv set, TestMain plays that client instead of running the tests.
const helperEnv = "TETHER_LOCALAPI_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role, os.Args[1:]))
	}
	goleak.VerifyTestMain(m, leakOptions...)
}

// helperResult is what a helper prints, one JSON line on stdout.
type helperResult struct {
	UID   int        `json:"uid"`
	Agent int        `json:"agents"`
	Error *api.Error `json:"error,omitempty"` // the service's answer
	Other string     `json:"other,omitempty"` // any other error
}

func runHelper(role string, args []string) int {
	switch role {
	case "status":
		// GET status on the socket args[0] and report what came back.
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
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}
