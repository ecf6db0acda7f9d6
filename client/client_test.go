//go:build unix || windows

package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestClientErrorAnswers: an api.Error body comes back as *Error with its
// code; anything else that is not a success as an *Error coded internal.
func TestClientErrorAnswers(t *testing.T) {
	l, path := testListener(t)
	mux := http.NewServeMux()
	mux.HandleFunc(api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		if r.Host != api.Host {
			t.Errorf("Host = %q, want %q", r.Host, api.Host)
		}
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"code":"contention","message":"held by pid 7"}`))
	})
	mux.HandleFunc(api.PathReload, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gateway says no", http.StatusBadGateway)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := New(path)
	_, err := c.Status(ctx)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeContention || e.Message != "held by pid 7" {
		t.Errorf("Status = %#v, want *Error contention", err)
	}
	_, err = c.Reload(ctx)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeInternal || !strings.Contains(e.Message, "gateway says no") {
		t.Errorf("Reload = %#v, want *Error internal quoting the answer", err)
	}
}
