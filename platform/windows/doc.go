// Package windows will hold the Windows halves of tether's lifetime
// guarantees: the per-identity named mutex held by a pinned OS thread, the
// kill-on-close job object, and the user-only named pipe. Until it does,
// the guardian reports guardian.ErrUnsupported on Windows.
package windows
