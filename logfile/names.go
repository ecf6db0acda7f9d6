package logfile

import (
	"os"
	"strconv"
)

// Rotated is the name of the n-th rotated file of the log at path:
// <path>.1 is the newest, <path>.<keep> the oldest; Rotated(path, 0) is
// path itself, the file being written.
func Rotated(path string, n int) string {
	if n == 0 {
		return path
	}
	return path + "." + strconv.Itoa(n)
}

// Files returns the log's files that exist, oldest first, the file being
// written last: the order of their lines. It stops at the first number
// missing.
func Files(path string) []string {
	var older []string
	for n := 1; ; n++ {
		p := Rotated(path, n)
		if _, err := os.Lstat(p); err != nil {
			break
		}
		older = append(older, p)
	}
	out := make([]string, 0, len(older)+1)
	for i := len(older) - 1; i >= 0; i-- {
		out = append(out, older[i])
	}
	if _, err := os.Lstat(path); err == nil {
		out = append(out, path)
	}
	return out
}
