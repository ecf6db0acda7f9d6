package api

import (
	"strings"
	"testing"
)

func TestSocketPath(t *testing.T) {
	got, err := SocketPath("work")
	if err != nil {
		t.Fatal(err)
	}
	user, ok := strings.CutPrefix(got, `\\.\pipe\tether-`)
	if !ok || !strings.HasSuffix(user, "-work") || strings.ContainsAny(user, `\/:`) {
		t.Errorf("SocketPath = %q, want \\\\.\\pipe\\tether-<user>-work", got)
	}
	for _, bad := range []string{"", "../x", `a\b`, ".hidden", "-x", strings.Repeat("p", 65)} {
		if got, err := SocketPath(bad); err == nil {
			t.Errorf("SocketPath(%q) = %q, want an error", bad, got)
		}
	}
}
