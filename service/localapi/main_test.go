package localapi

import (
	"testing"

	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as a client run under another uid: the helper
// "rawstatus" (rawclient_unix_test.go).
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.NoLeaks(leakOptions...), testproc.EveryHelperUsed())
}
