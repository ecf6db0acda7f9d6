package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/tether-dev/tether/api"
)

// Upgrade asks the service to replace itself by req.Executable. An
// *Error with code upgrade says why it will not (the service keeps
// running as it was).
func (c *Client) Upgrade(ctx context.Context, req api.UpgradeRequest) (api.UpgradeAnswer, error) {
	var ans api.UpgradeAnswer
	body, err := json.Marshal(req)
	if err != nil {
		return ans, err
	}
	err = c.call(ctx, http.MethodPost, api.PathUpgrade, body, &ans)
	return ans, err
}
