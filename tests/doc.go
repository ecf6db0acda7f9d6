// Package tests holds tether's end-to-end tests on Linux. TestMain builds
// the real binary; the tests drive it from outside, through its command
// line, its local API socket and signals, the way a user or a crash would,
// and watch what it does through the process table, its locks, cgroups and
// state: services started, killed and relaunched, profiles contending for
// one identity, cleanups that fail for real, the crash torture, and the tray
// on a real desktop. It has no code outside its tests and nothing may
// import it.
package tests
