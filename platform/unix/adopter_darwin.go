//go:build darwin

package unix

import (
	"errors"
	"time"
)

// Adopter would look after the orphans of a child subreaper; this system
// has no such thing, so orphans go to init and NewAdopter fails.
type Adopter struct{}

// NewAdopter fails: no child subreaper here.
func NewAdopter() (*Adopter, error) { return nil, errors.New("no child subreaper on this system") }

// Adopted is empty.
func (a *Adopter) Adopted() ([]Proc, error) { return nil, nil }

// Stop has nothing to stop.
func (a *Adopter) Stop(timeout, grace time.Duration, found func(Proc)) (StopReport, error) {
	return StopReport{}, nil
}

// Close does nothing.
func (a *Adopter) Close() {}

func adoptedProcs() ([]Proc, error) { return nil, nil }

func adoptedWalk() ([]Proc, error) { return nil, nil }
