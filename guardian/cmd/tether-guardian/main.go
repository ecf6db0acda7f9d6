// Command tether-guardian is tether's guardian on its own: the lifetime
// owner of one agent, which the service starts once per running identity
// (see package guardian). It is shipped beside tether and links nothing
// of the service, the tray or any client library, so that no guardian
// pays their package initializers in time or memory; where it is
// missing, the service runs "tether guardian" instead.
package main

import (
	"os"

	"github.com/tether-dev/tether/guardian"
)

func main() { os.Exit(guardian.Main(os.Args[1:])) }
