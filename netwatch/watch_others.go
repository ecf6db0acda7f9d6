//go:build !linux && !darwin && !windows

package netwatch

import (
	"context"
	"errors"
)

// watch: no signal of network changes is known here; callers re-check.
func watch(context.Context, func()) error {
	return errors.New("no signal of network changes on this system")
}
