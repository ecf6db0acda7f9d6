package config

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSurviveServiceCrash(t *testing.T) {
	src := "agents:\n  - id: a\n    command: [x]\n    survive_service_crash: 2m\n  - id: b\n    command: [x]\n"
	cfg, err := Parse("agents.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].SurviveCrash != 2*time.Minute || cfg.Agents[1].SurviveCrash != 0 {
		t.Errorf("survive_service_crash %v and %v, want 2m and 0", cfg.Agents[0].SurviveCrash, cfg.Agents[1].SurviveCrash)
	}
	if !bytes.Equal(cfg.Source, []byte(src)) {
		t.Error("Source is not what was parsed")
	}
	for _, c := range []struct{ value, want string }{
		{"soon", "not a duration"},
		{"-1s", "less than the minimum"},
		{"25h", "more than the limit of 24h"},
	} {
		_, err := Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\n    survive_service_crash: "+c.value+"\n"))
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].Line != 4 || !strings.HasSuffix(ps[0].Key, "survive_service_crash") || !strings.Contains(ps[0].Msg, c.want) {
			t.Errorf("survive_service_crash: %s: %v, want one problem on line 4 saying %q", c.value, err, c.want)
		}
	}
}
