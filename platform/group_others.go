//go:build !unix

package platform

import "os/exec"

func isolateGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
