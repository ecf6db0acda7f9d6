package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/logfile"
	"github.com/tether-dev/tether/service"
)

const (
	// defaultLogLines is -n's default; sinceLogLines is the tail asked
	// for with --since and no -n: as many as the service gives.
	defaultLogLines = 50
	sinceLogLines   = 10000
	// mergeWait is how long a followed line of several agents' waits
	// at most before it is printed, so that the lines, which come on
	// each agent's own pace, are printed in the order of their times. A
	// line waits less once every agent has sent a later one.
	mergeWait = time.Second
)

// logsUsage is the usage line of tether logs.
const logsUsage = "usage: tether logs ID...|--all [-f] [-n N] [--since D] [--json]"

// logsOptions is what tether logs was asked.
type logsOptions struct {
	ids    []string
	all    bool
	follow bool
	n      int
	since  time.Time // zero: no filter
	json   bool
}

// parseLogs reads the arguments of tether logs: ids and flags in any order.
func (inv *invocation) parseLogs(args []string) (logsOptions, error) {
	fs := newFlags("logs", inv)
	follow := fs.Bool("f", false, "follow")
	n := fs.Int("n", defaultLogLines, "lines")
	since := fs.Duration("since", 0, "only lines of the last D")
	asJSON := fs.Bool("json", false, "one JSON object a line")
	all := fs.Bool("all", false, "every agent")
	var o logsOptions
	for {
		if err := parseFlags(fs, args); err != nil {
			return o, err
		}
		if fs.NArg() == 0 {
			break
		}
		o.ids = append(o.ids, fs.Arg(0))
		args = fs.Args()[1:]
	}
	nSet := false
	fs.Visit(func(f *flag.Flag) { nSet = nSet || f.Name == "n" })
	o.all, o.follow, o.n, o.json = *all, *follow, *n, *asJSON
	switch {
	case *n < 0 || *since < 0:
		return o, errors.New(logsUsage)
	case o.all == (len(o.ids) > 0):
		return o, errors.New(logsUsage)
	}
	if *since > 0 {
		o.since = time.Now().Add(-*since)
		if !nSet {
			o.n = sinceLogLines
		}
	}
	return o, nil
}

func (inv *invocation) logs(args []string) int {
	o, err := inv.parseLogs(args)
	if err != nil {
		return inv.commandUsage(err, logsUsage)
	}
	c, p, err := inv.client()
	if err != nil {
		return inv.fail("%v", err)
	}
	if o.all {
		if o.ids = inv.serviceIDs(c); len(o.ids) == 0 {
			return inv.fail("tether logs --all: the service has no agents")
		}
	}
	pr := inv.logPrinter(o)
	if o.follow {
		// The tail and the follow come from one point in each file.
		return inv.followLogs(c, p, o, pr)
	}
	if o.n == 0 {
		return ExitOK
	}
	queues := make([][]logEntry, len(o.ids))
	for i, id := range o.ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lg, err := c.Logs(ctx, id, o.n)
		cancel()
		if ae, ok := errors.AsType[*api.Error](err); ok && ae.Code == api.CodeNotFound {
			ae.Message += didYouMean(id, inv.serviceIDs(c))
		}
		if err != nil {
			return inv.apiFailure(p, err)
		}
		for _, l := range lg.Lines {
			queues[i] = append(queues[i], parseEntry(id, l, time.Time{}))
		}
	}
	merged := mergeEntries(queues)
	merged = merged[max(len(merged)-o.n, 0):]
	for _, e := range merged {
		pr.print(e)
	}
	return ExitOK
}

// followLogs prints the last lines of the agents' logs and then each new
// line as the service streams it, in the order of their times, until
// interrupted. A stream the service ends (it quit, or this reader fell
// too far behind) is an error: the output would otherwise stop without a
// word.
func (inv *invocation) followLogs(c *client.Client, p service.Paths, o logsOptions, pr *logPrinter) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := c.FollowLogs(ctx, o.n, o.ids...)
	if err != nil {
		return inv.apiFailure(p, err)
	}
	type item struct {
		ev  api.Event
		err error
	}
	ch := make(chan item, 256)
	go func() {
		defer close(ch)
		for ev, err := range events {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	index := map[string]int{}
	for i, id := range o.ids {
		index[id] = i
	}
	queues := make([][]logEntry, len(o.ids))
	latest := make([]time.Time, len(o.ids)) // each agent's last line's key
	// flush prints the lines up to cutoff: mergeWait ago, or the
	// earliest of the agents' latest lines when that is later.
	flush := func(now time.Time) {
		cutoff := now.Add(-mergeWait)
		if len(o.ids) == 1 {
			cutoff = now
		} else if m := slices.MinFunc(latest, time.Time.Compare); m.After(cutoff) {
			cutoff = m
		}
		ready := make([][]logEntry, len(queues))
		for i, q := range queues {
			k := 0
			for k < len(q) && !q[k].key().After(cutoff) {
				k++
			}
			ready[i], queues[i] = q[:k], q[k:]
		}
		for _, e := range mergeEntries(ready) {
			pr.print(e)
		}
	}
	tick := time.NewTicker(mergeWait / 3)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			flush(time.Now())
		case it, ok := <-ch:
			if !ok {
				flush(time.Now().Add(mergeWait))
				return ExitOK
			}
			if it.err != nil {
				flush(time.Now().Add(mergeWait))
				if errors.Is(it.err, client.ErrStreamClosed) {
					fmt.Fprintf(inv.stderr, "tether logs: the service ended the stream (%v)\n", it.err)
					return ExitFailure
				}
				return inv.apiFailure(p, it.err)
			}
			if i, ok := index[it.ev.ID]; ok && it.ev.Type == api.EventLog {
				e := parseEntry(it.ev.ID, it.ev.Line, time.Now())
				queues[i] = append(queues[i], e)
				latest[i] = e.key()
				if len(o.ids) == 1 {
					flush(e.got)
				}
			}
		}
	}
}

