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
	StepFrozen    Step = "frozen"    // every actor detached its session
	StepRecorded  Step = "recorded"  // the record's descriptors filled in
	StepWritten   Step = "written"   // the record written
	StepExec      Step = "exec"      // descriptors inheritable, about to execve (Unix) or say go (Windows)
	StepRunning   Step = "running"   // the successor's first instruction
	StepRead      Step = "read"      // the successor has read the record
	StepSuccessor Step = "successor" // the successor holds the descriptors, nothing attached
	StepConfig    Step = "config and state"
	StepServing   Step = "serving"    // the successor serves its API
	StepAttaching Step = "attaching"  // half the tethers made sessions again
	StepAttached  Step = "attached"   // every tether a session again
	StepAnnounce  Step = "announcing" // half the guardians sent attach
)

// StopEnv, in tests, names a Step at which the process stops itself
// (SIGSTOP on Unix) so that a test can kill it there.
const StopEnv = "TETHER_TEST_HANDOVER_STOP"

// StepAt is when a step of a handover was reached, from the upgrade's
// request: the successor logs the whole timeline.
type StepAt struct {
	Step Step          `json:"step"`
	At   time.Duration `json:"at"`
}

// timeline is the timeline of the handover under way in this process.
var timeline struct {
	mu    sync.Mutex
	began time.Time
	list  []StepAt
}

// Begin starts a timeline at began (an upgrade's request), with prev the
// steps the process before reached.
func Begin(began time.Time, prev []StepAt) {
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	timeline.began, timeline.list = began, append([]StepAt(nil), prev...)
}

// Steps is the timeline so far.
func Steps() []StepAt {
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	return append([]StepAt(nil), timeline.list...)
}

// FormatSteps writes a timeline for the log.
func FormatSteps(list []StepAt) string {
	var b strings.Builder
	for i, st := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %v", st.Step, st.At.Round(10*time.Microsecond))
	}
	return b.String()
}

// StopAt marks step in the timeline, and stops this process there when
// a test asked for it.
func StopAt(step Step) {
	timeline.mu.Lock()
	if !timeline.began.IsZero() {
		timeline.list = append(timeline.list, StepAt{Step: step, At: time.Since(timeline.began)})
	}
	timeline.mu.Unlock()
	if Step(os.Getenv(StopEnv)) == step {
		stopSelf()
	}
}
