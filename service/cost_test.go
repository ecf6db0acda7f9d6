package service

import (
	"testing"

	"github.com/tether-dev/tether/platform"
)

// Every way the platform measures a tree has its name in the API, the
// same word.
func TestUsageSources(t *testing.T) {
	for _, src := range []platform.UsageSource{platform.UsageCgroup, platform.UsageProcesses, platform.UsageJob} {
		if got, ok := usageSources[src]; !ok || string(got) != string(src) {
			t.Errorf("usageSources[%q] = %q, %v", src, got, ok)
		}
	}
	if got := usageSources[platform.UsageSource("new")]; got != "" {
		t.Errorf("an unknown source became %q", got)
	}
}
