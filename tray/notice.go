package tray

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/internal/human"
)

// urgency is how insistently a notice asks for attention.
type urgency int

const (
	// urgencyNormal notices go away after the desktop's usual time.
	urgencyNormal urgency = iota
	// urgencyLow notices only inform.
	urgencyLow
	// urgencyCritical notices stay until the user dismisses them.
	urgencyCritical
)

// noticeAction is a button of a notice, where the desktop shows them; the
// first is also what clicking the notice itself does.
type noticeAction struct {
	Label string
	Do    action
}

// Labels of the actions notices offer.
const (
	labelOpenLog      = "Open log"
	labelStartAgain   = "Start again"
	labelOpenConfig   = "Open config"
	labelStartService = "Start service"
)

// notice is one desktop notification: what happened and what to do.
type notice struct {
	// Key identifies what the notice is about (agent and kind):
	// "alice/cleanup", "service/lost".
	Key string
	// Subject groups the notices that replace each other on the
	// desktop: a newer notice of the same subject takes the place of the
	// older one's bubble. "agent/alice", "service".
	Subject string
	// Agent is the agent the notice is about, or "".
	Agent   string
	Title   string
	Body    string
	Urgency urgency
	Icon    assets.State
	Actions []noticeAction
	// cond is the detector's condition that raised an agent's notice,
	// so that a notice held back can be checked to be still true.
	cond string
	// withdraw: not a notice to show but the end of what the agent's
	// last notice said; its bubble, if still up, is taken down.
	withdraw bool
}

// withdrawal is the notice that takes down the bubble of agent id's last
// notice: what it said has ended (the agent runs again, was stopped, or
// its stuck process died).
func withdrawal(id string) notice {
	return notice{Key: id + "/resolved", Subject: "agent/" + id, Agent: id, withdraw: true}
}

// Kinds of notices, the second half of a Key. A kind about one error code
// or one state is named after it.
const (
	kindCleanup    = "cleanup"
	kindCrashLoop  = string(api.CodeCrashLoop)
	kindContention = string(api.CodeContention)
	kindFailed     = string(api.StateFailed)
	kindLost       = "lost"
	kindBack       = "back"
	kindRestarted  = "restarted"
	kindUpdated    = "updated"
	kindAction     = "action"
	kindConfig     = "config"
	kindNoTray     = "no_tray"
)

// Subjects of the notices that are not about one agent.
const (
	subjectService = "service"
	subjectTray    = "tray"
)

// maxNoticeMessage bounds how much of an error message a notice quotes;
// a longer one loses its middle.
const maxNoticeMessage = 600

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
		return kindCleanup, kindCleanup + "/held"
	case e.Code == api.CodeCleanupFailed:
		return kindCleanup, kindCleanup + "/warning"
	case e.Code == api.CodeCrashLoop && a.State == api.StateFailed:
		return kindCrashLoop, kindCrashLoop
	case e.Code == api.CodeContention && a.State == api.StateFailed:
		return kindContention, kindContention + "/gave-up"
	case e.Code == api.CodeContention && a.State == api.StateHeldElsewhere:
		return kindContention, kindContention + "/elsewhere"
	case e.Code == api.CodeContention:
		return kindContention, kindContention + "/retrying"
	case a.State == api.StateFailed:
		// Any other start failure (spawn, config, lock, ...) or an exit
		// the restart policy does not cover.
		return kindFailed, kindFailed
	}
	return "", ""
}

// agent returns the notice a's new row calls for, if any: a new
// condition's notice, or the withdrawal of the last one when its
// condition has ended.
func (d *detector) agent(a api.Agent) (notice, bool) {
	if d.last == nil {
		d.last = map[string]string{}
	}
	kind, cond := condition(a)
	prev := d.last[a.ID]
	if cond == "" {
		delete(d.last, a.ID)
		if prev != "" {
			return withdrawal(a.ID), true
		}
		return notice{}, false
	}
	d.last[a.ID] = cond
	if cond == prev {
		return notice{}, false
	}
	n := agentNotice(kind, a)
	n.cond = cond
	return n, true
}

