//go:build windows

package platform

import (
	"errors"

	pwin "github.com/tether-dev/tether/platform/windows"
)

func treeUsage(t Tree) (Usage, error) {
	if t.Job == "" {
		return Usage{}, errors.New("the tree has no job object")
	}
	u, err := pwin.UsageOfJob(t.Job)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPU: u.CPU, Memory: u.Memory, Procs: u.Active, Source: UsageJob}, nil
}
