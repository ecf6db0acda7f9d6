package jepsen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// tether is the binary every host runs, with tether-guardian beside it.
var tether string

func TestMain(m *testing.M) {
	var dir string
	testproc.Main(m,
		// An agent may outlive a short run of its test only by this
		// much: a long schedule keeps one agent up for minutes.
		testproc.HelperLife(20*time.Minute),
		// Every host, guardian and agent is waited for and gone when
		// the tests end, or the run fails naming what was left.
		testproc.Sweep(),
		// A host that dies whole leaves its agents and guardians
		// orphaned: as a subreaper this process adopts them (instead of
		// PID 1, which may not reap), and the test reaps them.
		testproc.Before(func() error {
			_, err := punix.BecomeSubreaper()
			return err
		}),
		testproc.Before(func() (err error) {
			if dir, err = os.MkdirTemp("", "tether-jepsen-"); err != nil {
				return err
			}
			tether = filepath.Join(dir, "tether")
			for _, b := range [][2]string{{tether, "github.com/tether-dev/tether"}, {filepath.Join(dir, "tether-guardian"), "github.com/tether-dev/tether/guardian/cmd/tether-guardian"}} {
				build := exec.Command("go", "build", "-o", b[0], b[1])
				build.Stdout, build.Stderr = os.Stderr, os.Stderr
				if err := build.Run(); err != nil {
					return fmt.Errorf("building %s: %w", filepath.Base(b[0]), err)
				}
			}
			return nil
		}),
		testproc.After(func() {
			if dir != "" {
				os.RemoveAll(dir)
			}
		}))
}
