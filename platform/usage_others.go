//go:build !unix && !windows

package platform

func treeUsage(Tree) (Usage, error) { return Usage{}, unsupported("process trees") }
