// Package upgrade replaces a running service by another binary without
// restarting an agent (I9). A service makes an upgrade in five steps:
//
//  1. check: the new binary is run as "service handover-check" and told
//     what would be handed over (the record's version, the guardians'
//     protocol versions, the config); it answers, once it has parsed the
//     config, whether it can take it and with which build, and exits,
//     or on Unix stays to stand in (StandIn). A binary that does not
//     run, cannot take it, rejects the config or does not exit 0 is
//     refused, and nothing else happens (code upgrade): the API answers
//     throughout.
//  2. pause: the API stops accepting (clients queue in the listener's
//     backlog), event streams end with a handover event, and the
//     requests in progress are waited for. A stand-in takes the
//     listener and answers a status from here until the successor
//     serves, holding every other request for it.
//  3. freeze: every actor stops where nothing is in flight and detaches
//     its session at a message boundary; the warm guardians are let go
//     and the run records written.
//  4. record: the handover record is written (record.go).
//  5. exec: on Unix the service execve's the new binary in place, with
//     the service lock, the listener and every tether inherited; on
//     Windows it starts the new binary with them duplicated into it and
//     waits for its word that it has taken over, then exits.
//
// A failure in steps 2 to 5 (a request that does not end, an exec that
// fails, a successor that says it cannot) thaws the actors, serves the
// API again and records the error in Status.Service.Upgrade: the service
// goes on as it was. A successor that dies after taking over is a crash
// like any other (I2).
//
// The package owns the steps (Step, each a point where a test may stop
// the process), the check, the record and the per-OS inheritance
// (Inheritance). It does not import package service: what it needs of
// the service's controller and API server it is given (Controller,
// Pauser, Upgrader's function values), and the service's side, the
// actors' freeze and the successor's start, stays there.
package upgrade
