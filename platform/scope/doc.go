// Package scope places the calling process in a transient scope unit of
// the user's systemd manager (org.freedesktop.systemd1's
// StartTransientUnit on the session bus, with Delegate=yes), the way
// "systemd-run --user --scope" does: the guardian's way to a cgroup of
// its own where the user may write none, and out of a service manager's
// unit that would kill its processes with it. It is a D-Bus client, kept
// out of platform/unix, the syscall layer, which it uses for the cgroup
// the scope gives. On macOS there is no user manager, and Enter fails
// with ErrNoUserManager.
package scope
