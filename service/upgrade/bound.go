package upgrade

import "time"

// ServeBound is how long an upgrade's successor has, from the exec, to
// serve its API. One that has not served by then (a binary that passed
// the check and then hangs) ends, on Linux, as a crash does: its
// guardians see the tethers close and stop their trees (I2), the service
// lock and the socket are free for a new service, and a service manager
// starts one. Without the bound such a successor would hold the socket,
// the lock and every tether, answering nothing, for ever.
const ServeBound = 10 * time.Second
