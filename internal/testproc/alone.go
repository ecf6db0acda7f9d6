package testproc

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// AloneArgs are the arguments that make a copy of the test binary run the
// test named name alone, verbosely, within timeout: for a test that runs
// itself where the test process cannot be (a namespace of its own, a
// fresh process).
func AloneArgs(name string, timeout time.Duration) []string {
	return []string{"-test.run=^" + regexp.QuoteMeta(name) + "$", "-test.count=1", "-test.v", "-test.timeout=" + timeout.String()}
}

// ReportAlone makes t's outcome that of its copy run with AloneArgs
// where says (as "in a subprocess"), which ended with err and wrote out:
// it failed, or skipped, or did not run, or passed.
func ReportAlone(t testing.TB, where string, err error, out []byte) {
	t.Helper()
	switch {
	case err != nil:
		t.Fatalf("%s %s: %v\n%s", t.Name(), where, err, out)
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name()+" ")):
		t.Skipf("skipped %s:\n%s", where, out)
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")):
		t.Fatalf("%s did not run %s:\n%s", t.Name(), where, out)
	case testing.Verbose():
		t.Logf("%s:\n%s", where, out)
	}
}
