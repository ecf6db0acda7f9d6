package upgrade

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Step is a point of a handover, in the order a handover reaches them.
// Each is marked in the handover's timeline (logged by the successor),
// and each is a point where a test can stop the process (StopEnv).
type Step string

// The steps of a handover.
const (
	StepChecked   Step = "checked"   // the new binary passed its check
	StepPaused    Step = "paused"    // the API stopped accepting
	StepStandIn   Step = "stand-in"  // a stand-in answers a status from now on
	StepFrozen    Step = "frozen"    // every actor detached its session
	StepRecorded  Step = "recorded"  // the record's descriptors filled in
	StepWritten   Step = "written"   // the record written
	StepExec      Step = "exec"      // descriptors inheritable, about to execve (Unix) or say go (Windows)
	StepRunning   Step = "running"   // the successor's first instruction
	StepRead      Step = "read"      // the successor has read the record
	StepSuccessor Step = "successor" // the successor holds the descriptors, nothing attached
	StepRecalled  Step = "recalled"  // the stand-in stopped, what it held taken back
	StepServing   Step = "serving"   // the successor answers its API, from the record
	StepConfig    Step = "config and state"
	StepRunsAll   Step = "controller" // the successor's controller takes every request
	StepAttaching Step = "attaching"  // half the tethers made sessions again
	StepAttached  Step = "attached"   // every tether a session again
	StepAnnounce  Step = "announcing" // half the guardians sent attach
)

// StopEnv, in tests, names a Step at which the process stops itself
// (SIGSTOP on Unix) so that a test can kill it there.
const StopEnv = "TETHER_TEST_HANDOVER_STOP"

// StepAt is when a step of a handover was reached, from the upgrade's
// request, and the CPU time the process had used by then (ProcessCPU):
// the successor logs the whole timeline. On a loaded machine a step's
// wall time is mostly waiting for a core; its CPU time says what it
// costs.
type StepAt struct {
	Step Step          `json:"step"`
	At   time.Duration `json:"at"`
	CPU  time.Duration `json:"cpu,omitempty"`
}

// timeline is the timeline of the handover under way in this process.
var timeline struct {
	mu    sync.Mutex
	id    string // the upgrade's
	began time.Time
	list  []StepAt
}

// Begin starts the timeline of upgrade id at began (its request), with
// prev the steps the process before reached.
func Begin(id string, began time.Time, prev []StepAt) {
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	timeline.id, timeline.began, timeline.list = id, began, append([]StepAt(nil), prev...)
}

// Steps is the timeline so far.
func Steps() []StepAt {
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	return append([]StepAt(nil), timeline.list...)
}

// StepsOf is the timeline of upgrade id so far, or nil once another
// upgrade has begun: a successor marks its last steps (the guardians
// taken over) while the next upgrade may already be asked for.
func StepsOf(id string) []StepAt {
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	if timeline.id != id {
		return nil
	}
	return append([]StepAt(nil), timeline.list...)
}

// PausedAt is when the API paused in the timeline so far, from the
// request (StepPaused); zero before the pause.
func PausedAt() time.Duration {
	var at time.Duration
	for _, st := range Steps() {
		if st.Step == StepPaused {
			at = st.At
		}
	}
	return at
}

// FormatSteps writes a timeline for the log: each step with its time
// from the request and, where it and the step before have one, the CPU
// time the process used between them.
func FormatSteps(list []StepAt) string {
	var b strings.Builder
	for i, st := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %v", st.Step, st.At.Round(10*time.Microsecond))
		if i > 0 && st.CPU > 0 && list[i-1].CPU > 0 && st.CPU >= list[i-1].CPU {
			fmt.Fprintf(&b, " (+%v cpu)", (st.CPU - list[i-1].CPU).Round(10*time.Microsecond))
		}
	}
	return b.String()
}

// StopAt marks step in the timeline, and stops this process there when
// a test asked for it.
func StopAt(step Step) { stopAt("", step) }

// StopAtOf is StopAt for a step of upgrade id, which marks nothing once
// another upgrade has begun.
func StopAtOf(id string, step Step) { stopAt(id, step) }

func stopAt(id string, step Step) {
	timeline.mu.Lock()
	if !timeline.began.IsZero() && (id == "" || id == timeline.id) {
		timeline.list = append(timeline.list, StepAt{Step: step, At: time.Since(timeline.began), CPU: ProcessCPU()})
	}
	timeline.mu.Unlock()
	if Step(os.Getenv(StopEnv)) == step {
		stopSelf()
	}
}
