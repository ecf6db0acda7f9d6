// Package probe is how tether learns that an agent is ready, or still
// healthy. It owns the vocabulary of those checks (Kind, and Spec, the
// form in which a config states a check and the guardian protocol carries
// it) and the checks made from the outside: a 2xx answer over HTTP, a TCP
// connect, a command that exits 0. (A line of the agent's output that
// matches a pattern is matched by the guardian, which reads that output.)
// It also paces them: Wait repeats a check until it
// passes, and Monitor counts failures in a row.
//
// A check runs only when its caller asks; the only timer is the period the
// caller gives. The package knows nothing of agents, guardians or
// configuration files, so the config, the guardian and the service may all
// use it.
package probe
