package gateway

import (
	"context"
	"encoding/json"
	"time"
)

// Bounds of the search for the leader: the member that just answered
// is asked on the request's path, briefly; the others in the
// background, and a member that has not answered its status by then is
// not the one to prefer.
const (
	askWithin  = 100 * time.Millisecond
	seekWithin = 2 * time.Second
)

// statusPath is where a member answers its own status.
const statusPath = "/v3/maintenance/status"

// headed is an answer that carries etcd's header.
type headed interface{ header() Header }

func (r *RangeResponse) header() Header          { return r.Header }
func (r *PutResponse) header() Header            { return r.Header }
func (r *TxnResponse) header() Header            { return r.Header }
func (r *LeaseGrantResponse) header() Header     { return r.Header }
func (r *LeaseKeepAliveResponse) header() Header { return r.Header }
func (r *StatusResponse) header() Header         { return r.Header }

// saw notes the header of an answer from endpoint i: a raft term other
// than the last one seen means an election since the leader was last
// looked for (or that it never was), so it is looked for again.
func (c *Client) saw(i int, h Header) {
	c.mu.Lock()
	changed := h.RaftTerm != 0 && h.RaftTerm != c.term
	if changed {
		c.term, c.leader = h.RaftTerm, -1
	}
	c.mu.Unlock()
	if changed && len(c.endpoints) > 1 {
		c.seekLeader(i, h.RaftTerm)
	}
}

// seekLeader finds the leader of term, and from then on sends requests
// to it first: a write sent to a follower waits for the follower to
// forward it and then to apply it, a round trip inside the cluster more
// than at the leader. It asks the member at endpoint i, which just
// answered, on the connection that answer left; when that member is not
// the leader, the others are asked in the background.
func (c *Client) seekLeader(i int, term uint64) {
	ctx, cancel := context.WithTimeout(c.ctx, askWithin)
	defer cancel()
	st := &StatusResponse{}
	if c.callAt(ctx, c.endpoints[i], statusPath, struct{}{}, st) != nil || st.Leader == 0 {
		c.forget(term)
		return
	}
	if st.Leader == st.Header.MemberID {
		c.lead(i, term)
		return
	}
	c.mu.Lock()
	if c.seeking || c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	c.seeking = true
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		j := c.find(i, st.Leader)
		c.mu.Lock()
		c.seeking = false
		c.mu.Unlock()
		if j >= 0 {
			c.lead(j, term)
		} else {
			c.forget(term)
		}
	}()
}

// forget makes the next answer look for the leader of term again: it
// was not found.
func (c *Client) forget(term uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.term == term {
		c.term = 0
	}
}

// lead takes endpoint i as the leader's, unless the term moved on while
// it was looked for.
func (c *Client) lead(i int, term uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.term == term {
		c.leader = i
	}
}

// find returns the index of the endpoint, other than skip, whose member
// is id; -1 when none says so within seekWithin.
func (c *Client) find(skip int, id uint64) int {
	ctx, cancel := context.WithTimeout(c.ctx, seekWithin)
	defer cancel()
	found := make(chan int, len(c.endpoints))
	asked := 0
	for j, ep := range c.endpoints {
		if j == skip {
			continue
		}
		asked++
		go func() {
			st := &StatusResponse{}
			if c.callAt(ctx, ep, statusPath, struct{}{}, st) == nil && st.Header.MemberID == id {
				found <- j
				return
			}
			found <- -1
		}()
	}
	at := -1
	for range asked {
		if j := <-found; j >= 0 {
			at = j
		}
	}
	return at
}

// callAt posts in to path on the member at endpoint alone and decodes
// the answer into out.
func (c *Client) callAt(ctx context.Context, endpoint, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	rc, err := c.try(ctx, endpoint, path, body)
	if err != nil {
		return err
	}
	return decode(rc, endpoint, path, out)
}
