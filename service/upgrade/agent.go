package upgrade

import (
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// Agent is what an actor knew, for its successor in the next binary (see
// Record): the row as status showed it, the state of its restart policy,
// and its tether, if a guardian runs. The rows travel on a line of their
// own, which the successor answers a status from before it decodes the
// rest.
type Agent struct {
	ID  string    `json:"id"`
	Row api.Agent `json:"-"`

	Want       bool          `json:"want"`
	Parked     bool          `json:"parked,omitempty"`    // a crash loop parked it
	Failures   []time.Time   `json:"failures,omitempty"`  // those that may make a crash loop
	Offline    bool          `json:"offline,omitempty"`   // waiting for what it needs
	Elsewhere  bool          `json:"elsewhere,omitempty"` // waiting for a holder in etcd to let go
	Backoff    time.Duration `json:"backoff,omitempty"`
	StartedAt  time.Time     `json:"started_at,omitzero"`
	Due        time.Time     `json:"due,omitzero"` // a start is scheduled then (backoff, contention retry)
	Contention time.Time     `json:"contention,omitzero"`
	ContDelay  time.Duration `json:"cont_delay,omitempty"`
	DepWait    bool          `json:"dep_wait,omitempty"`
	Pending    bool          `json:"pending,omitempty"` // spawned, its readiness check not passed yet
	StopAsked  bool          `json:"stop_asked,omitempty"`
	StopSince  time.Time     `json:"stop_since,omitzero"`
	RestartArm bool          `json:"restart_arm,omitempty"`
	DepErr     *api.Error    `json:"dep_err,omitempty"`   // stopped with a dependency: why
	Leftover   bool          `json:"leftover,omitempty"`  // what a dead guardian left could not be stopped
	Unclaimed  bool          `json:"unclaimed,omitempty"` // its guardian died and nothing has freed the identity since
	// Leader is the running tree's leader as the service knew it (its
	// start time read when the agent started), so that the successor
	// need not read it again.
	Leader platform.Ref `json:"leader,omitzero"`

	Tether *Tether `json:"tether,omitempty"`
}

// Tether is a running guardian's tether.
type Tether struct {
	// Conn is the descriptor of the owner's end: a file descriptor on
	// Unix (inherited across execve), a handle on Windows (duplicated
	// into the successor).
	Conn uintptr `json:"conn"`
	// Version is the protocol version the guardian speaks.
	Version int `json:"version"`
	// Guardian names the guardian process.
	Guardian platform.Ref `json:"guardian"`
	// Ready is what the guardian said when the agent started.
	Ready wire.Ready `json:"ready"`
	// Pending holds the bytes read off the tether and not yet parsed.
	Pending []byte `json:"pending,omitempty"`

	// Handoff is the old side's detached session, to resume on failure.
	Handoff *guardian.Handoff `json:"-"`
}
