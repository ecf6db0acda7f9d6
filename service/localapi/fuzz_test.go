package localapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tether-dev/tether/api"
)

// recorder is a Backend that keeps a line per call, has agents "a" and
// "b", and ends every event stream after the hello.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recorder) Status() api.Status {
	return api.Status{Profile: "fuzz", ServicePID: 1, Agents: []api.Agent{{ID: "a", State: api.StateRunning}, {ID: "b", State: api.StateStopped}}}
}

// StatusWithUsage is Status with a Usage in every row.
func (r *recorder) StatusWithUsage() api.Status {
	st := r.Status()
	for i := range st.Agents {
		st.Agents[i].Usage = &api.Usage{Procs: 1, Source: api.UsageProcesses}
	}
	return st
}

func (r *recorder) act(verb, id string, state api.State) (api.Agent, error) {
	r.record("%s %s", verb, id)
	return api.Agent{ID: id, State: state}, nil
}

func (r *recorder) Start(_ context.Context, id string, _ bool) (api.Agent, error) {
	return r.act("start", id, api.StateRunning)
}
func (r *recorder) Stop(_ context.Context, id string) (api.Agent, error) {
	return r.act("stop", id, api.StateStopped)
}
func (r *recorder) Restart(_ context.Context, id string, _ bool) (api.Agent, error) {
	return r.act("restart", id, api.StateRunning)
}
func (r *recorder) Reload(context.Context) (api.Reloaded, error) {
	r.record("reload")
	return api.Reloaded{}, nil
}
func (r *recorder) Quit(context.Context) error { r.record("quit"); return nil }

func (r *recorder) Upgrade(_ context.Context, req api.UpgradeRequest) (api.UpgradeAnswer, error) {
	r.record("upgrade %s", req.Executable)
	return api.UpgradeAnswer{}, nil
}

func (r *recorder) Logs(id string, n int) ([]string, error) {
	r.record("logs %s %d", id, n)
	return []string{"a line"}, nil
}

func (r *recorder) Subscribe(logs []string, tail int) (<-chan api.Event, func()) {
	r.record("subscribe %q %d", logs, tail)
	ch := make(chan api.Event)
	close(ch)
	return ch, func() {}
}

