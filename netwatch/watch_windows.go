package netwatch

import (
	"context"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The IP helper calls back on its own threads, with no Go value to carry
// through it: every callback tells every watcher, as each only looks
// again.
var (
	watchersMu sync.Mutex
	watchers   = map[*func()]struct{}{}
	callback   = sync.OnceValue(func() uintptr {
		return windows.NewCallback(func(ctx, row uintptr, kind uint32) uintptr {
			watchersMu.Lock()
			defer watchersMu.Unlock()
			for notify := range watchers {
				(*notify)()
			}
			return 0
		})
	})
)

// watch registers for the IP helper's interface and route change
// notifications, both families, and calls notify on each, until ctx is
// done.
func watch(ctx context.Context, notify func()) error {
	key := &notify
	watchersMu.Lock()
	watchers[key] = struct{}{}
	watchersMu.Unlock()
	var handles []windows.Handle
	cancel := func() {
		for _, h := range handles {
			windows.CancelMibChangeNotify2(h)
		}
		watchersMu.Lock()
		delete(watchers, key)
		watchersMu.Unlock()
	}
	for _, register := range []func(uint16, uintptr, unsafe.Pointer, bool, *windows.Handle) error{
		windows.NotifyIpInterfaceChange, windows.NotifyRouteChange2,
	} {
		var h windows.Handle
		if err := register(windows.AF_UNSPEC, callback(), nil, false, &h); err != nil {
			cancel()
			return err
		}
		handles = append(handles, h)
	}
	go func() {
		<-ctx.Done()
		cancel()
	}()
	return nil
}
