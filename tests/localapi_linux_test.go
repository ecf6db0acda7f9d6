package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// apiCall is one request to the local API and what the service must
// answer.
type apiCall struct {
	name    string
	method  string
	host    string // default api.Host
	path    string
	header  http.Header
	body    string
	chunked bool // send the body without a length
	status  int
	code    api.Code // of the api.Error body, when status is not 200
	contain string   // in the error's message
}

func (c apiCall) do(t *testing.T, hc *http.Client) (*http.Response, []byte) {
	t.Helper()
	host := c.host
	if host == "" {
		host = api.Host
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
		if c.chunked {
			body = io.MultiReader(body) // hides the length
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, "http://"+host+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", c.name, err)
	}
	return resp, b
}

// The local API, through the real service's socket, refuses what it must,
// with the status and typed error its contract names.
func TestLocalAPIRefusals(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + agentYAML("x", "x@relay", m, true))
	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	hc := unixHTTPClient(w.socket("default"))

	// I5: the socket is 0600 in a 0700 directory.
	for path, want := range map[string]os.FileMode{w.socket("default"): 0o600, filepath.Dir(w.socket("default")): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", path, fi.Mode().Perm(), want, err)
		}
	}

	huge := `{"ids":["x"]}` + strings.Repeat(" ", api.MaxBody)
	for _, c := range []apiCall{
		{name: "bad JSON", method: "POST", path: api.PathStart, body: `{"ids":["x"`, status: 400, code: api.CodeBadRequest, contain: "JSON"},
		{name: "unknown field", method: "POST", path: api.PathStop, body: `{"ids":["x"],"force":true}`, status: 400, code: api.CodeBadRequest},
		{name: "two values", method: "POST", path: api.PathStop, body: `{"ids":["x"]}{"ids":["x"]}`, status: 400, code: api.CodeBadRequest},
		{name: "no ids", method: "POST", path: api.PathStop, body: `{"ids":[]}`, status: 400, code: api.CodeBadRequest},
		{name: "huge body", method: "POST", path: api.PathStop, body: huge, status: 413, code: api.CodeBadRequest},
		{name: "huge chunked body", method: "POST", path: api.PathStop, body: huge, chunked: true, status: 413, code: api.CodeBadRequest},
		{name: "Origin", method: "GET", path: api.PathStatus, header: http.Header{"Origin": {"https://example.com"}}, status: 403, code: api.CodeForbidden, contain: "Origin"},
		{name: "Sec-Fetch-Site", method: "GET", path: api.PathStatus, header: http.Header{"Sec-Fetch-Site": {"cross-site"}}, status: 403, code: api.CodeForbidden},
		{name: "foreign Host", method: "GET", host: "localhost", path: api.PathStatus, status: 403, code: api.CodeForbidden, contain: "localhost"},
		{name: "wrong method", method: "GET", path: api.PathStop, status: 405, code: api.CodeBadRequest},
		{name: "wrong method on status", method: "DELETE", path: api.PathStatus, status: 405, code: api.CodeBadRequest},
		{name: "unknown path", method: "GET", path: api.Version + "/nope", status: 404, code: api.CodeNotFound},
		{name: "logs of an unknown id", method: "GET", path: api.PathLogs + "?id=nope", status: 404, code: api.CodeNotFound, contain: "nope"},
		{name: "logs with a bad n", method: "GET", path: api.PathLogs + "?id=x&n=-1", status: 400, code: api.CodeBadRequest},
		{name: "events of an unknown id", method: "GET", path: api.PathEvents + "?logs=nope", status: 404, code: api.CodeNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := c.do(t, hc)
			var e api.Error
			if resp.StatusCode != c.status || json.Unmarshal(b, &e) != nil || e.Code != c.code || !strings.Contains(e.Message, c.contain) {
				t.Fatalf("%s %s: %s %s, want %d with code %s and %q", c.method, c.path, resp.Status, b, c.status, c.code, c.contain)
			}
			if c.status == 405 && resp.Header.Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
		})
	}

	// Several ids: an unknown one fails alone, in its own result, and
	// the others are acted on; the request itself succeeds.
	c := apiCall{name: "unknown id", method: "POST", path: api.PathStop, body: `{"ids":["nope","x"]}`}
	resp, b := c.do(t, hc)
	var res api.Results
	if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != 200 || len(res.Results) != 2 {
		t.Fatalf("stop nope x: %s %s", resp.Status, b)
	}
	if r := res.Results[0]; r.ID != "nope" || r.Error == nil || r.Error.Code != api.CodeNotFound || r.Agent != nil {
		t.Errorf("result for nope: %s", b)
	}
	if r := res.Results[1]; r.ID != "x" || r.Error != nil || r.Agent == nil || r.Agent.State != api.StateStopped {
		t.Errorf("result for x: %s", b)
	}
	waitSessions(t, m, 0)
	// Nothing the refused requests asked for happened.
	if st := w.status("default"); len(st) != 1 || st["x"].State != api.StateStopped {
		t.Errorf("status after the refusals: %+v", st)
	}
}

// A client of another uid is refused by the peer-credential check alone:
// the socket and its directories are opened to everyone for the test, and
// the test binary, re-executed as uid 65534, still gets 403.
func TestLocalAPIRefusesOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "running as uid %d: only root can run a client as another uid", os.Geteuid())
	}
	const nobody = 65534
	w := newWorld(t)
	w.writeConfig("agents: []\n")
	w.startService("default")
	sock := w.socket("default")

	// The test binary, where uid 65534 may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.MkdirTemp("", "tt-bin-") // not t.TempDir: its parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	exe := filepath.Join(bin, "tests.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	open := []string{w.dir, filepath.Join(w.dir, "run"), filepath.Dir(sock), bin}
	for _, d := range open {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		for _, d := range open {
			_ = os.Chmod(d, 0o700)
		}
		_ = os.Chmod(sock, 0o600)
	}
	t.Cleanup(restore)

	get := func(cred *syscall.Credential) (int, string) {
		t.Helper()
		cmd := testproc.Command("get-status", sock)
		cmd.Path = exe
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, errb, err := runBounded(t, cmd, 20*time.Second)
		if err != nil {
			t.Fatalf("helper as %+v: %v\n%s", cred, err, errb)
		}
		line, body, _ := strings.Cut(out, "\n")
		status, _ := strconv.Atoi(line)
		return status, body
	}
	// The same helper as root is let in: only the uid differs.
	if status, body := get(nil); status != 200 {
		t.Fatalf("helper as root: %d %s", status, body)
	}
	status, body := get(&syscall.Credential{Uid: nobody, Gid: nobody})
	restore()
	var e api.Error
	if status != 403 || json.Unmarshal([]byte(body), &e) != nil || e.Code != api.CodeForbidden || !strings.Contains(e.Message, "uid 65534") {
		t.Fatalf("uid %d: %d %s, want 403 forbidden naming the uid", nobody, status, body)
	}
}
