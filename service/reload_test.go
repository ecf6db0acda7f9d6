package service

import (
	"reflect"
	"testing"
	"time"

	"github.com/tether-dev/tether/service/config"
)

func TestPlanReload(t *testing.T) {
	ag := func(id string, deps ...string) config.Agent {
		return config.Agent{ID: id, Identity: id, Command: []string{"sleep", "1000"}, After: deps}
	}
	req := func(a config.Agent, ids ...string) config.Agent {
		a.After, a.Requires = nil, ids
		return a
	}
	changed := func(a config.Agent) config.Agent {
		a.StopTimeout = 3 * time.Second
		return a
	}
	moved := func(a config.Agent) config.Agent {
		a.Line = 40
		return a
	}
	cfg := func(agents ...config.Agent) *config.Config { return &config.Config{Agents: agents} }
	for _, tc := range []struct {
		name          string
		before, after *config.Config
		want          reloadPlan
	}{{
		name:   "nothing changed, an entry moved in the file",
		before: cfg(ag("a"), ag("b")),
		after:  cfg(moved(ag("b")), ag("a")),
		want:   reloadPlan{unchanged: []string{"b", "a"}},
	}, {
		name:   "each kind",
		before: cfg(ag("keep"), ag("change"), ag("drop")),
		after:  cfg(ag("new"), ag("keep"), changed(ag("change"))),
		want: reloadPlan{added: []string{"new"}, changed: []string{"change"},
			removed: []string{"drop"}, unchanged: []string{"keep"}},
	}, {
		name:   "independent removals: no order",
		before: cfg(ag("a"), ag("b"), ag("c")),
		after:  cfg(ag("a")),
		want:   reloadPlan{removed: []string{"b", "c"}, unchanged: []string{"a"}},
	}, {
		name:   "a chain removed: each dependent stops first",
		before: cfg(ag("db"), ag("api", "db"), req(ag("web"), "api")),
		after:  cfg(ag("other")),
		want: reloadPlan{added: []string{"other"}, removed: []string{"db", "api", "web"},
			stopsFirst: map[string][]string{"db": {"api"}, "api": {"web"}}},
	}, {
		name:   "a diamond changed",
		before: cfg(ag("a"), ag("b", "a"), req(ag("c"), "a"), ag("d", "b", "c")),
		after:  cfg(changed(ag("a")), changed(ag("b", "a")), changed(req(ag("c"), "a")), changed(ag("d", "b", "c"))),
		want: reloadPlan{changed: []string{"a", "b", "c", "d"},
			stopsFirst: map[string][]string{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}},
	}, {
		name:   "the stops follow the config before, whose trees run",
		before: cfg(ag("a", "b"), ag("b")),
		after:  cfg(changed(ag("a")), ag("b", "a")),
		want: reloadPlan{changed: []string{"a", "b"},
			stopsFirst: map[string][]string{"b": {"a"}}},
	}, {
		name:   "a dependent left alone does not order the stop",
		before: cfg(ag("a"), ag("b", "a"), ag("c", "a")),
		after:  cfg(changed(ag("a")), ag("b", "a")),
		want: reloadPlan{changed: []string{"a"}, removed: []string{"c"}, unchanged: []string{"b"},
			stopsFirst: map[string][]string{"a": {"c"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := planReload(tc.before, tc.after)
			if tc.want.stopsFirst == nil {
				tc.want.stopsFirst = map[string][]string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A lease section is the same wherever it is in its file; any other
// change, or its coming or going, is a change (which a reload refuses).
func TestSameLease(t *testing.T) {
	a := &config.Lease{Endpoints: []string{"http://127.0.0.1:2379"}, TTL: 4 * time.Second, Host: "laptop", Prefix: "/tether", Line: 1}
	moved := *a
	moved.Line = 9
	other := *a
	other.Host = "vps"
	for _, c := range []struct {
		a, b *config.Lease
		same bool
	}{{nil, nil, true}, {a, &moved, true}, {a, &other, false}, {a, nil, false}, {nil, a, false}} {
		if got := sameLease(c.a, c.b); got != c.same {
			t.Errorf("sameLease(%+v, %+v) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
