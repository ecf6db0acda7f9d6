//go:build linux

package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/tether-dev/tether/api"
)

// helperEnv names the helper a re-executed test binary is to be (the
// os/exec tests' pattern): TestMain runs it instead of the tests.
const helperEnv = "TETHER_E2E_HELPER"

// runHelper runs the helper process name and returns its exit code.
func runHelper(name string) int {
	switch name {
	case "get-status":
		return helperGetStatus(os.Getenv("TETHER_E2E_SOCKET"))
	case "burn-tree":
		return helperBurnTree()
	case "burn":
		return helperBurn()
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return 2
}

// helperGetStatus asks the service at socket for its status and prints
// the HTTP status code, then the body. It exits 1 when it cannot ask:
// that is, when something other than the service refused it.
func helperGetStatus(socket string) int {
	hc := unixHTTPClient(socket)
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

// burnHalf is the memory each process of a burning tree holds.
const burnHalf = 32 << 20

// helperLife bounds the life of a helper agent, should its tree outlive
// its test.
const helperLife = 2 * time.Minute

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
// busy. It waits until it is told to stop.
func helperBurnTree() int {
	time.AfterFunc(helperLife, func() { os.Exit(98) })
	mem := holdMemory(burnHalf)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), helperEnv+"=burn")
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("burning")
	err = child.Wait()
	runtime.KeepAlive(mem)
	fmt.Println("the burner ended:", err)
	return 0
}

// helperBurn holds burnHalf of memory and keeps a CPU busy.
func helperBurn() int {
	time.AfterFunc(helperLife, func() { os.Exit(98) })
	mem := holdMemory(burnHalf)
	for n := 0; ; n++ {
		mem[n%len(mem)]++
	}
}
