// Package platform is the portable face of tether's two OS halves: lock
// files, user-only directories and files, the local socket or pipe and
// the identity of its peer, process references, what a process tree
// costs (TreeUsage: a cgroup's or a job's accounting, else the sum over
// its processes), the watch of writes to a directory's files, and the
// notifications a service manager listens for (ServiceManager). Each
// operation is documented here once, under one name, and forwards by build
// tag to platform/unix or platform/windows, which implement it. Tether
// builds for Linux, macOS and Windows only; supported.go stops a build
// for any other system.
//
// Callers (guardian, service, api, demo, internal/testdir) name these
// operations through this package only. What has no portable meaning
// (sessions, cgroups, process scans and the reaper on Unix; named
// mutexes, job objects and inherited handles on Windows) stays in the
// halves, which only the guardian's and the service's per-OS files (the
// service's for its orphans and the handover of an upgrade), the Unix-only
// demo and tests import, always as punix and pwin.
//
// It knows nothing of identities, owners or protocols, and imports
// nothing of tether's but the halves.
package platform
