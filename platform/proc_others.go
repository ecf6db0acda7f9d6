//go:build !unix && !windows

package platform

import "os"

type ref struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func self() Ref { return Ref{Pid: os.Getpid()} }

// alive cannot tell, so it says no.
func alive(Ref) bool { return false }
