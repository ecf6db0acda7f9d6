// Package api is the local API's contract: its versioned paths, wire
// types, error codes and agent states, where a profile's service listens
// (SocketPath: a unix socket, or a named pipe on Windows) and what a
// profile may be called (ValidateProfile). It holds types only: the
// service serves them (service/localapi), and package client speaks them.
//
// # Paths
//
// Every path starts with Version (/localapi/v0) and is named by a Path
// constant: GET status (a Status: the profile, the service's pid, the
// config file it reads and whether --config named it, the agents' rows;
// with ?usage=1 each row also carries its Usage, what its process tree
// costs, measured for that request), GET events (newline-delimited Events:
// a hello with the whole Status, then a row per change of an agent, the
// whole Status again after a reload, and log lines when asked for), POST
// agents/start, agents/stop and agents/restart (an IDsRequest, answered
// by Results, one per id), GET logs (Logs), POST reload, POST quit and
// POST upgrade (an UpgradeRequest, answered by an UpgradeAnswer once the
// new binary passed its check; Status.Service then says how it went). An
// event stream ends with a handover event when the service hands over to
// its successor; the client's Events reconnects by itself.
//
// # States
//
// An Agent's State is one of the State constants, listed by States:
// stopped, starting, running, stopping, backoff, failed, cleanup_failed,
// and adoptable, which only a client shows, for an agent that outlived its
// service (client.WaitingToBeAdopted) while none runs.
// Each constant's comment says what the service means by it.
//
// # Error codes
//
// An Error's Code is one of the Code constants, listed by Codes; each
// constant's comment says what it means, and Code's which exit code of the
// command line it becomes. Where each can appear:
//
//   - On an Agent row: the AgentCodes, that is contention,
//     cleanup_failed, spawn, config, lock, private_dir, internal, exited,
//     crash_loop, not_ready, watchdog, unhealthy and dependency. In its
//     IntentError: state, while its intent is not saved.
//   - In an action's Result: why the start or stop failed, as on the
//     row; not_found for an unknown id (the Result has no row); state when
//     the action went through but its intent could not be saved;
//     internal when the agent was removed, the service is shutting down
//     or the request was given up.
//   - In Status.StateError: state. In Status.ConfigError: config.
//   - In the body of a failed request: bad_request (HTTP 400, 405, 413),
//     forbidden (403), not_found (404), config for a rejected reload
//     (422), cleanup_failed for a quit whose stops could not be
//     confirmed, internal (500).
//
// An Error carries what a client may act on as data, never only in its
// message: Left, the processes a failed cleanup left alive and their
// states; Last, the ending a crash_loop repeats.
//
// A client shows a state or code it does not know by its name: the sets
// are closed for a version of the service, but a newer service may add to
// them.
package api
