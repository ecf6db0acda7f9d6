package tray

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/assets"
)

// coalescer keeps a burst of agents' notices from becoming a storm
// without losing any: within any Window, the first Burst get a bubble of
// their own, and the ones after them are gathered into one summary that
// names every agent gathered ("5 more agents failed: a, b, c, d, e").
// The summary is one bubble for the whole burst, updated in place as it
// grows; a new burst, once a Window has passed without one, gets a new
// one. A newer notice of an agent that had a bubble of its own in the
// window takes that bubble's place (see notice.Subject), so it costs no
// room and is never gathered; nor are notices about no agent (the
// service, the user's own actions). The zero value is not usable; see
// newCoalescer.
type coalescer struct {
	Burst  int
	Window time.Duration

	sent     []time.Time          // own bubbles within the window, oldest first
	subjects map[string]time.Time // their subjects, and when
	gathered []notice             // of the current burst, one per agent, in order
	bursts   int                  // bursts that had a summary, for its subject
	changed  bool                 // the summary changed since summary last said
}

// newCoalescer returns a coalescer with tether's limits: three bubbles of
// their own a minute, then a summary.
func newCoalescer() *coalescer {
	return &coalescer{Burst: 3, Window: time.Minute}
}

// admit reports whether n gets a bubble of its own at now. When it does
// not, it is gathered: summary then has it.
func (c *coalescer) admit(n notice, now time.Time) bool {
	for len(c.sent) > 0 && now.Sub(c.sent[0]) >= c.Window {
		c.sent = c.sent[1:]
	}
	for s, at := range c.subjects {
		if now.Sub(at) >= c.Window {
			delete(c.subjects, s)
		}
	}
	if len(c.sent) == 0 && len(c.gathered) > 0 && !c.changed {
		// The burst is over: the next summary is a bubble of its own.
		c.gathered = nil
	}
	if _, replaces := c.subjects[n.Subject]; n.Agent == "" || replaces {
		return true
	}
	if len(c.sent) < c.Burst {
		c.sent = append(c.sent, now)
		if c.subjects == nil {
			c.subjects = map[string]time.Time{}
		}
		c.subjects[n.Subject] = now
		return true
	}
	if len(c.gathered) == 0 {
		c.bursts++
	}
	// An agent is named once, for its newest notice.
	c.gathered = slices.DeleteFunc(c.gathered, func(g notice) bool { return g.Agent == n.Agent })
	c.gathered = append(c.gathered, n)
	c.changed = true
	return false
}

// summary returns the summary of the notices gathered in this burst, if
// it changed since the last call.
func (c *coalescer) summary() (notice, bool) {
	if !c.changed || len(c.gathered) == 0 {
		return notice{}, false
	}
	c.changed = false
	return summarize(c.gathered, c.bursts), true
}

// pending reports whether summary has something new.
func (c *coalescer) pending() bool { return c.changed && len(c.gathered) > 0 }

// summaryPhrases name the kinds of notices in a summary.
var summaryPhrases = map[string]string{
	kindCrashLoop:  "keep crashing",
	kindFailed:     "will not be restarted",
	kindCleanup:    "could not be cleaned up",
	kindContention: "cannot get their identity",
}

// summarize is the bubble that names every agent of ns, grouped by what
// happened to them. It is as urgent as the most urgent of them, and
// offers to start again the ones that can be.
func summarize(ns []notice, burst int) notice {
	var kinds []string
	byKind := map[string][]string{}
	var again []string
	urgency := urgencyNormal
	for _, n := range ns {
		_, kind, _ := strings.Cut(n.Key, "/")
		if _, ok := byKind[kind]; !ok {
			kinds = append(kinds, kind)
		}
		byKind[kind] = append(byKind[kind], n.Agent)
		if n.Urgency == urgencyCritical {
			urgency = urgencyCritical
		}
		if kind == kindFailed || kind == kindCrashLoop {
			again = append(again, n.Agent)
		}
	}
	var names []string
	var lines []string
	for _, k := range kinds {
		names = append(names, byKind[k]...)
		lines = append(lines, fmt.Sprintf("%s %s: %s", plural(len(byKind[k]), "agent", "agents"), phrase(k), strings.Join(byKind[k], ", ")))
	}
	title := fmt.Sprintf("tether: %d more agents failed: %s", len(names), strings.Join(names, ", "))
	if len(names) == 1 {
		title = fmt.Sprintf("tether: 1 more agent failed: %s", names[0])
	}
	n := notice{
		Key:     fmt.Sprintf("summary/%d", burst),
		Subject: fmt.Sprintf("summary/%d", burst),
		Title:   elide(title, 120),
		Body:    strings.Join(lines, "\n") + "\nThe tray's menu shows each one's error.",
		Urgency: urgency,
		Icon:    assets.Failed,
	}
	if len(again) > 0 {
		n.Actions = []noticeAction{{labelStartAgain, action{Kind: actStart, IDs: again}}}
	}
	return n
}

func phrase(kind string) string {
	if p, ok := summaryPhrases[kind]; ok {
		return p
	}
	return kind
}
