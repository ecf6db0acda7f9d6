package api

import "time"

// Wait names what a starting agent waits for: the For of its row's
// Waiting. The set is closed; a client shows one it does not know by its
// name.
type Wait string

// The waits. The first six are the readiness checks a config may name
// (ready:), the last is the agents it starts after (after:, requires:).
// An identity held elsewhere is not a wait of a starting agent: that
// row is held_elsewhere, and a start of it exits 4.
const (
	// WaitNotify: READY=1 on its notify socket (ready: notify).
	WaitNotify Wait = "notify"
	// WaitFD: a newline on its notification descriptor, What (ready: {fd: N}).
	WaitFD Wait = "fd"
	// WaitHTTP: a 2xx answer from the URL What (ready: {http: URL}).
	WaitHTTP Wait = "http"
	// WaitTCP: a connection accepted at What, host:port (ready: {tcp: ADDR}).
	WaitTCP Wait = "tcp"
	// WaitExec: the command What to exit 0 (ready: {exec: [...]}).
	WaitExec Wait = "exec"
	// WaitLog: a line of its output matching the pattern What (ready: {log: RE}).
	WaitLog Wait = "log"
	// WaitAgents: the agents named by Agents to be ready (after:,
	// requires:). No deadline: it waits as long as they are on their way.
	WaitAgents Wait = "agents"
)

// Waits returns every wait.
func Waits() []Wait {
	return []Wait{WaitNotify, WaitFD, WaitHTTP, WaitTCP, WaitExec, WaitLog, WaitAgents}
}

// Waiting is what a starting agent waits for, on its row while it does:
// the "waiting" of `tether status --json`.
type Waiting struct {
	For Wait `json:"for"`
	// What is what the check looks at: the log line's pattern, the
	// address, the URL, the command (its words joined by spaces), the
	// descriptor's number; empty for notify and agents.
	What string `json:"what,omitempty"`
	// Agents are the ids waited for (WaitAgents), in config order.
	Agents []string `json:"agents,omitempty"`
	// Since is when the wait began: when the agent was spawned (a
	// readiness check), or when it began to wait for the agents.
	Since time.Time `json:"since"`
	// Deadline is when the wait fails (its start_timeout: code
	// not_ready); zero for a wait without one (WaitAgents).
	Deadline time.Time `json:"deadline,omitzero"`
}
