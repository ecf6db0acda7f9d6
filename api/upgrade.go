package api

import "time"

// PathUpgrade replaces the running service by the binary named in an
// UpgradeRequest, with every agent left running (I9). POST.
const PathUpgrade = Version + "/upgrade"

// EventHandover is the last event of a stream whose service is handing
// over to its successor (an upgrade): the stream ends, and the client
// reconnects to the same socket, where the successor answers.
const EventHandover = "handover"

// Service describes the running service process.
type Service struct {
	// Version is the tether version of the binary it runs.
	Version string `json:"version"`
	// Commit and Date are the commit that binary was built from and that
	// commit's date (YYYY-MM-DD, UTC), as its `tether version` says
	// them; "" when the binary does not know. Modified: it was built from
	// a tree with changes not committed.
	Commit   string `json:"commit,omitempty"`
	Date     string `json:"date,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Executable is the path of that binary.
	Executable string `json:"executable"`
	// Build tells one binary file from another (see BuildOf): a service
	// whose Build differs from that of the file at Executable runs an
	// older (or newer) binary than the one on disk.
	Build string `json:"build"`
	// Started is when this binary began to serve: at an upgrade, when the
	// successor took over (the pid stays the same on Unix).
	Started time.Time `json:"started"`
	// Upgrade is the last upgrade this service was asked for, if any:
	// the one that made it (Error nil) or one that failed (the service
	// then runs the binary it ran before).
	Upgrade *Upgrade `json:"upgrade,omitempty"`
}

// Upgrade is an attempt to replace the service by another binary.
type Upgrade struct {
	// ID names the attempt, as the UpgradeRequest or its answer did.
	ID string `json:"id"`
	// From and To are the builds before and after.
	From string `json:"from"`
	To   string `json:"to"`
	// Executable is the binary asked for.
	Executable string    `json:"executable"`
	Began      time.Time `json:"began"`
	// Paused is when the API stopped accepting, from Began: requests
	// queue from then until the successor serves.
	Paused time.Duration `json:"paused,omitempty"`
	// Took is how long the handover took, from the request to the
	// successor serving (zero until it does).
	Took time.Duration `json:"took,omitempty"`
	// Error says why it failed: code upgrade; nil when it succeeded or is
	// under way.
	Error *Error `json:"error,omitempty"`
}

// UpgradeRequest is the body of POST upgrade.
type UpgradeRequest struct {
	// Executable is the binary to become; empty means the one the service
	// runs from (replaced on disk by a newer one).
	Executable string `json:"executable,omitempty"`
	// ID names the attempt in Status.Service.Upgrade; empty: the service
	// makes one up.
	ID string `json:"id,omitempty"`
}

// UpgradeAnswer is the answer to POST upgrade: the new binary passed its
// check and the handover has begun. The service answers before it hands
// over; Status.Service says when the successor serves (Build equal to
// To), or why the handover failed (Upgrade.Error).
type UpgradeAnswer struct {
	Upgrade Upgrade `json:"upgrade"`
}
