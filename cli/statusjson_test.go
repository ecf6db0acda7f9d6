package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// status --json carries every cause the API has (I3): a rejected
// config, an unusable state file and an intent not saved, as the human
// status does.
func TestStatusJSONCarriesEveryCause(t *testing.T) {
	st := api.Status{
		Agents: []api.Agent{{ID: "a", Identity: "a", State: api.StateStopped,
			IntentError: &api.Error{Code: api.CodeState, Message: "saving that \"a\" is disabled: read-only"}}},
		StateError:  &api.Error{Code: api.CodeState, Message: "state.json:1: malformed"},
		ConfigError: &api.Error{Code: api.CodeConfig, Message: "agents.yaml:3: command: missing"},
	}
	var out, errb bytes.Buffer
	inv := &invocation{stdout: &out, stderr: &errb}
	if code := inv.statusJSON(st); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Agents []struct {
			ID          string     `json:"id"`
			IntentError *api.Error `json:"intent_error"`
		} `json:"agents"`
		StateError  *api.Error `json:"state_error"`
		ConfigError *api.Error `json:"config_error"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got.ConfigError == nil || !reflect.DeepEqual(got.ConfigError, st.ConfigError) {
		t.Errorf("config_error %+v, want %+v\n%s", got.ConfigError, st.ConfigError, out.String())
	}
	if got.StateError == nil || !reflect.DeepEqual(got.StateError, st.StateError) {
		t.Errorf("state_error %+v, want %+v", got.StateError, st.StateError)
	}
	if len(got.Agents) != 1 || got.Agents[0].IntentError == nil || !reflect.DeepEqual(got.Agents[0].IntentError, st.Agents[0].IntentError) {
		t.Errorf("agents %+v, want the intent error on a", got.Agents)
	}
}

// status --json names the service's own version, with the commit and
// its date that `tether version` of its binary says, as the API reports
// them (after an upgrade in place, the new one's), and leaves the
// service out when the API has none.
func TestStatusJSONCarriesServiceVersion(t *testing.T) {
	const hash = "b32545f3b229e60996e928c9c6d4c46be0fbcaff"
	started := time.Date(2026, 12, 5, 10, 2, 3, 0, time.UTC)
	for _, c := range []struct {
		name string
		svc  *api.Service
		want *statusService
	}{
		{"service", &api.Service{Version: "1.2.3", Commit: hash, Date: "2026-12-01", Executable: "/usr/bin/tether", Build: "b", Started: started},
			&statusService{Version: "1.2.3", Commit: hash, Date: "2026-12-01", PID: 4242, Executable: "/usr/bin/tether", Started: started}},
		{"from a changed tree", &api.Service{Version: "devel", Commit: hash, Date: "2026-12-01", Modified: true, Executable: "/bin/tether", Build: "b", Started: started},
			&statusService{Version: "devel", Commit: hash, Date: "2026-12-01", Modified: true, PID: 4242, Executable: "/bin/tether", Started: started}},
		{"commit unknown", &api.Service{Version: "devel", Executable: "/bin/tether", Build: "b", Started: started},
			&statusService{Version: "devel", PID: 4242, Executable: "/bin/tether", Started: started}},
		{"none", nil, nil},
	} {
		var out, errb bytes.Buffer
		inv := &invocation{stdout: &out, stderr: &errb}
		if code := inv.statusJSON(api.Status{ServicePID: 4242, Service: c.svc}); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", c.name, code, errb.String())
		}
		var got struct {
			Service *statusService `json:"service"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out.String())
		}
		if !reflect.DeepEqual(got.Service, c.want) {
			t.Errorf("%s: service %+v, want %+v\n%s", c.name, got.Service, c.want, out.String())
		}
	}
}
