package wire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// Waiting is what a guardian waiting to be adopted says of itself: its
// service died while the agent had survive_service_crash, and the
// guardian keeps the tree and the identity until a relaunched service of
// its profile adopts it, or until Until, when it stops the tree. The
// command line and the tray show it in the state adoptable while no
// service runs.
type Waiting struct {
	Identity    string    `json:"identity"`
	Profile     string    `json:"profile"`
	GuardianPID int       `json:"guardian_pid"`
	AgentPID    int       `json:"agent_pid"`
	Since       time.Time `json:"since"` // the agent's start
	Orphaned    time.Time `json:"orphaned"`
	Until       time.Time `json:"until"` // the tree is stopped then unless adopted
}

// AdoptDir is where guardians wait to be adopted, for the profiles whose
// API sockets are beside socketPath: a guardian listens there on a
// socket per identity. Windows has none: its guardians wait on named
// pipes.
func AdoptDir(socketPath string) string { return filepath.Join(filepath.Dir(socketPath), "adopt") }

// maxAnswer bounds the waiting answer Query reads.
const maxAnswer = 64 << 10

// Query asks the waiting guardian at the other end of conn who it is:
// it writes a query line and reads the waiting answer. The caller dials
// conn, checks who serves it and bounds the exchange with a deadline.
func Query(conn io.ReadWriter) (Waiting, error) {
	q, err := json.Marshal(struct {
		Type    MsgType   `json:"type"`
		Version int       `json:"version"`
		Time    time.Time `json:"time"`
	}{MsgQuery, Version, time.Now().UTC()})
	if err != nil {
		return Waiting{}, err
	}
	if _, err := conn.Write(append(q, '\n')); err != nil {
		return Waiting{}, err
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxAnswer)).ReadBytes('\n')
	if err != nil {
		return Waiting{}, err
	}
	var m struct {
		Type    MsgType  `json:"type"`
		Waiting *Waiting `json:"waiting"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return Waiting{}, err
	}
	if m.Type != MsgWaiting || m.Waiting == nil {
		return Waiting{}, fmt.Errorf("not a waiting guardian: answer %q", m.Type)
	}
	return *m.Waiting, nil
}
