// Package netwatch tells when the machine's network may have changed,
// from the OS's own signals: netlink's link, address and route groups on
// Linux, the routing socket on macOS, the IP helper's interface and route
// change notifications on Windows. It only says "look again": what
// changed, and whether something is reachable now, is the caller's to
// check. It owns no agent and knows nothing of tether.
package netwatch
