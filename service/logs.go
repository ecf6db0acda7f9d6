package service

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxLogSize caps an agent's log: past it, the log becomes <id>.log.1
// (replacing the one before) and a new log begins. At an agent's start
// the file is renamed; while it runs, its writers hold the file open, so
// it is copied and truncated instead (lines written between the copy and
// the truncation are lost).
const MaxLogSize = 10 << 20

// rotateLog rotates path if it has grown past MaxLogSize. It runs before
// a guardian opens the log, so no writer holds the old file.
func rotateLog(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Size() < MaxLogSize {
		return nil
	}
	return os.Rename(path, path+".1")
}

// tailLines returns the last n lines of the file at path (no file: none).
func tailLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Read backwards in blocks until n newlines are in hand.
	const block = 64 << 10
	size := fi.Size()
	var buf []byte
	for off := size; off > 0 && bytes.Count(buf, []byte("\n")) <= n; {
		step := min(int64(block), off)
		off -= step
		chunk := make([]byte, step)
		if _, err := f.ReadAt(chunk, off); err != nil && err != io.EOF {
			return nil, err
		}
		buf = append(chunk, buf...)
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil, nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// follower reads what is appended to a log file.
type follower struct {
	path    string
	f       *os.File
	off     int64
	partial []byte
}

func newFollower(path string) *follower {
	fl := &follower{path: path}
	if f, err := os.Open(path); err == nil {
		fl.f = f
		fl.off, _ = f.Seek(0, io.SeekEnd)
	}
	return fl
}

func (fl *follower) read() []string {
	if fl.f == nil {
		f, err := os.Open(fl.path)
		if err != nil {
			return nil
		}
		fl.f, fl.off = f, 0
	}
	// A rotated log starts again from the beginning of the new file.
	if fi, err := os.Stat(fl.path); err == nil {
		if cur, err := fl.f.Stat(); err == nil && !os.SameFile(fi, cur) {
			fl.f.Close()
			fl.f, fl.off = nil, 0
			return fl.read()
		}
	}
	buf := make([]byte, 64<<10)
	var lines []string
	for {
		n, err := fl.f.ReadAt(buf, fl.off)
		fl.off += int64(n)
		data := append(fl.partial, buf[:n]...)
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(data[:i]))
			data = data[i+1:]
		}
		fl.partial = append([]byte(nil), data...)
		if err != nil || n == 0 {
			return lines
		}
	}
}

func (fl *follower) close() {
	if fl.f != nil {
		fl.f.Close()
	}
}

// capLog copies a log that has grown past max to <path>.1 and truncates
// it. Its writers append (O_APPEND), so they go on at the new end.
func capLog(path string, max int64) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && (fi.Size() < max || !fi.Mode().IsRegular())) {
		return nil
	}
	if err != nil {
		return err
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rotate-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path+".1"); err != nil {
		return err
	}
	return os.Truncate(path, 0)
}
