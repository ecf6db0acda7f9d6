//go:build !unix && !windows

package platform

func watchWrites(dir string) (WriteWatch, error) {
	return nil, unsupported("watching " + dir + " for writes")
}
