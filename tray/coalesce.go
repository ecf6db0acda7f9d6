package tray

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/internal/human"
)

// coalescer keeps a burst of agents' notices from becoming a storm
// without losing any: within any Window, the first Burst get a bubble of
// their own, and the ones after them are gathered into one summary that
// names every agent gathered, sorted ("5 more agents failed: a, b, c, d,
// e"). The summary is one bubble for the whole burst, replaced in place
// by the next, which names only what is new since it was shown; a new
// burst, once a Window has passed without one, gets a new one. An agent
// whose trouble ended before its summary was shown is not named. A newer notice of an agent that had a bubble of its own in the
// window takes that bubble's place (see notice.Subject), so it costs no
// room and is never gathered; nor are notices about no agent (the
// service, the user's own actions). The zero value is not usable; see
// newCoalescer.
type coalescer struct {
	Burst  int
	Window time.Duration

	sent     []time.Time          // own bubbles within the window, oldest first
	subjects map[string]time.Time // their subjects, and when
	gathered []notice             // since the burst's summary was last shown, one per agent
	inBurst  bool                 // a burst has gathered notices: its summary's bubble is open
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
	if len(c.sent) == 0 && c.inBurst && !c.changed {
		// The burst is over: the next summary is a bubble of its own.
		c.gathered, c.inBurst = nil, false
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
	if !c.inBurst {
		c.bursts, c.inBurst = c.bursts+1, true
	}
	// An agent is named once, for its newest notice.
	c.gathered = slices.DeleteFunc(c.gathered, func(g notice) bool { return g.Agent == n.Agent })
	c.gathered = append(c.gathered, n)
	c.changed = true
	return false
}

// forget drops what was gathered of agent id: what it said has ended.
func (c *coalescer) forget(id string) {
	n := len(c.gathered)
	c.gathered = slices.DeleteFunc(c.gathered, func(g notice) bool { return g.Agent == id })
	if len(c.gathered) != n && len(c.gathered) == 0 {
		c.changed = false
	}
}

// summary returns the summary of the notices gathered since the last
// summary was shown, if there are any: it names only what is new, and
// takes the place of the burst's earlier summary.
func (c *coalescer) summary() (notice, bool) {
	if !c.changed || len(c.gathered) == 0 {
		return notice{}, false
	}
	c.changed = false
	n := summarize(c.gathered, c.bursts)
	c.gathered = nil
	return n, true
}

// pending reports whether summary has something new.
func (c *coalescer) pending() bool { return c.changed && len(c.gathered) > 0 }

// summaryPhrases name the kinds of notices in a summary: what one agent
// does, and what several do.
var summaryPhrases = map[string][2]string{
	kindCrashLoop:  {"keeps crashing", "keep crashing"},
	kindFailed:     {"will not be restarted", "will not be restarted"},
	kindCleanup:    {"could not be cleaned up", "could not be cleaned up"},
	kindContention: {"cannot get its identity", "cannot get their identity"},
}

// summarize is the bubble that names every agent of ns gathered after
// the burst's own bubbles.
func summarize(ns []notice, burst int) notice {
	subject := fmt.Sprintf("summary/%d", burst)
	return gather(ns, subject, "more ")
}

// gather is the one bubble of subject that names every agent of ns,
// grouped by what happened to them ("tether: 3 <more >agents failed: a,
// b, c"). It is as urgent as the most urgent of them, and offers to start
// again the ones that can be.
func gather(ns []notice, subject, more string) notice {
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
		slices.Sort(byKind[k])
		names = append(names, byKind[k]...)
		lines = append(lines, fmt.Sprintf("%s %s: %s", human.Count(len(byKind[k]), "agent", "agents"), phrase(k, len(byKind[k])), strings.Join(byKind[k], ", ")))
	}
	slices.Sort(names)
	head := fmt.Sprintf("tether: %d %sagents failed: ", len(names), more)
	if len(names) == 1 {
		head = fmt.Sprintf("tether: 1 %sagent failed: ", more)
	}
	slices.Sort(again)
	n := notice{
		Key:     subject,
		Subject: subject,
		Title:   head + nameList(names, maxSummaryTitle-len(head)),
		Body:    strings.Join(lines, "\n") + "\nThe tray's menu shows each one's error.",
		Urgency: urgency,
		Icon:    assets.Failed,
	}
	if len(again) > 0 {
		n.Actions = []noticeAction{{labelStartAgain, action{Kind: actStart, IDs: again}}}
	}
	return n
}

// maxSummaryTitle bounds a summary's title, in bytes.
const maxSummaryTitle = 120

// nameList joins names with commas within limit bytes, never cutting
// inside a name: the names that do not fit are counted instead ("a, b
// and 3 more").
func nameList(names []string, limit int) string {
	all := strings.Join(names, ", ")
	if len(all) <= limit {
		return all
	}
	for k := len(names) - 1; k >= 1; k-- {
		s := fmt.Sprintf("%s and %d more", strings.Join(names[:k], ", "), len(names)-k)
		if len(s) <= limit {
			return s
		}
	}
	return fmt.Sprintf("%d agents", len(names))
}

// phrase is what n agents did, by a notice's kind, the verb agreeing
// with n.
func phrase(kind string, n int) string {
	p, ok := summaryPhrases[kind]
	switch {
	case !ok:
		return kind
	case n == 1:
		return p[0]
	}
	return p[1]
}