// logEntry is one line of an agent's log, as tether logs prints it.
type logEntry struct {
	id   string
	raw  string
	line logfile.Line
	own  bool      // a line of the guardian's own
	got  time.Time // when it came (follow), for the wait before printing
}

func parseEntry(id, raw string, got time.Time) logEntry {
	e := logEntry{id: id, raw: raw, line: logfile.Parse([]byte(raw)), got: got}
	if msg, ok := logline.Message(raw); ok {
		e.own, e.line.Text = true, msg
	}
	return e
}

// key is the time a line is ordered by: its own, else (a log without
// timestamps) when it came.
func (e logEntry) key() time.Time {
	if !e.line.Time.IsZero() {
		return e.line.Time
	}
	return e.got
}

// mergeEntries merges the agents' lines in the order of their times,
// keeping each agent's lines in the order of its log: a line without a
// time goes with the line before it.
func mergeEntries(queues [][]logEntry) []logEntry {
	var out []logEntry
	last := make([]time.Time, len(queues))
	for {
		best := -1
		var bestKey time.Time
		for i, q := range queues {
			if len(q) == 0 {
				continue
			}
			k := q[0].key()
			if k.IsZero() {
				k = last[i]
			}
			if best < 0 || k.Before(bestKey) {
				best, bestKey = i, k
			}
		}
		if best < 0 {
			return out
		}
		last[best] = bestKey
		out = append(out, queues[best][0])
		queues[best] = queues[best][1:]
	}
}

// logPrinter prints log lines: as they are for one agent, after an
// "id |" prefix for several (coloured on a terminal unless NO_COLOR is
// set), or as JSON objects.
type logPrinter struct {
	w      io.Writer
	since  time.Time
	json   bool
	prefix map[string]string // by id; nil: none
}

// logColours are the prefixes' colours, one an agent in turn.
var logColours = []string{"36", "33", "35", "32", "34", "31"}

func (inv *invocation) logPrinter(o logsOptions) *logPrinter {
	pr := &logPrinter{w: inv.stdout, since: o.since, json: o.json}
	if o.json || (len(o.ids) == 1 && !o.all) {
		return pr
	}
	width := 0
	for _, id := range o.ids {
		width = max(width, len(id))
	}
	f, isFile := inv.stdout.(*os.File)
	colour := isFile && term.IsTerminal(f.Fd()) && os.Getenv("NO_COLOR") == ""
	pr.prefix = map[string]string{}
	for i, id := range o.ids {
		p := id + strings.Repeat(" ", width-len(id)) + " |"
		if colour {
			p = "\x1b[" + logColours[i%len(logColours)] + "m" + p + "\x1b[0m"
		}
		pr.prefix[id] = p + " "
	}
	return pr
}

// logJSON is a line of tether logs --json.
type logJSON struct {
	Time   *time.Time `json:"time,omitempty"`
	Agent  string     `json:"agent"`
	Stream string     `json:"stream"`
	Text   string     `json:"text"`
}

// guardianStream is the stream of the guardian's own lines in --json.
const guardianStream = "guardian"

func (pr *logPrinter) print(e logEntry) {
	if !pr.since.IsZero() && !e.line.Time.IsZero() && e.line.Time.Before(pr.since) {
		return
	}
	if pr.json {
		j := logJSON{Agent: e.id, Stream: e.line.Stream.String(), Text: e.line.Text}
		if e.own {
			j.Stream = guardianStream
		}
		if !e.line.Time.IsZero() {
			t := e.line.Time.UTC()
			j.Time = &t
		}
		b, _ := json.Marshal(j)
		fmt.Fprintf(pr.w, "%s\n", b)
		return
	}
	fmt.Fprintf(pr.w, "%s%s\n", pr.prefix[e.id], e.raw)
}
