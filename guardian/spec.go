package guardian

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-dev/tether/identity"
	"github.com/tether-dev/tether/logfile"
)

// DefaultStopTimeout is used when a Spec leaves StopTimeout zero.
const DefaultStopTimeout = 5 * time.Second

// Spec is what the owner asks a guardian to run.
type Spec struct {
	// Identity is the lock key: no two live trees share one.
	Identity string
	// Profile names the owner's profile; it is recorded for contention
	// answers.
	Profile string
	// Argv is the agent's command. Argv[0] is looked up in the PATH of
	// Env when it has no slash.
	Argv []string
	// Dir is the agent's working directory; empty means its private
	// directory.
	Dir string
	// Env is the agent's whole environment (the guardian adds TMPDIR,
	// TMP, TEMP, TETHER_PRIVATE_DIR and TETHER_IDENTITY). It travels on
	// the tether, never on argv.
	Env []string
	// StopTimeout is how long the tree gets between SIGTERM and SIGKILL.
	StopTimeout time.Duration
	// KillGrace is how long the kernel gets to finish a tree off after
	// SIGKILL before the tree counts as alive and the cleanup as failed;
	// zero means 2 s.
	KillGrace time.Duration
	// LockDir holds the per-user lock files (shared by every profile).
	LockDir string
	// PrivateRoot is where the private directory is created.
	PrivateRoot string
	// LogPath receives the agent's stdout and stderr (appended) and the
	// guardian's own lines. Empty discards them.
	LogPath string
	// Logs is how the log is written and rotated (the size of its
	// files, how many are kept, timestamps); nil: logfile.Default().
	Logs *logfile.Policy
	// NoCgroup turns cgroup containment off even where it is available.
	NoCgroup bool
	// Readiness, when set, says how the agent is found ready and kept
	// healthy (I8); nil: ready once spawned.
	Readiness *Readiness
	// SurviveCrash, when positive, keeps the tree for that long after
	// the owner dies (not after a stop), with the identity held, waiting
	// at AdoptPath (a unix socket path, or a pipe name on Windows) for an
	// owner of the same Profile to Adopt it. Zero: the tree goes down
	// with its owner (I2).
	SurviveCrash time.Duration
	AdoptPath    string
	// Agent and Fingerprint, opaque to the guardian, name the agent (the
	// service: its id) and what the owner asked to run (the service: its
	// config entry's Fingerprint). The guardian gives them back in Ready,
	// so that an owner that adopts the tree can tell whether it is the
	// one it would start now, and for which agent it was started.
	Agent       string
	Fingerprint string

	// Deadline, when not zero, is when the tree must be dead unless the
	// owner renews it (Session.Renew): the agent's identity is held
	// under a lease that may expire then. The guardian stops the tree at
	// Deadline less StopTimeout and wire.KillMargin, counted on its own
	// monotonic clock from when it read the request, so that SIGKILL
	// comes before the deadline.
	Deadline time.Time

	// Executable is the tether binary whose guardian to run (see
	// ProgramFor): the guardian's own executable beside it, else itself;
	// empty means os.Executable().
	Executable string
	// HandshakeTimeout bounds the wait for ready or failed; zero means
	// 10 s.
	HandshakeTimeout time.Duration
}

// validate checks the request the guardian received; every message names
// the offending field.
func (r *request) validate() error {
	if err := identity.Validate(r.Identity); err != nil {
		return err
	}
	if err := r.Readiness.validate(); err != nil {
		return err
	}
	if r.Reclaim {
		// Nothing is started: no command needed.
	} else if len(r.Argv) == 0 || r.Argv[0] == "" {
		return fmt.Errorf("argv: no command")
	}
	for i, a := range r.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argv[%d] contains a NUL byte", i)
		}
	}
	for i, e := range r.Env {
		if strings.IndexByte(e, 0) >= 0 || !strings.Contains(e, "=") {
			return fmt.Errorf("env[%d] is not KEY=VALUE without NUL bytes", i)
		}
	}
	if r.KillGrace < 0 {
		return fmt.Errorf("kill_grace %v: must not be negative", time.Duration(r.KillGrace))
	}
	if r.SurviveCrash < 0 {
		return fmt.Errorf("survive_crash %v: must not be negative", time.Duration(r.SurviveCrash))
	}
	if r.SurviveCrash > 0 && r.AdoptPath == "" {
		return fmt.Errorf("survive_crash %v: needs an adopt_path", time.Duration(r.SurviveCrash))
	}
	if r.Deadline != nil && *r.Deadline <= 0 {
		return fmt.Errorf("deadline %v: already passed", time.Duration(*r.Deadline))
	}
	if r.StopTimeout <= 0 {
		return fmt.Errorf("stop_timeout %v: must be positive", time.Duration(r.StopTimeout))
	}
	for _, p := range []struct{ name, path string }{
		{"lock_dir", r.LockDir}, {"private_root", r.PrivateRoot},
	} {
		if !filepath.IsAbs(p.path) || strings.IndexByte(p.path, 0) >= 0 {
			return fmt.Errorf("%s %q: must be an absolute path", p.name, p.path)
		}
	}
	if r.Logs != nil {
		if err := r.Logs.Validate(); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
	}
	for _, p := range []struct{ name, path string }{
		{"dir", r.Dir}, {"log_path", r.LogPath},
	} {
		if p.path != "" && (!filepath.IsAbs(p.path) || strings.IndexByte(p.path, 0) >= 0) {
			return fmt.Errorf("%s %q: must be an absolute path", p.name, p.path)
		}
	}
	return nil
}
