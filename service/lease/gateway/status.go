package gateway

import "context"

// StatusResponse is a member's status: its id is Header.MemberID.
type StatusResponse struct {
	Header  Header `json:"header"`
	Leader  uint64 `json:"leader,string"`
	Version string `json:"version"`
}

// Status is the status of the member that answers (POST
// /v3/maintenance/status): a Client of one endpoint asks that member.
func (c *Client) Status(ctx context.Context) (*StatusResponse, error) {
	out := &StatusResponse{}
	if err := c.call(ctx, statusPath, struct{}{}, out); err != nil {
		return nil, err
	}
	return out, nil
}
