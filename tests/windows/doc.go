// Package windows drives a tether.exe built for Windows through its
// command line and its named pipe, the way tests/ drives the Linux binary:
// a service crash, the relaunch, and a second profile on the same
// identity. The wine run (.ci/wine-test) builds the binary and names it in
// TETHER_EXE; without it the tests skip (and fail with CI=true). It has
// no code outside its tests.
package windows
