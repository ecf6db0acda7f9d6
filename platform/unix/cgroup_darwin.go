//go:build darwin

package unix

import (
	"errors"
	"syscall"
)

// Cgroup is only available on Linux; elsewhere no value of it exists.
type Cgroup struct {
	Path string
}

// ErrNoCgroup reports that no writable cgroup v2 hierarchy is available.
var ErrNoCgroup = errors.New("no writable cgroup v2")

// OwnCgroupDir always fails outside Linux.
func OwnCgroupDir() (string, error) { return "", ErrNoCgroup }

// NewCgroup always fails outside Linux.
func NewCgroup(name string) (*Cgroup, error) { return nil, ErrNoCgroup }

// NewCgroupIn always fails outside Linux.
func NewCgroupIn(dir, name string) (*Cgroup, error) { return nil, ErrNoCgroup }

// OpenCgroup always fails outside Linux.
func OpenCgroup(path string) (*Cgroup, error) { return nil, ErrNoCgroup }

func (c *Cgroup) apply(attr *syscall.SysProcAttr) error { return nil }

// CloseSpawnFD does nothing outside Linux.
func (c *Cgroup) CloseSpawnFD() {}

// Pids is empty outside Linux.
func (c *Cgroup) Pids() ([]int, error) { return nil, nil }

// Kill fails outside Linux.
func (c *Cgroup) Kill() error { return ErrNoCgroup }

// Remove does nothing outside Linux.
func (c *Cgroup) Remove() error { return nil }

// Populated is false outside Linux.
func (c *Cgroup) Populated() (bool, error) { return false, ErrNoCgroup }

func (c *Cgroup) ownPids() ([]int, error) { return nil, nil }
