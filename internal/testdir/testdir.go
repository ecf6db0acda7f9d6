//go:build !windows

// Package testdir is test support: a temporary directory for a test that
// is removed when the test ends, also where Go's own removal fails (Wine
// 8, which runs the Windows tests in CI). Only tests import it.
package testdir

import "testing"

// Temp is t.TempDir.
func Temp(t testing.TB) string { return t.TempDir() }
