package service

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/wire"
)

// DefaultProfile is the profile used without --profile.
const DefaultProfile = "default"

// Paths are where one profile keeps its files.
type Paths struct {
	Profile     string
	Config      string // the config file (may not exist: the embedded default applies)
	ConfigSet   bool   // Config came from --config
	StateDir    string // per profile: state.json, logs/, private/, service.lock
	LockDir     string // per user, shared by every profile
	PrivateRoot string
	LogDir      string
	Socket      string
}

// ValidateProfile checks a profile name (see api.ValidateProfile).
func ValidateProfile(p string) error { return api.ValidateProfile(p) }

// ResolvePaths returns the paths of profile; configFlag, when not empty,
// overrides the config file.
func ResolvePaths(profile, configFlag string) (Paths, error) {
	if profile == "" {
		profile = DefaultProfile
	}
	if err := ValidateProfile(profile); err != nil {
		return Paths{}, err
	}
	base, err := stateBase()
	if err != nil {
		return Paths{}, err
	}
	p := Paths{
		Profile:  profile,
		StateDir: filepath.Join(base, profile),
		LockDir:  filepath.Join(base, "locks"),
	}
	p.PrivateRoot = filepath.Join(p.StateDir, "private")
	p.LogDir = filepath.Join(p.StateDir, "logs")
	if configFlag != "" {
		if p.Config, err = filepath.Abs(configFlag); err != nil {
			return Paths{}, err
		}
		p.ConfigSet = true
	} else if p.Config, err = config.DefaultPath(); err != nil {
		return Paths{}, err
	}
	if p.Socket, err = api.SocketPath(profile); err != nil {
		return Paths{}, err
	}
	return p, nil
}

// stateBase is tether's state directory: $XDG_STATE_HOME/tether on Linux,
// the platform's per-user application data directory elsewhere.
func stateBase() (string, error) {
	switch runtime.GOOS {
	case "linux":
		if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
			return filepath.Join(d, "tether"), nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, ".local", "state", "tether"), nil
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "tether"), nil
		}
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tether", "state"), nil
}

// LogPath is the log file of agent id.
func (p Paths) LogPath(id string) string { return filepath.Join(p.LogDir, id+".log") }

// NotifyDir is where guardians make the $NOTIFY_SOCKET of ready: notify
// agents: beside the API socket, in the user's runtime directory, whose
// short path fits a unix socket's limit.
func (p Paths) NotifyDir() string { return filepath.Join(filepath.Dir(p.Socket), "notify") }

// AdoptPath is where the guardian of identity waits to be adopted after
// the service died, when its agent has survive_service_crash: a socket
// beside the API's, per identity and not per profile (an identity is held
// once, whatever the profile), or a named pipe of the user on Windows.
func (p Paths) AdoptPath(identity string) string {
	key := guardian.Key(identity)
	if runtime.GOOS == "windows" {
		// '@' is in no user's part of a pipe name (api.SocketPath).
		return strings.TrimSuffix(p.Socket, "-"+p.Profile) + "@adopt-" + key
	}
	return filepath.Join(wire.AdoptDir(p.Socket), key+".sock")
}

// adoptSockets lists the sockets at which guardians of the user may wait
// to be adopted (see AdoptPath), of every profile. Windows has none to
// list: its guardians wait on named pipes.
func (p Paths) adoptSockets() []string {
	if runtime.GOOS == "windows" || p.Socket == "" {
		return nil
	}
	socks, _ := filepath.Glob(filepath.Join(wire.AdoptDir(p.Socket), "*.sock"))
	return socks
}
