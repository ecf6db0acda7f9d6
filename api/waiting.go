package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/tether-dev/tether/platform"
)

// Waiting is an agent whose service died while it had
// survive_service_crash: its guardian keeps the tree and the identity
// until a relaunched service of its profile adopts it, or until Until,
// when it stops the tree. The command line and the tray show it in the
// state StateAdoptable while no service runs. It is the guardian's answer
// to a query (guardian.Waiting, which this package does not import), as
// the local API's types are the service's.
type Waiting struct {
	Identity    string    `json:"identity"`
	Profile     string    `json:"profile"`
	GuardianPID int       `json:"guardian_pid"`
	AgentPID    int       `json:"agent_pid"`
	Since       time.Time `json:"since"`    // the agent's start
	Orphaned    time.Time `json:"orphaned"` // its service's death
	Until       time.Time `json:"until"`
}

// AdoptDir is where guardians wait to be adopted, for the profiles whose
// sockets are beside socketPath: a guardian listens there on a socket
// per identity. Windows has none: its guardians wait on named pipes.
func AdoptDir(socketPath string) string { return filepath.Join(filepath.Dir(socketPath), "adopt") }

// WaitingToBeAdopted asks every guardian waiting in AdoptDir(socketPath)
// who it is, and returns those of profile (every profile when empty) by
// identity. A socket nobody answers on is skipped. On Windows it returns
// nothing: pipes are not listed.
func WaitingToBeAdopted(ctx context.Context, socketPath, profile string) ([]Waiting, error) {
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	socks, err := filepath.Glob(filepath.Join(AdoptDir(socketPath), "*.sock"))
	if err != nil {
		return nil, err
	}
	var out []Waiting
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

// queryWaiting asks the guardian at path: one line of the guardian
// protocol (version 2), "query", answered by "waiting".
func queryWaiting(ctx context.Context, path string) (Waiting, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := platform.Dial(ctx, path)
	if err != nil {
		return Waiting{}, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if p, err := platform.PeerOf(c); err == nil && p.User != fmt.Sprint(os.Geteuid()) && runtime.GOOS != "windows" {
		return Waiting{}, fmt.Errorf("%s is served by %s %s", path, platform.UserKind, p.User)
	}
	if _, err := c.Write([]byte(`{"type":"query","version":2}` + "\n")); err != nil {
		return Waiting{}, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return Waiting{}, err
	}
	var m struct {
		Type    string   `json:"type"`
		Waiting *Waiting `json:"waiting"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return Waiting{}, err
	}
	if m.Type != "waiting" || m.Waiting == nil {
		return Waiting{}, errors.New("not a waiting guardian")
	}
	return *m.Waiting, nil
}
