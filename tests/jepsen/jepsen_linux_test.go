package jepsen

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
)

// TestJepsen runs many random schedules, each a scenario with random
// timings, host counts and upgrades, on one cluster, and prints the
// figures of docs/benchmarks.md. `make jepsen` runs it:
//
//	TETHER_JEPSEN_RUNS    schedules to run (without it, the test is skipped)
//	TETHER_JEPSEN_SEED    replay a run: the seed the test prints
func TestJepsen(t *testing.T) {
	v := os.Getenv("TETHER_JEPSEN_RUNS")
	if v == "" {
		t.Skip("many random schedules: make jepsen (TETHER_JEPSEN_RUNS=N); TestScenarios runs each once")
	}
	runs, err := strconv.Atoi(v)
	if err != nil || runs < 1 {
		t.Fatalf("TETHER_JEPSEN_RUNS=%q: want a positive number", v)
	}
	c := etcdtest.Start(t, 3)
	rng := seeded(t)
	var fig figures
	began := time.Now()
	for i := range runs {
		s := scenarios[rng.IntN(len(scenarios))]
		if !s.fenced && rng.IntN(3) == 0 {
			s.hosts = 3
		}
		t.Run(fmt.Sprintf("%03d-%s-%dhosts", i, s.name, s.hosts), func(t *testing.T) {
			schedule(t, c, rng, s, &fig)
		})
	}
	fmt.Printf("jepsen: %v\n%s\n", time.Since(began).Round(time.Second), fig.String())
}
