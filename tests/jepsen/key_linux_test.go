package jepsen

import (
	"context"
	"sync"

	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/history"
	"github.com/tether-dev/tether/service/lease/gateway"
)

// keyWatch is the test's own view of the identity's key in etcd: when
// each holder put it and when it went (deleted, or expired with its
// lease), on the monotonic clock. It splits a failover into etcd's part
// (the lease expiring) and tether's (the start that follows).
type keyWatch struct {
	cli    *gateway.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []keyEvent
}

// keyEvent is one change of the key.
type keyEvent struct {
	at   int64
	gone bool
}

// watchKeys watches every key under prefix through a client of the whole
// cluster at endpoints.
func watchKeys(endpoints []string, prefix string) (*keyWatch, error) {
	cli, err := gateway.New(endpoints, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &keyWatch{cli: cli, cancel: cancel, done: make(chan struct{})}
	ch := etcdtest.Watch(ctx, cli, prefix, true)
	go func() {
		defer close(k.done)
		for ev := range ch {
			at := history.Now()
			k.mu.Lock()
			k.events = append(k.events, keyEvent{at: at, gone: ev.Deleted()})
			k.mu.Unlock()
		}
	}()
	return k, nil
}

// goneAfter is when the key first went after the monotonic time t, and
// whether it did.
func (k *keyWatch) goneAfter(t int64) (int64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ev := range k.events {
		if ev.gone && ev.at > t {
			return ev.at, true
		}
	}
	return 0, false
}

func (k *keyWatch) close() {
	k.cancel()
	<-k.done
	k.cli.Close()
}
