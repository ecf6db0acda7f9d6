package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as a client of the local API: the helper
// "get-status SOCKET".
func init() { testproc.Register("get-status", helperGetStatus) }

// helperGetStatus asks the service at the socket args[0] for its status
// and prints the HTTP status code, then the body. It exits 1 when it
// cannot ask: that is, when something other than the service refused it.
func helperGetStatus(args []string) int {
	hc := unixHTTPClient(args[0])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+api.Host+api.PathStatus, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resp, err := hc.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d\n%s", resp.StatusCode, body)
	return 0
}

// unixHTTPClient is a plain net/http client of the local API at socket:
// unlike api.Client, it sends exactly the request a test builds.
func unixHTTPClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
}
