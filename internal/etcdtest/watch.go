//go:build linux

package etcdtest

import (
	"context"
	"time"

	"github.com/tether-dev/tether/service/lease/gateway"
)

// rewatchAfter is the pause before a watch that broke is opened again.
const rewatchAfter = 100 * time.Millisecond

// Watch sends every change of key (of every key under it, with prefix)
// from now on, through cli, until ctx ends; then it closes the channel.
// A watch that breaks (a member killed, quorum lost) is opened again,
// on any member, from the revision after the last change it sent, so
// that no change is missed.
func Watch(ctx context.Context, cli *gateway.Client, key string, prefix bool) <-chan gateway.Event {
	out := make(chan gateway.Event)
	req := gateway.WatchRequest{Key: []byte(key)}
	if prefix {
		req.RangeEnd = prefixEnd(req.Key)
	}
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			if !watchOnce(ctx, cli, &req, out) {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(rewatchAfter):
			}
		}
	}()
	return out
}

// watchOnce runs one watch stream of req, sending its events to out and
// moving req's start past each, until the stream ends; it returns false
// when ctx ended.
func watchOnce(ctx context.Context, cli *gateway.Client, req *gateway.WatchRequest, out chan<- gateway.Event) bool {
	w, err := cli.Watch(ctx, *req)
	if err != nil {
		return ctx.Err() == nil
	}
	defer w.Close()
	for {
		r, err := w.Next()
		if err != nil {
			return ctx.Err() == nil
		}
		if r.Created && req.StartRevision == 0 {
			// From now: every later change is above this revision.
			req.StartRevision = r.Header.Revision + 1
		}
		for _, ev := range r.Events {
			select {
			case out <- ev:
			case <-ctx.Done():
				return false
			}
			req.StartRevision = ev.Kv.ModRevision + 1
		}
		if r.Canceled {
			if r.CompactRevision != 0 {
				req.StartRevision = r.CompactRevision // what is left of the history
			}
			return ctx.Err() == nil
		}
	}
}

// prefixEnd is the end of the range of every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key from p on
}
