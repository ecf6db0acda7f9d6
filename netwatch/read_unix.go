//go:build linux || darwin

package netwatch

import (
	"context"
	"os"
)

// read calls notify for every message on f, a socket the kernel writes
// network changes to, until ctx is done or the socket fails; then it
// closes f.
func read(ctx context.Context, f *os.File, notify func()) error {
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		buf := make([]byte, 1<<16)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			notify()
		}
	}()
	return nil
}