func FuzzRequest(f *testing.F) {
	for _, s := range []struct{ method, target, host, headers, body string }{
		{"GET", api.PathStatus, api.Host, "", ""},
		{"GET", api.PathStatus, "", "", ""},
		{"POST", api.PathStart, api.Host, "Content-Type: application/json\r\n", `{"ids":["a","b","nope","a"]}`},
		{"POST", api.PathStop, api.Host, "", `{"ids":["b"]}` + "\n"},
		{"POST", api.PathRestart, api.Host, "", `{"ids":[]}`},
		{"POST", api.PathStart, api.Host, "", `{"ids":["a"],"force":true}`},
		{"POST", api.PathStart, api.Host, "", `{"IDS":["a"]}`},
		{"POST", api.PathStart, api.Host, "", `{"ids":["a"]}{"ids":["b"]}`},
		{"POST", api.PathStart, api.Host, "", `{"ids":"a"}`},
		{"POST", api.PathStart, api.Host, "", `{"ids":["a"]`},
		{"POST", api.PathStart, api.Host, "", `["a"]`},
		{"POST", api.PathStart, api.Host, "", ""},
		{"POST", api.PathStart, api.Host, "", `{"ids":["` + strings.Repeat("x", api.MaxBody) + `"]}`},
		{"POST", api.PathReload, api.Host, "", ""},
		{"POST", api.PathReload, api.Host, "", " \n"},
		{"POST", api.PathReload, api.Host, "", "{}"},
		{"POST", api.PathReload, api.Host, "", `{"now":true}`},
		{"POST", api.PathQuit, api.Host, "", "null"},
		{"GET", api.PathLogs + "?id=a&n=5", api.Host, "", ""},
		{"GET", api.PathLogs + "?id=a&n=0", api.Host, "", ""},
		{"GET", api.PathLogs + "?id=a&n=10001", api.Host, "", ""},
		{"GET", api.PathLogs + "?id=nope", api.Host, "", ""},
		{"GET", api.PathLogs + "?n=5;id=a", api.Host, "", ""},
		{"GET", api.PathLogs, api.Host, "", ""},
		{"GET", api.PathEvents, api.Host, "", ""},
		{"GET", api.PathEvents + "?logs=a,,b&n=20", api.Host, "", ""},
		{"GET", api.PathEvents + "?logs=a,nope", api.Host, "", ""},
		{"GET", api.PathEvents + "?n=-1", api.Host, "", ""},
		{"GET", api.PathStart, api.Host, "", ""},
		{"DELETE", api.PathStatus, api.Host, "", ""},
		{"GET", api.Version + "/agents", api.Host, "", ""},
		{"GET", "/localapi/v0/status/../status", api.Host, "", ""},
		{"GET", "http://tether" + api.PathStatus, api.Host, "", ""},
		{"GET", api.PathStatus, "evil.example", "", ""},
		{"GET", api.PathStatus, api.Host, "Origin: http://evil.example\r\n", ""},
		{"GET", api.PathStatus, api.Host, "Sec-Fetch-Site: cross-site\r\n", ""},
		{"GET", api.PathStatus, api.Host, "Sec-Fetch-Site: none\r\n", ""},
		{"POST", api.PathStart, api.Host, "Transfer-Encoding: chunked\r\n", "9\r\n{\"ids\":[]\r\n1\r\n}\r\n0\r\n\r\n"},
	} {
		f.Add(s.method, s.target, s.host, s.headers, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, target, host, headers string, body []byte) {
		req := readRequest(method, target, host, headers, body)
		if req == nil {
			t.Skip("net/http refuses the request before the server sees it")
		}
		// What the handler can read of the body, net/http having taken
		// off any chunked framing, from a second copy of the request.
		sent, readErr := io.ReadAll(readRequest(method, target, host, headers, body).Body)

		rec := &recorder{}
		s := New(rec, nil)
		req = req.WithContext(context.WithValue(req.Context(), peerKey{}, peer{user: s.self, pid: 1}))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		checkAnswer(t, req, sent, readErr, w, rec.calls)
	})
}

