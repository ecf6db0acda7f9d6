package api

import "slices"

// RestartPolicy says what the service does when an agent ends on its own:
// the "restart" key of an agent in the config.
type RestartPolicy string

// The restart policies.
const (
	// RestartNever: an agent that ends stays ended (stopped after a clean
	// exit, failed otherwise).
	RestartNever RestartPolicy = "never"
	// RestartOnFailure: an agent that ends with a non-zero status or a
	// signal is restarted, with backoff; a clean exit stays stopped.
	RestartOnFailure RestartPolicy = "on-failure"
	// RestartAlways: an agent that ends is restarted, with backoff,
	// however it ended.
	RestartAlways RestartPolicy = "always"
)

// RestartPolicies returns every restart policy, in the order messages
// name them.
func RestartPolicies() []RestartPolicy {
	return []RestartPolicy{RestartNever, RestartOnFailure, RestartAlways}
}

// Valid reports whether p is one of the restart policies.
func (p RestartPolicy) Valid() bool { return slices.Contains(RestartPolicies(), p) }

// Restarts reports whether an agent under p that ended on its own is
// started again; failed says it ended with a non-zero status, a signal,
// or its guardian's death.
func (p RestartPolicy) Restarts(failed bool) bool {
	return p == RestartAlways || p == RestartOnFailure && failed
}
