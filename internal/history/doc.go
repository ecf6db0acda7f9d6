// Package history is the record of agent executions that the tests across
// machines keep, and the checker that reads it. An agent appends a start
// and an end, each stamped on the machine's monotonic clock, which every
// simulated host of a test shares; a harness appends that a process is
// gone when the process could not say so itself (SIGKILL). Check reads
// the whole of it and finds every overlap of two executions of one
// identity, and every fencing token that does not grow from one holder to
// the next.
//
// Only tests use it: the agents of the tests write it, the harness and its
// own tests read it. It imports nothing of tether.
package history
