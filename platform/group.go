package platform

import "os/exec"

// IsolateGroup makes cmd, not yet started, the leader of a process group
// of its own, and the kill of its context (cmd.Cancel) a kill of that
// whole group, so that what it forks goes with it; KillGroup kills what
// is left of the group once cmd has been waited for. Windows has no
// group to kill: there both kill cmd's process alone.
func IsolateGroup(cmd *exec.Cmd) { isolateGroup(cmd) }

// KillGroup kills what is left of the group of cmd, started with
// IsolateGroup and waited for.
func KillGroup(cmd *exec.Cmd) { killGroup(cmd) }
