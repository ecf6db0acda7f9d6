package gateway

import "context"

// WatchRequest watches Key (or every key from Key up to RangeEnd) from
// StartRevision, or from now when it is zero.
type WatchRequest struct {
	Key           []byte `json:"key"`
	RangeEnd      []byte `json:"range_end,omitempty"`
	StartRevision int64  `json:"start_revision,omitempty,string"`
}

// WatchResponse is one message of a watch: its creation, events, or its
// end (Canceled, with CompactRevision when the revision watched from was
// compacted away).
type WatchResponse struct {
	Header          Header  `json:"header"`
	Created         bool    `json:"created"`
	Canceled        bool    `json:"canceled"`
	CompactRevision int64   `json:"compact_revision,string"`
	CancelReason    string  `json:"cancel_reason"`
	Events          []Event `json:"events"`
}

// Event is one change of a watched key.
type Event struct {
	Type string   `json:"type"` // "" for a put, "DELETE"
	Kv   KeyValue `json:"kv"`
}

// Deleted reports whether the event is the key's deletion (or its
// lease's expiry).
func (e Event) Deleted() bool { return e.Type == "DELETE" }

// Watch is an open watch stream.
type Watch struct {
	s *stream
}

// Watch opens a watch (POST /v3/watch, a stream that lasts until ctx
// ends, the Client is closed, the connection breaks or the member loses
// its leader). It returns once etcd created the watch.
func (c *Client) Watch(ctx context.Context, r WatchRequest) (*Watch, error) {
	in := struct {
		Create WatchRequest `json:"create_request"`
	}{r}
	s, err := c.stream(ctx, "/v3/watch", in)
	if err != nil {
		return nil, err
	}
	return &Watch{s: s}, nil
}

// Next is the watch's next message: an error when the stream ended, an
// *Error when etcd ended it (CodeUnavailable: the member lost its leader).
func (w *Watch) Next() (*WatchResponse, error) {
	out := &WatchResponse{}
	if err := w.s.next(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Close closes the stream.
func (w *Watch) Close() error { return w.s.close() }
