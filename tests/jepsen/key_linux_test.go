package jepsen

import (
	"context"
	"sync"
	"time"

	"github.com/tether-dev/tether/internal/history"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// keyWatch is the test's own view of the identity's key in etcd: when
// each holder put it and when it went (deleted, or expired with its
// lease), on the monotonic clock. It splits a failover into etcd's part
// (the lease expiring) and tether's (the start that follows).
type keyWatch struct {
	cli    *clientv3.Client
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
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &keyWatch{cli: cli, cancel: cancel, done: make(chan struct{})}
	ch := cli.Watch(ctx, prefix, clientv3.WithPrefix())
	go func() {
		defer close(k.done)
		for r := range ch {
			at := history.Now()
			k.mu.Lock()
			for _, ev := range r.Events {
				k.events = append(k.events, keyEvent{at: at, gone: ev.Type == clientv3.EventTypeDelete})
			}
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
