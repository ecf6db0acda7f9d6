package service

import (
	"testing"
	"time"

	"github.com/tether-dev/tether/service/config"
)

func TestStopBudget(t *testing.T) {
	cfg, err := config.Parse("agents.yaml", []byte(`agents:
  - id: db
    command: [x]
    stop_timeout: 20s
  - id: app
    command: [x]
    stop_timeout: 10s
    after: [db]
  - id: web
    command: [x]
    requires: [app]
  - id: alone
    command: [x]
    stop_timeout: 30s
`))
	if err != nil {
		t.Fatal(err)
	}
	// web (5s), then app (10s), then db (20s), each with its kill grace:
	// longer than alone's 30s.
	if got, want := StopBudget(cfg), 35*time.Second+3*killGrace; got != want {
		t.Errorf("StopBudget = %v, want %v", got, want)
	}
	if got := StopBudget(&config.Config{}); got != 0 {
		t.Errorf("StopBudget of nothing = %v", got)
	}
}
