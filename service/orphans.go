package service

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Orphans stops the processes that come back to the service when a
// guardian dies: the service is a child subreaper, so the dead guardian's
// tree is reparented to it, whatever held the tree, down to a descendant
// that left the agent's session and closed every inherited descriptor,
// which nothing else could find when no cgroup holds it
// (wire.ContainmentSession). The only children the service starts
// are guardians, so every other child is such a leftover, and the service
// stops it at once: the tree lost its owner.
type Orphans interface {
	// Stop stops every such process, and everything below it, as a
	// guardian stops a tree: SIGTERM, up to timeout, then SIGKILL. It
	// returns nil when there was none.
	Stop(timeout time.Duration) (*OrphanReport, error)
	// Close stops looking after them.
	Close()
}

// OrphanReport says what Orphans.Stop stopped.
type OrphanReport struct {
	// ByIdentity counts the processes by the identity their environment
	// names (TETHER_IDENTITY, which every agent gets and its descendants
	// inherit); "" counts those that name none.
	ByIdentity map[string]int
	Terminated int
	Killed     int
}

// Of returns how many of the processes stopped named identity; a nil
// report stopped none.
func (r *OrphanReport) Of(identity string) int {
	if r == nil {
		return 0
	}
	return r.ByIdentity[identity]
}

func (r *OrphanReport) String() string {
	n := 0
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(r.ByIdentity)) {
		n += r.ByIdentity[id]
		if id == "" {
			parts = append(parts, fmt.Sprintf("%d of no known identity", r.ByIdentity[id]))
		} else {
			parts = append(parts, fmt.Sprintf("%d of %q", r.ByIdentity[id], id))
		}
	}
	return fmt.Sprintf("%d process(es) of its tree came back to the service and were stopped (%s; %d killed)",
		n, strings.Join(parts, ", "), r.Killed)
}
