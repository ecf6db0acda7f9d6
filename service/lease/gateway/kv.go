package gateway

import "context"

// Header is the header of every answer: int64s and uint64s travel as
// JSON strings, keys and values as base64.
type Header struct {
	ClusterID uint64 `json:"cluster_id,string"`
	MemberID  uint64 `json:"member_id,string"`
	Revision  int64  `json:"revision,string"`
	RaftTerm  uint64 `json:"raft_term,string"`
}

// KeyValue is a key as etcd stores it.
type KeyValue struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
	Version        int64  `json:"version,string"`
	Lease          int64  `json:"lease,string"`
}

// RangeRequest reads Key, or every key from Key up to RangeEnd.
type RangeRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
}

// RangeResponse is what a range read.
type RangeResponse struct {
	Header Header     `json:"header"`
	Kvs    []KeyValue `json:"kvs"`
	Count  int64      `json:"count,string"`
}

// PutRequest writes Key, bound to Lease when not zero.
type PutRequest struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
	Lease int64  `json:"lease,omitempty,string"`
}

// PutResponse is a put's answer.
type PutResponse struct {
	Header Header `json:"header"`
}

// DeleteRangeRequest deletes Key.
type DeleteRangeRequest struct {
	Key []byte `json:"key"`
}

// DeleteRangeResponse is a delete's answer.
type DeleteRangeResponse struct {
	Header  Header `json:"header"`
	Deleted int64  `json:"deleted,string"`
}

// Compare is a transaction's condition on a key. Build it with
// CreateRevisionIs or LeaseIs.
type Compare struct {
	Result         string `json:"result"`
	Target         string `json:"target"`
	Key            []byte `json:"key"`
	CreateRevision *int64 `json:"create_revision,omitempty,string"`
	Lease          *int64 `json:"lease,omitempty,string"`
}

// CreateRevisionIs holds when key was created at rev; 0 is a key that
// does not exist.
func CreateRevisionIs(key []byte, rev int64) Compare {
	return Compare{Result: "EQUAL", Target: "CREATE", Key: key, CreateRevision: &rev}
}

// LeaseIs holds when key is bound to lease id.
func LeaseIs(key []byte, id int64) Compare {
	return Compare{Result: "EQUAL", Target: "LEASE", Key: key, Lease: &id}
}

// RequestOp is one operation of a transaction: set one field.
type RequestOp struct {
	Range       *RangeRequest       `json:"request_range,omitempty"`
	Put         *PutRequest         `json:"request_put,omitempty"`
	DeleteRange *DeleteRangeRequest `json:"request_delete_range,omitempty"`
}

// ResponseOp is the answer to a RequestOp: the field of its kind is set.
type ResponseOp struct {
	Range       *RangeResponse       `json:"response_range,omitempty"`
	Put         *PutResponse         `json:"response_put,omitempty"`
	DeleteRange *DeleteRangeResponse `json:"response_delete_range,omitempty"`
}

// TxnRequest runs Success if every Compare holds, else Failure, at once.
type TxnRequest struct {
	Compare []Compare   `json:"compare"`
	Success []RequestOp `json:"success,omitempty"`
	Failure []RequestOp `json:"failure,omitempty"`
}

// TxnResponse is a transaction's answer: Responses are those of the
// branch that ran.
type TxnResponse struct {
	Header    Header       `json:"header"`
	Succeeded bool         `json:"succeeded"`
	Responses []ResponseOp `json:"responses"`
}

// Range reads keys (POST /v3/kv/range), linearizably.
func (c *Client) Range(ctx context.Context, r RangeRequest) (*RangeResponse, error) {
	out := &RangeResponse{}
	if err := c.call(ctx, "/v3/kv/range", r, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Put writes a key (POST /v3/kv/put).
func (c *Client) Put(ctx context.Context, r PutRequest) (*PutResponse, error) {
	out := &PutResponse{}
	if err := c.call(ctx, "/v3/kv/put", r, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Txn runs a transaction (POST /v3/kv/txn).
func (c *Client) Txn(ctx context.Context, r TxnRequest) (*TxnResponse, error) {
	out := &TxnResponse{}
	if err := c.call(ctx, "/v3/kv/txn", r, out); err != nil {
		return nil, err
	}
	return out, nil
}
