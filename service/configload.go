package service

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/tether-dev/tether/service/config"
)

// DefaultConfigName stands for the embedded default config in messages.
const DefaultConfigName = "<embedded default config>"

// loadConfig loads the profile's config. Without a config file, and
// without --config, the embedded default (one demo agent) applies.
func loadConfig(p Paths) (*config.Config, error) {
	cfg, err := config.Load(p.Config)
	if err == nil {
		return cfg, nil
	}
	if errors.Is(err, fs.ErrNotExist) && !p.ConfigSet {
		cfg, err := config.Parse(DefaultConfigName, config.Default())
		if cfg != nil {
			cfg.Path = DefaultConfigName
		}
		return cfg, err
	}
	return nil, fmt.Errorf("config: %w", err)
}

// LoadConfig is loadConfig for the command line's "check".
func LoadConfig(p Paths) (*config.Config, error) { return loadConfig(p) }
