//go:build unix

package localapi

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// helperResult is what a helper prints, one JSON line on stdout.
type helperResult struct {
	UID   int        `json:"uid"`
	Agent int        `json:"agents"`
	Error *api.Error `json:"error,omitempty"` // the service's answer
	Other string     `json:"other,omitempty"` // any other error
}

// The helper "rawstatus" is a client that GETs the status from the
// socket args[0] with a plain unix dial, without client.Client's own checks
// of the socket's directory and listener (which refuse another user's
// service before the service can refuse them): what it tests is the
// service's check. It prints a helperResult.
func init() { testproc.Register("rawstatus", rawStatus) }

func rawStatus(args []string) int {
	sock := args[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}}
	res := helperResult{UID: os.Geteuid()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+api.Host+api.PathStatus, nil)
	if err != nil {
		return 1
	}
	resp, err := hc.Do(req)
	if err != nil {
		res.Other = err.Error()
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			var st api.Status
			if err := json.Unmarshal(b, &st); err != nil {
				res.Other = err.Error()
			}
			res.Agent = len(st.Agents)
		} else {
			var e api.Error
			if err := json.Unmarshal(b, &e); err != nil {
				res.Other = err.Error()
			} else {
				res.Error = &e
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}
