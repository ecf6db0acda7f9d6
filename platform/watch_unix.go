//go:build unix

package platform

import punix "github.com/tether-dev/tether/platform/unix"

func watchWrites(dir string) (WriteWatch, error) {
	w, err := punix.WatchWrites(dir)
	if err != nil {
		return nil, err
	}
	return w, nil
}
