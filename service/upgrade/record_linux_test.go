package upgrade

import (
	"os"
	"strconv"
	"testing"

	"github.com/tether-dev/tether/api"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// A record in memory, as an upgrade on Linux hands it over, reads back
// as written, and its descriptor is closed once it is read: no child of
// the successor inherits it.
func TestHandoverRecordInMemory(t *testing.T) {
	rec := &Record{Version: Version, PID: os.Getpid(), Profile: "p",
		Config: Config{Path: "agents.yaml", Source: []byte("agents: []\n")},
		Agents: []Agent{{ID: "a", Row: api.Agent{ID: "a", State: api.StateStopped}}}}
	b, err := encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := punix.NewMemFile(fileName, b)
	if err != nil {
		t.Fatal(err)
	}
	// Its own descriptor: the one f has is closed by the read.
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	path := "/proc/self/fd/" + strconv.Itoa(fd)
	got, agents, err := Read(path, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := got.DecodeAgents(agents); err != nil || len(got.Agents) != 1 || got.Agents[0].ID != "a" || got.Version != Version {
		t.Errorf("read back %+v, %v", got, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		unix.Close(fd)
		t.Errorf("descriptor %d after the read: %v, want it closed", fd, err)
	}
}
