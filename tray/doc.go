// Package tray is tether's system tray: a thin client of one profile's
// local API. It shows the agents' state, offers start, stop and restart,
// raises desktop notifications for failures the user must act on, and
// installs or removes the login service. It owns no agent: killing the
// tray changes nothing, and a relaunched tray reconnects.
//
// It is made of parts that can be tested apart:
//
//   - model.go: the menu model. build turns what the tray knows (the
//     service's status, the last error of each agent, the connection, the
//     login switch) into a tree of items with titles, tooltips, enabled
//     and checked flags and actions, failed agents first. It is pure: no
//     systray, no I/O. errtext.go says an error in one line, cause first.
//   - notice.go, coalesce.go, sleep.go: which state changes deserve a
//     notification, what it says and offers (actions, urgency, the
//     subject whose older bubble it replaces); a coalescer that turns a
//     burst into a few notices and one summary naming every agent, never
//     dropping one; and a gate that holds notices while the machine
//     suspends and resumes, and makes one notice of what is still true
//     once it has settled.
//   - engine.go: the runtime. It watches the service's event stream
//     (reconnecting with backoff), coalesces bursts of changes through a
//     buffer-1 channel and rebuilds the whole menu under a fresh context
//     each time (and when the menu opens: it has no timer), and carries
//     out the menu's and the notices' actions; actions.go holds their OS
//     side (opening files, starting the service detached, the login
//     registration), clipboard*.go the clipboard programs, notify_*.go the
//     notification servers (freedesktop on Linux, toasts on Windows,
//     gen2brain/beeep on macOS); logind's PrepareForSleep comes from
//     the power package.
//   - systray.go: the binding of the model onto fyne.io/systray, the only
//     file that imports it; host_linux.go checks for a session bus first,
//     because the library panics without one, and waits for a tray host;
//     opened_linux.go hears a host open the menu.
//
// It talks to the service only through the local API (package client),
// starts one when none runs (the login service, or a detached "tether
// service run"), and reaches the OS's login registration through package
// install.
package tray
