// Package power tells when the machine suspends and resumes, from the
// OS's own announcement (logind's PrepareForSleep on Linux). The tray holds
// notices across a suspend with it, and the service wakes its waiting
// agents after a resume. It owns no agent and knows nothing of tether.
package power
