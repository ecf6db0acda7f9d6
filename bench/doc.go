// Package bench holds tether's lifetime benchmarks: how fast the whole
// agent tree, its private directory and its lock are gone after the owner
// is SIGKILLed (invariant I2), how long a guardian takes from the start
// request to ready (cold, and warm through guardian.Pool), what an idle
// guardian costs in memory and wakeups, how fast a polite tree is gone after
// a stop over the API (BenchmarkStopPolite), what a service of 200 agents
// costs to start, to use and to lose (BenchmarkService), and how often an
// idle service wakes (BenchmarkServiceIdle), and what a start of the
// guardian's own executable, of tether as the guardian and of the command
// line costs up to main and its exit (BenchmarkExecStart).
//
// The benchmarks drive the real binaries, built static once by TestMain
// (tether, and tether-guardian beside it): the guardian benchmarks
// through the guardian package's owner-side API, the service benchmark
// through the command line and the local API. This
// package has no code outside its tests and nothing else may import it.
// They run on Linux only (pidfds, /proc, child subreaper); elsewhere they
// skip.
//
// Run them with a fixed iteration count, for example:
//
//	go test ./bench/ -run '^$' -bench . -benchtime=50x
//
// TETHER_BENCH_IDLE sets the idle period of the idle benchmarks (a Go
// duration, default 30s); TETHER_BENCH_AGENTS the number of agents of the
// service benchmark (default 200), and TETHER_BENCH_TETHER a tether binary
// for every benchmark to run instead of the one TestMain built (to compare
// two builds, run the benchmarks with each in turn).
package bench
