//go:build !(linux || darwin || windows)

// Tether builds for Linux, macOS and Windows only: its guarantees rest on
// each one's own process, lock and socket mechanisms (platform/unix,
// platform/windows), and it has no fallback for another system. A build
// for one stops here, at the import of a package that cannot exist.

package platform

import _ "tether/builds/only/for/linux/darwin/windows"
