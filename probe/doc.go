// Package probe holds the checks by which tether learns that an agent is
// ready, or still healthy, from the outside: a 2xx answer over HTTP, a TCP
// connect, a command that exits 0, or a line of the agent's output that
// matches a pattern. It also paces them: Wait repeats a check until it
// passes, and Monitor counts failures in a row.
//
// A check runs only when its caller asks; the only timer is the period the
// caller gives. The package knows nothing of agents, guardians or
// configuration files, and imports nothing of tether's.
package probe
