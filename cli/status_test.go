package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
)

// TestStatusHelpCoversTheAPI: the help of status names every state and
// every code a row can carry, in the API's order, and nothing else.
func TestStatusHelpCoversTheAPI(t *testing.T) {
	var states []api.State
	for _, s := range stateHelp {
		states = append(states, s.state)
	}
	if !slices.Equal(states, api.States()) {
		t.Errorf("status help states %v, want %v", states, api.States())
	}
	var codes []api.Code
	for _, c := range codeHelp {
		codes = append(codes, c.code)
	}
	if !slices.Equal(codes, api.AgentCodes()) {
		t.Errorf("status help codes %v, want %v", codes, api.AgentCodes())
	}
	help := statusHelp()
	for _, s := range api.States() {
		if !strings.Contains(help, "\n  "+string(s)+" ") {
			t.Errorf("status help has no line for state %s:\n%s", s, help)
		}
	}
	for _, c := range api.AgentCodes() {
		if !strings.Contains(help, "\n  "+string(c)+" ") {
			t.Errorf("status help has no line for code %s:\n%s", c, help)
		}
	}
}
