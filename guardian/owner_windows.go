package guardian

import (
	"context"
	"fmt"
)

// Start reports that the Windows guardian is not part of this build yet.
func Start(ctx context.Context, spec Spec) (*Session, error) {
	return nil, fmt.Errorf("starting guardian for %q: %w", spec.Identity, ErrUnsupported)
}

// Reclaim reports that the Windows guardian is not part of this build yet.
func Reclaim(ctx context.Context, spec Spec) error {
	return fmt.Errorf("reclaiming %q: %w", spec.Identity, ErrUnsupported)
}
