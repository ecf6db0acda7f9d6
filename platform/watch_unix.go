//go:build unix

package platform

import punix "github.com/tether-dev/tether/platform/unix"

func watchRemovals(dir string) (DirWatch, error) {
	w, err := punix.WatchRemovals(dir)
	if err != nil {
		return nil, err
	}
	return w, nil
}
