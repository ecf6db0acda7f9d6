//go:build windows

package testproc

// processes finds nothing here: the sweep is for Linux and macOS, where
// the tests that start process trees run.
func processes() ([]proc, error) { return nil, nil }

func (p proc) kill() {}
