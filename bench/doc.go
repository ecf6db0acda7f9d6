// Package bench holds tether's lifetime benchmarks: how fast the whole
// agent tree, its private directory and its lock are gone after the owner
// is SIGKILLed (invariant I2), how long a guardian takes from the start
// request to ready, and what an idle guardian costs in memory and wakeups.
//
// The benchmarks drive the real binary, built once by TestMain, and only
// through the guardian package's owner-side API; this package has no code
// outside its tests and nothing else may import it. They run on Linux only
// (pidfds, /proc, child subreaper); elsewhere they skip.
//
// Run them with a fixed iteration count, for example:
//
//	go test ./bench/ -run '^$' -bench . -benchtime=50x
//
// TETHER_BENCH_IDLE sets the idle period of the idle benchmark (a Go
// duration, default 30s).
package bench
