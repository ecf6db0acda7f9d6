package quietterm

import (
	"bytes"
	"os"
	"testing"
)

// The initializers run with TERM dumb; Restore gives back TERM as the
// process was started with it, set or not.
func TestRestore(t *testing.T) {
	if v := os.Getenv("TERM"); v != dumb {
		t.Fatalf("TERM during the initializers' aftermath is %q, want %q", v, dumb)
	}
	environ, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Skipf("the environment the process was started with is not readable here: %v", err)
	}
	want, wantSet := "", false
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("TERM=")); ok {
			want, wantSet = string(v), true
		}
	}
	Restore()
	if v, ok := os.LookupEnv("TERM"); v != want || ok != wantSet {
		t.Errorf("TERM after Restore is %q (set %v), want %q (set %v)", v, ok, want, wantSet)
	}
}
