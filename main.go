// Command tether keeps local agent sessions on a leash: one identity, one
// execution, and nothing left behind when its owner dies.
package main

import (
	"os"

	"github.com/tether-dev/tether/cli"
)

// version is set at link time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	cli.Version = version
	os.Exit(cli.Main(os.Args[1:]))
}
