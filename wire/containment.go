package wire

// Containment names the rung of the containment ladder an agent's tree
// got; the constants go from the strongest to the weakest. Every rung
// starts the agent in a session of its own. A guardian takes the
// strongest it can get and says in its log why not a stronger one.
type Containment string

// The containment rungs.
const (
	// ContainmentCgroup: a cgroup v2 of its own below the guardian's,
	// which is writable (root, or a unit with Delegate=yes); the agent is
	// cloned into it and teardown ends with cgroup.kill.
	ContainmentCgroup Containment = "cgroup"
	// ContainmentScope: the same, below a transient scope with
	// Delegate=yes that the user's systemd manager made for the
	// guardian, where no cgroup was writable.
	ContainmentScope Containment = "scope"
	// ContainmentSession: no cgroup; the session, and the child
	// subreapers (the guardian, and its owner) that descendants which
	// leave it come back to.
	ContainmentSession Containment = "session"
	// ContainmentJob: Windows' kill-on-close job object.
	ContainmentJob Containment = "job"
)
