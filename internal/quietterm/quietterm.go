// Package quietterm keeps tether's start from asking the terminal
// anything.
//
// The terminal UI library that "tether top" draws with asks, in a package
// initializer, for the terminal's background colour on behalf of a
// styling library that tether never draws with: it writes OSC 11 and a
// cursor-position request to standard output and waits for the answers,
// up to 5 s on a terminal that gives none (a pseudo-terminal whose other
// end is a program, not a terminal emulator). Every tether command paid
// for it, "tether version" too, and a late answer showed up as stray
// characters at the shell's prompt.
//
// The styling library asks nothing of a terminal whose TERM is "dumb".
// This package is initialized before it: it imports only syscall, and a
// package is initialized as soon as its imports are, in import-path
// order, before the system-call package the styling library reaches
// through its own imports ("golang.org/x/sys/..." sorts after tether's
// import path). Its initializer sets TERM to "dumb" for the
// initializers that follow, and Restore, the first thing main does,
// puts TERM back as it was. A test holds the order to account.
package quietterm

import "syscall"

// dumb is the TERM the styling library asks nothing of.
const dumb = "dumb"

// term is TERM as the process was given it, and set whether it was set.
var term, set = syscall.Getenv("TERM")

func init() {
	_ = syscall.Setenv("TERM", dumb)
}

// Restore puts TERM back as the process was given it, once the package
// initializers have run.
func Restore() {
	if set {
		_ = syscall.Setenv("TERM", term)
	} else {
		_ = syscall.Unsetenv("TERM")
	}
}
