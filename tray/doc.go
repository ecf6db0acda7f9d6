// Package tray is tether's system tray: a thin client of one profile's
// local API. It shows the agents' state, offers start, stop and restart,
// raises desktop notifications for failures the user must act on, and
// installs or removes the login service. It owns no agent: killing the
// tray changes nothing, and a relaunched tray reconnects.
//
// It is made of parts that can be tested apart:
//
//   - model.go: the menu model. Build turns what the tray knows (the
//     service's status, the last error of each agent, the connection, the
//     login switch) into a tree of items with titles, tooltips, enabled
//     and checked flags and actions. It is pure: no systray, no I/O.
//   - notice.go, coalesce.go: which state changes deserve a notification,
//     and a limiter so that bursts never become a storm.
//   - engine.go: the runtime. It watches the service's event stream
//     (reconnecting with backoff), coalesces bursts of changes through a
//     buffer-1 channel and rebuilds the whole menu under a fresh context
//     each time, and carries out the menu's actions; actions.go holds
//     their OS side (opening files, starting the service detached, the
//     login registration, notifications through gen2brain/beeep).
//   - systray.go: the binding of the model onto fyne.io/systray, the only
//     file that imports it; host_linux.go checks for a session bus and a
//     tray host first, because the library panics without a bus.
//
// It talks to the service only through package api, starts one when none
// runs (the login service, or a detached "tether service run"), and reaches
// the OS's login registration through package install (which imports
// nothing of ours); it never imports the service or the guardian. Only the
// command line imports it.
package tray