// readRequest writes a request as a client would send it, with a
// Content-Length unless headers frame the body otherwise, and reads it
// back as the server's net/http does; nil if net/http refuses it.
func readRequest(method, target, host, headers string, body []byte) *http.Request {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n%s", method, target, host, headers)
	if !strings.Contains(strings.ToLower(headers), "transfer-encoding") {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	req, err := http.ReadRequest(bufio.NewReader(&b))
	if err != nil {
		return nil
	}
	return req
}

// checkAnswer checks the answer to req against the API's contract (see
// the package doc) and the calls it made to the backend.
func checkAnswer(t *testing.T, req *http.Request, body []byte, readErr error, w *httptest.ResponseRecorder, calls []string) {
	t.Helper()
	status, out := w.Code, w.Body.Bytes()
	if status == http.StatusOK {
		checkOK(t, req, body, readErr, out, calls)
		return
	}
	if len(calls) > 0 {
		t.Errorf("%s %s: %d after calls %q", req.Method, req.URL, status, calls)
	}
	var e api.Error
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Message == "" || dec.More() {
		t.Fatalf("%s %s: %d with %q, not an api.Error (%v)", req.Method, req.URL, status, out, err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: an error as %q", req.Method, req.URL, ct)
	}
	want := wantRefusal(req, body, readErr)
	if want == nil {
		t.Fatalf("%s %s: %d %v, but the request is good", req.Method, req.URL, status, &e)
	}
	if status != want.status || e.Code != want.code {
		t.Errorf("%s %s: %d %v, want %d %s (%s)", req.Method, req.URL, status, &e, want.status, want.code, want.why)
	}
	if status == http.StatusMethodNotAllowed && w.Header().Get("Allow") == "" {
		t.Errorf("%s %s: 405 without Allow", req.Method, req.URL)
	}
}

type refusal struct {
	status int
	code   api.Code
	why    string
}

// wantRefusal says how req must be refused, or nil if it must be served:
// the contract written out in the order the server judges.
func wantRefusal(req *http.Request, body []byte, readErr error) *refusal {
	bad := func(status int, why string) *refusal { return &refusal{status, api.CodeBadRequest, why} }
	_, origin := req.Header["Origin"]
	site, hasSite := req.Header["Sec-Fetch-Site"]
	switch {
	case origin, hasSite && (len(site) != 1 || site[0] != "none"):
		return &refusal{http.StatusForbidden, api.CodeForbidden, "a browser"}
	case req.Host != "" && req.Host != api.Host:
		return &refusal{http.StatusForbidden, api.CodeForbidden, "another host"}
	}
	methods := map[string]string{
		api.PathStatus: http.MethodGet, api.PathEvents: http.MethodGet, api.PathLogs: http.MethodGet,
		api.PathStart: http.MethodPost, api.PathStop: http.MethodPost, api.PathRestart: http.MethodPost,
		api.PathReload: http.MethodPost, api.PathQuit: http.MethodPost,
	}
	m, ok := methods[req.URL.Path]
	switch {
	case !ok:
		return &refusal{http.StatusNotFound, api.CodeNotFound, "no such path"}
	case req.Method != m:
		return bad(http.StatusMethodNotAllowed, "wrong method")
	case m == http.MethodPost && len(body) > api.MaxBody:
		return bad(http.StatusRequestEntityTooLarge, "body over the limit")
	case m == http.MethodPost && readErr != nil:
		return bad(http.StatusBadRequest, "a body that cannot be read")
	}
	known := map[string]bool{"a": true, "b": true}
	q := req.URL.Query()
	switch req.URL.Path {
	case api.PathStart, api.PathStop, api.PathRestart:
		ids, ok := strictIDs(body)
		switch {
		case !ok:
			return bad(http.StatusBadRequest, "not one JSON object of ids")
		case len(ids) == 0:
			return bad(http.StatusBadRequest, "no ids")
		}
	case api.PathReload, api.PathQuit:
		if len(bytes.TrimSpace(body)) > 0 && !emptyObject(body) {
			return bad(http.StatusBadRequest, "a body that is not {}")
		}
	case api.PathLogs:
		id, n := q.Get("id"), q.Get("n")
		switch {
		case id == "":
			return bad(http.StatusBadRequest, "no id")
		case n != "" && !inRange(n, 1):
			return bad(http.StatusBadRequest, "n out of range")
		case !known[id]:
			return &refusal{http.StatusNotFound, api.CodeNotFound, "unknown id"}
		}
	case api.PathStatus:
		if v := q.Get(api.QueryUsage); v != "" && v != "0" && v != "1" {
			return bad(http.StatusBadRequest, "usage is not 0 or 1")
		}
	case api.PathEvents:
		for id := range strings.SplitSeq(q.Get("logs"), ",") {
			if id != "" && !known[id] {
				return &refusal{http.StatusNotFound, api.CodeNotFound, "unknown id"}
			}
		}
		if n := q.Get("n"); n != "" && !inRange(n, 0) {
			return bad(http.StatusBadRequest, "n out of range")
		}
	}
	return nil
}

// strictIDs reads body as the contract wants it: one JSON object whose
// only member is "ids" (matched as encoding/json matches field names,
// case-insensitively), a list of strings or null.
func strictIDs(body []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var obj map[string]json.RawMessage
	if dec.Decode(&obj) != nil || obj == nil || dec.More() || !json.Valid(body) {
		return nil, false
	}
	var ids []string
	var noWait bool
	for k, v := range obj {
		switch {
		case strings.EqualFold(k, "ids"):
			if json.Unmarshal(v, &ids) != nil {
				return nil, false
			}
		case strings.EqualFold(k, "no_wait"):
			if json.Unmarshal(v, &noWait) != nil {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	// With a key given twice the last one wins.
	var req api.IDsRequest
	if json.Unmarshal(body, &req) != nil {
		return nil, false
	}
	return req.IDs, true
}

// emptyObject says whether body is {} or null, the bodies of a request
// that takes no parameters.
func emptyObject(body []byte) bool {
	var obj map[string]json.RawMessage
	return json.Valid(body) && json.Unmarshal(body, &obj) == nil && len(obj) == 0
}

func inRange(v string, lo int) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n >= lo && n <= maxLogLines
}

// checkOK checks a 200 answer: what the backend was asked, and that the
// answer says what it did.
func checkOK(t *testing.T, req *http.Request, body []byte, readErr error, out []byte, calls []string) {
	t.Helper()
	if want := wantRefusal(req, body, readErr); want != nil {
		t.Fatalf("%s %s: 200, want %d %s (%s)", req.Method, req.URL, want.status, want.code, want.why)
	}
	q := req.URL.Query()
	var want []string
	switch req.URL.Path {
	case api.PathStart, api.PathStop, api.PathRestart:
		verb := req.URL.Path[strings.LastIndexByte(req.URL.Path, '/')+1:]
		ids, _ := strictIDs(body)
		var res api.Results
		decodeStrict(t, out, &res)
		if len(res.Results) != len(ids) {
			t.Fatalf("%d results for ids %q", len(res.Results), ids)
		}
		for i, id := range ids {
			r := res.Results[i]
			switch {
			case r.ID != id:
				t.Errorf("result %d is for %q, not %q", i, r.ID, id)
			case id == "a" || id == "b":
				want = append(want, verb+" "+id)
				if r.Error != nil || r.Agent == nil || r.Agent.ID != id {
					t.Errorf("result %d for known %q: %+v", i, id, r)
				}
			case r.Error == nil || r.Error.Code != api.CodeNotFound || r.Agent != nil:
				t.Errorf("result %d for unknown %q: %+v", i, id, r)
			}
		}
		slices.Sort(want) // the ids are acted on concurrently
		slices.Sort(calls)
	case api.PathReload, api.PathQuit:
		want = []string{req.URL.Path[strings.LastIndexByte(req.URL.Path, '/')+1:]}
	case api.PathLogs:
		n := 100
		if v := q.Get("n"); v != "" {
			n, _ = strconv.Atoi(v)
		}
		want = []string{fmt.Sprintf("logs %s %d", q.Get("id"), n)}
		var l api.Logs
		decodeStrict(t, out, &l)
		if l.ID != q.Get("id") || len(l.Lines) != 1 {
			t.Errorf("logs answer %+v", l)
		}
	case api.PathEvents:
		var logs []string
		for id := range strings.SplitSeq(q.Get("logs"), ",") {
			if id != "" {
				logs = append(logs, id)
			}
		}
		n, _ := strconv.Atoi(q.Get("n"))
		want = []string{fmt.Sprintf("subscribe %q %d", logs, n)}
		var ev api.Event
		if line, _, _ := bytes.Cut(out, []byte{'\n'}); json.Unmarshal(line, &ev) != nil || ev.Type != api.EventHello || ev.Status == nil {
			t.Errorf("the stream does not start with a hello: %q", out)
		}
	case api.PathStatus:
		var st api.Status
		decodeStrict(t, out, &st)
		if st.Profile != "fuzz" || len(st.Agents) != 2 {
			t.Errorf("status answer %+v", st)
		}
		if withUsage := q.Get(api.QueryUsage) == "1"; (st.Agents[0].Usage != nil) != withUsage {
			t.Errorf("status %s answered usage %+v", req.URL, st.Agents[0].Usage)
		}
	}
	if !slices.Equal(calls, want) {
		t.Errorf("%s %s: backend calls %q, want %q", req.Method, req.URL, calls, want)
	}
}

func decodeStrict(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		t.Fatalf("answer %q is not one %T: %v", data, v, err)
	}
}
