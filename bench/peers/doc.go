// Package peers compares tether with four established process
// supervisors on one misbehaving agent: Debian's supervisor (supervisord,
// driven over XML-RPC), s6 (s6-svscan/s6-supervise), PM2 (its God Daemon,
// driven through its programmatic API and its pm2 command) and
// process-compose (driven over its REST API and its command line). The
// agent is a shell script whose tree holds a worker in its own process
// group and a double-forked setsid grandchild, in a polite variant
// (everything exits on SIGTERM), a SIGTERM-ignoring one, and one that
// becomes ready 200 ms after it starts, for the readiness row.
//
// Each supervisor runs under a throwaway directory with its own config
// and state (PM2_HOME, process-compose's socket and logs), started and
// killed by the harness itself; the system's own services are never
// used. The package has no code outside its tests, nothing may import
// it, and it runs on Linux only. It is a measurement, not a check:
// without TETHER_PEERS=1 it skips.
// Run it with make peers, which installs the peers first (.ci/peers-deps:
// supervisor and s6 from apt, PM2 from npm into a private prefix,
// process-compose built from its Go module, both pinned and kept under
// ~/.cache/tether-peers), or with
//
//	TETHER_PEERS=1 PEERS_PM2=.../pm2 PEERS_PROCESS_COMPOSE=.../process-compose \
//		go test ./bench/peers/ -run Peers -v -count=1
//
// Without PEERS_PM2 and PEERS_PROCESS_COMPOSE, pm2 and process-compose
// are looked for on PATH. PEERS_IDLE sets the idle period of the wakeup
// row (a Go duration, default 10s). Without one of the peers it skips,
// and fails when CI=true.
package peers
