// Package peers compares tether with two established process supervisors,
// Debian's supervisor (supervisord, driven over XML-RPC) and s6
// (s6-svscan/s6-supervise), on one misbehaving agent: a shell script whose
// tree holds a worker in its own process group and a double-forked setsid
// grandchild, in a polite variant (everything exits on SIGTERM) and a
// SIGTERM-ignoring one.
//
// Each supervisor runs under a throwaway directory with its own config,
// started and killed by the harness itself; the system's own services are
// never used. The package has no code outside its tests, nothing may
// import it, and it runs on Linux only. It is a measurement, not a check:
// without TETHER_PEERS=1 it skips. Run it with
//
//	TETHER_PEERS=1 go test ./bench/peers/ -run '^TestPeers$' -v -count=1
//
// or make peers. PEERS_IDLE sets the idle period of the wakeup row (a Go
// duration, default 10s). Without supervisord or s6-svscan installed it
// skips, and fails when CI=true.
package peers