// holds reports whether the condition that raised n still holds.
func (d *detector) holds(n notice) bool {
	return n.cond != "" && d.last[n.Agent] == n.cond
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

// agentNotice is the notice of kind for a's row. Crash loops and cleanup
// failures are critical: they stay until dismissed.
func agentNotice(kind string, a api.Agent) notice {
	msg := elide(errorText(*a.Error), maxNoticeMessage)
	n := notice{Key: a.ID + "/" + kind, Subject: "agent/" + a.ID, Agent: a.ID, Icon: assets.Failed}
	logs := noticeAction{labelOpenLog, action{Kind: actOpenLog, IDs: []string{a.ID}}}
	again := noticeAction{labelStartAgain, action{Kind: actStart, IDs: []string{a.ID}}}
	config := noticeAction{labelOpenConfig, action{Kind: actOpenConfig}}
	switch {
	case kind == kindCleanup && a.State == api.StateCleanupFailed:
		n.Title = fmt.Sprintf("tether: %s would not stop", a.ID)
		n.Body = msg + "\n" + cleanupAdvice(a)
		n.Urgency, n.Actions = urgencyCritical, []noticeAction{logs}
	case kind == kindCleanup:
		n.Title = fmt.Sprintf("tether: %s stopped, but its cleanup failed", a.ID)
		n.Body = fmt.Sprintf("%s\nRemove what is named above by hand; `tether logs %s` has the details.", msg, a.ID)
		n.Urgency, n.Actions = urgencyCritical, []noticeAction{logs}
	case kind == kindCrashLoop:
		n.Title = fmt.Sprintf("tether: %s keeps crashing", a.ID)
		n.Body = fmt.Sprintf("%s\nIt will not be restarted. Read its log (Open log, or `tether logs %s`), fix the cause, then start it again.", msg, a.ID)
		n.Urgency, n.Actions = urgencyCritical, []noticeAction{logs, again, config}
	case kind == kindContention && a.State == api.StateFailed:
		n.Title = fmt.Sprintf("tether: %s could not get its identity", a.ID)
		n.Body = fmt.Sprintf("%s\ntether has stopped retrying. Stop the other holder named above, then start %s again.", msg, a.ID)
		n.Actions = []noticeAction{again, logs}
	case kind == kindContention && a.State == api.StateHeldElsewhere:
		n.Title = fmt.Sprintf("tether: %s runs on another machine", a.ID)
		n.Body = fmt.Sprintf("%s: %s\nIt starts here by itself when that one lets go.", a.ID, a.Status)
		n.Icon = assets.Busy
	case kind == kindFailed:
		n.Title = fmt.Sprintf("tether: %s failed", a.ID)
		n.Body = fmt.Sprintf("%s: %s\nIt will not be restarted. Read its log (Open log, or `tether logs %s`), fix the cause, then start it again.", a.Error.Code, msg, a.ID)
		n.Actions = []noticeAction{logs, again, config}
	default:
		n.Title = fmt.Sprintf("tether: %s's identity is in use elsewhere", a.ID)
		n.Body = fmt.Sprintf("%s\ntether retries for a while. Stop the other holder named above (another profile, or another tether), or stop %s here.", msg, a.ID)
		n.Icon, n.Actions = assets.Busy, []noticeAction{logs}
	}
	return n
}

// cleanupAdvice says what the user can do about processes that would not
// die. A process in uninterruptible sleep (state D) has had SIGKILL
// already and dies when the kernel call it waits in returns: kill -9
// cannot do more, so the advice is where to look instead.
func cleanupAdvice(a api.Agent) string {
	ps := survivors(*a.Error)
	if !allStuck(ps) {
		return fmt.Sprintf("tether keeps %s's identity locked and keeps retrying. End the processes named above (for example with kill -9), then check `tether status`.", a.ID)
	}
	p := ps[0].PID
	what := "It has had SIGKILL, and another cannot do more: it ends when the kernel call it waits in returns."
	if len(ps) > 1 {
		what = "They have had SIGKILL, and another cannot do more: each ends when the kernel call it waits in returns."
	}
	return fmt.Sprintf("%s That is usually a frozen cgroup, a hung network or FUSE mount, or a failing disk: "+
		"`cat /proc/%d/wchan` and `grep freezer /proc/%d/cgroup` say which. Thaw the cgroup, or bring back (or `umount -l`) the mount; "+
		"a reboot always clears it. Meanwhile tether keeps %s's identity locked and retries on its own.",
		what, p, p, a.ID)
}

// lostKey is the key of lostNotice's notices.
const lostKey = subjectService + "/" + kindLost

// lostNotice is the notice for a service that was there and is gone. Its
// advice is the command that starts it here: the login service's start
// where it is installed, else a service run (and how to make it start at
// login).
func lostNotice(profile string, installed bool) notice {
	who, flag := serviceWho(profile)
	how := fmt.Sprintf("run `tether%s service start`", flag)
	if !installed {
		how = fmt.Sprintf("run `tether%s service run` (`tether%s service install` makes it start at login)", flag, flag)
	}
	return notice{
		Key:     lostKey,
		Subject: subjectService,
		Title:   "tether: service stopped",
		Body:    fmt.Sprintf("%s is no longer running, so its agents are stopped too. Use Start service in the tray menu, or %s.", who, how),
		Icon:    assets.Unreachable,
		Actions: []noticeAction{{labelStartService, action{Kind: actStartService}}},
	}
}

// backNotice follows a lostNotice once the service answers again; it
// takes the place of the lost one's bubble.
func backNotice(profile string, st api.Status) notice {
	who, _ := serviceWho(profile)
	return notice{
		Key:     subjectService + "/" + kindBack,
		Subject: subjectService,
		Title:   "tether: service is back",
		Body:    fmt.Sprintf("%s is running again (pid %d): %s.", who, st.ServicePID, strings.ToLower(aggregate(st.Agents))),
		Urgency: urgencyLow,
		Icon:    assets.Mark,
	}
}

// restartedAgents are the agents of before (id: pid) that run again under
// another pid in now, sorted.
func restartedAgents(before map[string]int, now []api.Agent) []string {
	var ids []string
	for _, a := range now {
		if pid, ok := before[a.ID]; ok && a.PID != pid {
			ids = append(ids, a.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// restartedNotice says, once and quietly, that the service's manager
// started the service again after it died, and what that did to the
// agents that ran.
func restartedNotice(profile string, restarted []string) notice {
	who, _ := serviceWho(profile)
	body := fmt.Sprintf("%s stopped unexpectedly, and its service manager started it again; every agent kept running.", who)
	if len(restarted) > 0 {
		body = fmt.Sprintf("%s stopped unexpectedly, and its service manager started it again; %s restarted with it: %s.",
			who, human.Count(len(restarted), "agent was", "agents were"), nameList(restarted, maxNoticeMessage))
	}
	return notice{
		Key:     subjectService + "/" + kindRestarted,
		Subject: subjectService,
		Title:   "tether: service restarted",
		Body:    body,
		Urgency: urgencyLow,
		Icon:    assets.Mark,
	}
}

// updatedNotice says the service now runs another binary: an upgrade (a
// package's, an installer's, tether service upgrade) kept it, and every
// agent, running (I9).
func updatedNotice(profile, was string, now api.Service) notice {
	who, _ := serviceWho(profile)
	body := fmt.Sprintf("%s was updated to tether %s", who, now.Version)
	if was != "" && was != now.Version {
		body += " (from " + was + ")"
	}
	return notice{
		Key:     subjectService + "/" + kindUpdated,
		Subject: subjectService,
		Title:   "tether: updated",
		Body:    body + "; its agents kept running.",
		Urgency: urgencyLow,
		Icon:    assets.Mark,
	}
}

func serviceWho(profile string) (who, flag string) {
	if profile != "" && profile != "default" {
		return fmt.Sprintf("The tether service of profile %q", profile), " --profile " + profile
	}
	return "The tether service", ""
}

// configNotice reports a config the service would not apply.
func configNotice(e api.Error) notice {
	return notice{
		Key:     "config/" + kindConfig,
		Subject: "config",
		Title:   "tether: config not applied",
		Body:    elide(errorText(e), maxNoticeMessage) + "\nThe service keeps running the config it had. Fix the file, then use Reload config again.",
		Icon:    assets.Failed,
		Actions: []noticeAction{{labelOpenConfig, action{Kind: actOpenConfig}}},
	}
}

// noTrayNotice says once that there is no tray to show tether in, and how
// to get one; the tray appears by itself once there is.
func noTrayNotice() notice {
	return notice{
		Key:     subjectTray + "/" + kindNoTray,
		Subject: subjectTray,
		Title:   "tether: no tray to show its icon in",
		Body: "The desktop has no system tray for tether's icon, so notices like this one are all you will see of it. " +
			"On GNOME, install and enable the AppIndicator extension (Debian and Ubuntu: gnome-shell-extension-appindicator); " +
			"on Xfce, add the Status Tray plugin to a panel. tether's icon appears as soon as there is a tray; it need not be restarted.",
		Icon: assets.Mark,
	}
}

// problemNotice reports something the tray could not do for the user.
func problemNotice(key, title, body string) notice {
	subject, _, _ := strings.Cut(key, "/")
	return notice{Key: key, Subject: "problem/" + subject, Title: title, Body: body, Icon: assets.Failed}
}

// infoNotice only informs.
func infoNotice(key, title, body string) notice {
	subject, _, _ := strings.Cut(key, "/")
	return notice{Key: key, Subject: "info/" + subject, Title: title, Body: body, Urgency: urgencyLow, Icon: assets.Mark}
}
