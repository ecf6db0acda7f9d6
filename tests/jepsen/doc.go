// Package jepsen proves I10, one identity, one execution across machines,
// the way distributed systems are proved: a real three-member etcd
// cluster, two or three tether "hosts" on this machine (each a real
// `tether service run` with its own state, lock directory, host name and
// TCP proxy to the cluster, which a test cuts to partition it), agents
// that record their own start and end on the machine's monotonic clock,
// which all the hosts share, and faults injected at random times: a host
// that dies whole, a partition, the etcd leader killed, quorum lost and
// regained, a guardian paused, a hot upgrade. After every schedule the
// checker of internal/history reads the histories and fails on any
// overlap of two executions of one identity.
//
// `make test` runs each scenario once; `make jepsen` runs many random
// schedules and prints the figures of docs/benchmarks.md. It has no code
// outside its tests and nothing may import it.
package jepsen
