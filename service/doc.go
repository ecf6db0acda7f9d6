// Package service is the per-user, per-profile owner of intent: it reads
// the config, remembers which agents are enabled, runs one guardian
// session per running agent (through package guardian), restarts agents by
// policy, and serves the local API that the command line and the tray use.
// It owns the controller (one goroutine per agent, so an agent's state
// changes in one place), `tether service run`, the profile's paths and the
// agents' logs, and its own lifecycle: its side of an upgrade (upgrade.go:
// the freeze of its actors, handover_actor.go: what each actor hands over
// and takes back, run_takeover.go: the successor's start), the adoption
// of trees that outlived a crash of the service before (adopt.go), the
// notifications to a service manager and the stop budget a manager must
// allow (budget.go), and the reading of an agent's environment at each
// start (secrets.go). Its subpackages hold the config (config), the
// durable state (state), the API server (localapi), the upgrade's own
// steps, record and check (upgrade), and the reading of secrets from the
// keychain or a command (secret).
//
// It never touches an agent's processes itself: every start, stop and
// cleanup goes through the agent's guardian, and when the service dies its
// guardians tear their trees down on their own (but those of agents with
// survive_service_crash, which wait for the next service). Only the
// command line imports it.
package service
