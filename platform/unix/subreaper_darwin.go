//go:build darwin

package unix

// BecomeSubreaper is a no-op where the OS has no child subreaper; the
// session scan then finds descendants that kept the session.
func BecomeSubreaper() (bool, error) { return false, nil }
