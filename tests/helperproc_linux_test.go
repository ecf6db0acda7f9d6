package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as a client of the local API, the helper
// "get-status SOCKET", and as agents whose trees cost: "burn-tree" and
// its child "burn".
func init() {
	testproc.Register("get-status", helperGetStatus)
	testproc.Register("burn-tree", helperBurnTree)
	testproc.Register("burn", helperBurn)
}

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
// unlike client.Client, it sends exactly the request a test builds.
func unixHTTPClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
}

// burnHalf is the memory each process of a burning tree holds.
const burnHalf = 32 << 20

// holdMemory returns n bytes with every page written: resident.
func holdMemory(n int) []byte {
	mem := make([]byte, n)
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
	return mem
}

// helperBurnTree is an agent whose tree costs: it holds burnHalf of
// memory and starts a child, "burn", which holds as much and keeps a CPU
// busy. It waits until it is told to stop (testproc bounds the life of
// both).
func helperBurnTree([]string) int {
	mem := holdMemory(burnHalf)
	child := testproc.Command("burn")
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("burning")
	err := child.Wait()
	runtime.KeepAlive(mem)
	fmt.Println("the burner ended:", err)
	return 0
}

// helperBurn holds burnHalf of memory and keeps a CPU busy.
func helperBurn([]string) int {
	mem := holdMemory(burnHalf)
	for n := 0; ; n++ {
		mem[n%len(mem)]++
	}
}
