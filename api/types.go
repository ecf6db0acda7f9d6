package api

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/wire"
)

// Version is the path prefix of this API: every path starts with it.
const Version = "/localapi/v0"

// Host is the host name clients put in their requests (http://tether/...).
// The service accepts it, or no Host at all, and refuses any other: a
// request naming another host was not made by a tether client but relayed
// by something else, such as a browser or a proxy.
const Host = "tether"

// Error is a typed failure, in a response body or attached to an agent.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Left lists the processes a failed cleanup left alive
	// (cleanup_failed), so a client can say what is stuck without
	// reading the message.
	Left []Process `json:"left,omitempty"`
	// Last is, for crash_loop, how the agent last ended: the cause the
	// loop repeats.
	Last *Error `json:"last,omitempty"`
	// Time is when it happened, on an agent's row: when the service
	// put it there. Zero elsewhere.
	Time time.Time `json:"time,omitzero"`
}

// Equal reports whether e and o say the same: code, message, the
// processes left and the last ending.
func (e Error) Equal(o Error) bool {
	if e.Code != o.Code || e.Message != o.Message || !slices.Equal(e.Left, o.Left) || (e.Last == nil) != (o.Last == nil) {
		return false
	}
	return e.Last == nil || e.Last.Equal(*o.Last)
}

// Process is a process a cleanup left alive, and its state as the system
// reports it: on Linux and macOS a process state letter (D: waiting in
// the kernel, uninterruptibly, so SIGKILL takes effect only when that call
// returns; Z: a zombie; T: stopped); empty where the system says none
// (Windows).
type Process struct {
	PID   int    `json:"pid"`
	State string `json:"state,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Agent is one row of the status.
type Agent struct {
	ID          string    `json:"id"`
	Identity    string    `json:"identity"`
	State       State     `json:"state"`
	Enabled     bool      `json:"enabled"`
	PID         int       `json:"pid"`
	GuardianPID int       `json:"guardian_pid"`
	Since       time.Time `json:"since"`
	Restarts    int       `json:"restarts"`
	Error       *Error    `json:"error"`
	// Status is the agent's own word on how it is doing: its last
	// STATUS= text (ready: notify), or what a starting agent waits for,
	// or why the service restarted it (an adopted tree whose config
	// entry changed).
	Status string `json:"status,omitempty"`
	// Waiting is what a starting agent waits for (its readiness check,
	// or the agents it starts after), while it does; nil otherwise.
	Waiting *Waiting `json:"waiting,omitempty"`
	// IntentError, code state, says that the agent's intent (started
	// or stopped, Enabled) could not be saved: the service retries until
	// it is. Until then a service that crashed would start, or leave
	// stopped, the agent as the state file last said.
	IntentError *Error `json:"intent_error,omitempty"`
	// Containment is the rung the running tree got; empty while none
	// runs.
	Containment wire.Containment `json:"containment,omitempty"`
	// Usage is what its tree costs, in a status that asked for it
	// (GET status?usage=1); absent elsewhere, and where it could not be
	// measured.
	Usage *Usage `json:"usage,omitempty"`
}

// Status is the answer of GET /localapi/v0/status.
type Status struct {
	Profile    string `json:"profile"`
	ServicePID int    `json:"service_pid"`
	// ConfigPath is the absolute path of the config file the service
	// reads, at its start and at every reload: the one given with
	// --config (ConfigGiven), else the profile's default. Without
	// --config, a file that does not exist stands for the embedded
	// default config, which is then in force; with it, it is an error.
	ConfigPath string `json:"config_path"`
	// ConfigGiven says the service was started with --config
	// ConfigPath: a client that starts the service again passes the
	// same flag (and --profile Profile).
	ConfigGiven bool    `json:"config_given,omitempty"`
	Agents      []Agent `json:"agents"`
	// StateError reports a durable state file that could not be read;
	// the service keeps running and leaves the file as it is.
	StateError *Error `json:"state_error,omitempty"`
	// ConfigError reports a config that failed to load on reload; the
	// running config stays in force.
	ConfigError *Error `json:"config_error,omitempty"`
	// Service describes the service process: its binary, and its last
	// upgrade.
	Service *Service `json:"service,omitempty"`
}

// Event types on the event stream.
const (
	EventHello  = "hello"  // first event: the whole status
	EventAgent  = "agent"  // an agent's row changed
	EventStatus = "status" // the whole status again, after a reload: agents missing from it were removed
	EventLog    = "log"    // a line of an agent's log (when asked for)
)

// Event is one line of GET /localapi/v0/events.
type Event struct {
	Type   string    `json:"type"`
	Time   time.Time `json:"time"`
	Status *Status   `json:"status,omitempty"` // hello, status
	Agent  *Agent    `json:"agent,omitempty"`  // agent
	ID     string    `json:"id,omitempty"`     // log
	Line   string    `json:"line,omitempty"`   // log
}

// Result is the answer of an action on one agent.
type Result struct {
	ID    string `json:"id"`
	Agent *Agent `json:"agent,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// Paths of the API, under Version.
const (
	PathStatus  = Version + "/status"         // GET; ?usage=1 adds each agent's Usage
	PathEvents  = Version + "/events"         // GET, newline-delimited JSON; ?logs=ID,ID
	PathStart   = Version + "/agents/start"   // POST {"ids":[...]}
	PathStop    = Version + "/agents/stop"    // POST {"ids":[...]}
	PathRestart = Version + "/agents/restart" // POST {"ids":[...]}
	PathLogs    = Version + "/logs"           // GET ?id=ID&n=N
	PathReload  = Version + "/reload"         // POST
	PathQuit    = Version + "/quit"           // POST: stop every agent and exit
)

// QueryUsage is the parameter of GET status that asks for each agent's
// Usage: ?usage=1.
const QueryUsage = "usage"

// IDsRequest is the body of start, stop and restart.
type IDsRequest struct {
	IDs []string `json:"ids"`
	// NoWait answers a start or restart once the agent is spawned,
	// without waiting for it to be ready.
	NoWait bool `json:"no_wait,omitempty"`
}

// Results is the answer of start, stop and restart: one Result per id,
// in order.
type Results struct {
	Results []Result `json:"results"`
}

// Reloaded is the answer of a reload: what it did, by agent id, each
// list in config order.
type Reloaded struct {
	Added     []string `json:"added,omitempty"`     // new agents
	Restarted []string `json:"restarted,omitempty"` // changed, and running: restarted into the new entry
	Changed   []string `json:"changed,omitempty"`   // changed, and not running: the new entry applies at their next start
	Removed   []string `json:"removed,omitempty"`   // gone from the config: stopped
}

// Summary says what r did in a few words: "2 added, 1 restarted", or
// "nothing changed".
func (r Reloaded) Summary() string {
	var parts []string
	for _, p := range []struct {
		ids  []string
		word string
	}{{r.Added, "added"}, {r.Restarted, "restarted"}, {r.Changed, "changed"}, {r.Removed, "removed"}} {
		if len(p.ids) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", len(p.ids), p.word))
		}
	}
	if len(parts) == 0 {
		return "nothing changed"
	}
	return strings.Join(parts, ", ")
}

// Logs is the answer of GET /localapi/v0/logs.
type Logs struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

// MaxBody bounds a request body.
const MaxBody = 64 << 10
