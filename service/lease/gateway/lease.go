package gateway

import (
	"context"
	"io"
)

// LeaseGrantResponse is a granted lease: its id and ttl in seconds.
type LeaseGrantResponse struct {
	Header Header `json:"header"`
	ID     int64  `json:"ID,string"`
	TTL    int64  `json:"TTL,string"`
}

// LeaseKeepAliveResponse is a renewal's answer: the lease's ttl from now
// in seconds, 0 for a lease etcd does not know (expired or revoked).
type LeaseKeepAliveResponse struct {
	Header Header `json:"header"`
	ID     int64  `json:"ID,string"`
	TTL    int64  `json:"TTL,string"`
}

type leaseID struct {
	ID int64 `json:"ID,string"`
}

// Grant grants a lease of ttl seconds (POST /v3/lease/grant).
func (c *Client) Grant(ctx context.Context, ttl int64) (*LeaseGrantResponse, error) {
	out := &LeaseGrantResponse{}
	in := struct {
		TTL int64 `json:"TTL,string"`
	}{ttl}
	if err := c.call(ctx, "/v3/lease/grant", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// KeepAliveOnce renews lease id once (POST /v3/lease/keepalive, a stream
// of one renewal whose answer is the stream's first result).
func (c *Client) KeepAliveOnce(ctx context.Context, id int64) (*LeaseKeepAliveResponse, error) {
	s, err := c.stream(ctx, "/v3/lease/keepalive", leaseID{id})
	if err != nil {
		return nil, err
	}
	out := &LeaseKeepAliveResponse{}
	if err := s.next(out); err != nil {
		s.close()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	// etcd ends the stream once it has answered the one renewal sent.
	s.finish()
	c.saw(s.at, out.Header)
	return out, nil
}

// Revoke revokes lease id, deleting every key bound to it (POST
// /v3/lease/revoke). A lease etcd does not know is an *Error of
// CodeNotFound.
func (c *Client) Revoke(ctx context.Context, id int64) error {
	var out struct {
		Header Header `json:"header"`
	}
	return c.call(ctx, "/v3/lease/revoke", leaseID{id}, &out)
}
