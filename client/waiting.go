package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// WaitingToBeAdopted asks every guardian waiting in
// wire.AdoptDir(socketPath) who it is, and returns those of profile
// (every profile when empty) by identity: agents whose service died while
// they had survive_service_crash, which the command line and the tray
// show in the state api.StateAdoptable while no service runs. A socket
// nobody answers on is skipped. On Windows it returns nothing: pipes are
// not listed.
func WaitingToBeAdopted(ctx context.Context, socketPath, profile string) ([]wire.Waiting, error) {
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	socks, err := filepath.Glob(filepath.Join(wire.AdoptDir(socketPath), "*.sock"))
	if err != nil {
		return nil, err
	}
	var out []wire.Waiting
	for _, s := range socks {
		w, err := queryWaiting(ctx, s)
		if err != nil || profile != "" && w.Profile != profile {
			continue
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Identity < out[j].Identity })
	return out, nil
}

// queryWaiting asks the guardian at path (wire.Query), once it is known
// to be this user's.
func queryWaiting(ctx context.Context, path string) (wire.Waiting, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := platform.Dial(ctx, path)
	if err != nil {
		return wire.Waiting{}, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if p, err := platform.PeerOf(c); err == nil && p.User != fmt.Sprint(os.Geteuid()) && runtime.GOOS != "windows" {
		return wire.Waiting{}, fmt.Errorf("%s is served by %s %s", path, platform.UserKind, p.User)
	}
	return wire.Query(c)
}
