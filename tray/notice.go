package tray

import (
	"fmt"

	"github.com/tether-dev/tether/api"
)

// Notice is one desktop notification: what happened and what to do.
type Notice struct {
	// Key identifies what the notice is about (agent and kind), for
	// coalescing: "alice/cleanup", "service/lost".
	Key   string
	Title string
	Body  string
}

// Kinds of notices, the second half of a Key. A kind about one error code
// or one state is named after it.
const (
	KindCleanup    = "cleanup"
	KindCrashLoop  = string(api.CodeCrashLoop)
	KindContention = string(api.CodeContention)
	KindFailed     = string(api.StateFailed)
	KindLost       = "lost"
	KindAction     = "action"
)

// maxNoticeMessage bounds how much of an error message a notice quotes.
const maxNoticeMessage = 300

// detector decides which agent changes deserve a notice. It remembers,
// per agent, the condition it last announced, so that the same condition
// reported again (a cleanup retried, a contention retried every few
// milliseconds) is announced once, and a new occurrence after recovery is
// announced again.
type detector struct {
	last map[string]string
}

// condition is what about a is worth a notice, or "": the kind and a
// phase, but not the message, which changes from retry to retry, nor the
// state while retrying (a contention retry goes starting, backoff,
// starting, ... with the same error).
func condition(a api.Agent) (kind string, cond string) {
	e := a.Error
	switch {
	case e == nil:
		return "", ""
	case e.Code == api.CodeCleanupFailed && a.State == api.StateCleanupFailed:
		return KindCleanup, KindCleanup + "/held"
	case e.Code == api.CodeCleanupFailed:
		return KindCleanup, KindCleanup + "/warning"
	case e.Code == api.CodeCrashLoop && a.State == api.StateFailed:
		return KindCrashLoop, KindCrashLoop
	case e.Code == api.CodeContention && a.State == api.StateFailed:
		return KindContention, KindContention + "/gave-up"
	case e.Code == api.CodeContention:
		return KindContention, KindContention + "/retrying"
	case a.State == api.StateFailed:
		// Any other start failure (spawn, config, lock, ...) or an exit
		// the restart policy does not cover.
		return KindFailed, KindFailed
	}
	return "", ""
}

// agent returns the notice a's new row calls for, if any.
func (d *detector) agent(a api.Agent) (Notice, bool) {
	if d.last == nil {
		d.last = map[string]string{}
	}
	kind, cond := condition(a)
	prev := d.last[a.ID]
	if cond == "" {
		delete(d.last, a.ID)
		return Notice{}, false
	}
	d.last[a.ID] = cond
	if cond == prev {
		return Notice{}, false
	}
	return agentNotice(kind, a), true
}

// keep forgets the agents not in ids (removed from the config).
func (d *detector) keep(agents []api.Agent) {
	present := map[string]bool{}
	for _, a := range agents {
		present[a.ID] = true
	}
	for id := range d.last {
		if !present[id] {
			delete(d.last, id)
		}
	}
}

func agentNotice(kind string, a api.Agent) Notice {
	msg := truncate(a.Error.Message, maxNoticeMessage)
	n := Notice{Key: a.ID + "/" + kind}
	switch {
	case kind == KindCleanup && a.State == api.StateCleanupFailed:
		n.Title = fmt.Sprintf("tether: %s would not stop", a.ID)
		n.Body = fmt.Sprintf("%s\ntether keeps %s's identity locked and keeps retrying. End the processes named above (for example with kill -9), then check `tether status`.", msg, a.ID)
	case kind == KindCleanup:
		n.Title = fmt.Sprintf("tether: %s stopped, but its cleanup failed", a.ID)
		n.Body = fmt.Sprintf("%s\nRemove what is named above by hand; `tether logs %s` has the details.", msg, a.ID)
	case kind == KindCrashLoop:
		n.Title = fmt.Sprintf("tether: %s keeps crashing", a.ID)
		n.Body = fmt.Sprintf("%s\nIt will not be restarted. Read its log (Open log in the tray, or `tether logs %s`), fix the cause, then start it again.", msg, a.ID)
	case kind == KindContention && a.State == api.StateFailed:
		n.Title = fmt.Sprintf("tether: %s could not get its identity", a.ID)
		n.Body = fmt.Sprintf("%s\ntether has stopped retrying. Stop the other holder named above, then start %s again.", msg, a.ID)
	case kind == KindFailed:
		n.Title = fmt.Sprintf("tether: %s failed", a.ID)
		n.Body = fmt.Sprintf("%s: %s\nIt will not be restarted. Read its log (Open log in the tray, or `tether logs %s`), fix the cause, then start it again.", a.Error.Code, msg, a.ID)
	default:
		n.Title = fmt.Sprintf("tether: %s's identity is in use elsewhere", a.ID)
		n.Body = fmt.Sprintf("%s\ntether retries for a while. Stop the other holder named above (another profile, or another tether), or stop %s here.", msg, a.ID)
	}
	return n
}

// lostNotice is the notice for a service that was there and is gone.
func lostNotice(profile string) Notice {
	who, flag := "The tether service", ""
	if profile != "" && profile != "default" {
		who, flag = fmt.Sprintf("The tether service of profile %q", profile), " --profile "+profile
	}
	return Notice{
		Key:   "service/" + KindLost,
		Title: "tether: service stopped",
		Body: fmt.Sprintf("%s is no longer running, so its agents are stopped too. Use Start service in the tray menu, or run `tether%s service start` (or `tether%s service run`).",
			who, flag, flag),
	}
}
