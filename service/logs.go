package service

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/tether-dev/tether/logfile"
)

// tailLines returns the last n lines of the log at path, across its
// rotated files (no file: none).
func tailLines(path string, n int) ([]string, error) {
	files := logfile.Files(path)
	var out []string
	for i := len(files) - 1; i >= 0 && len(out) < n; i-- {
		lines, err := tailFile(files[i], n-len(out))
		if err != nil {
			return nil, err
		}
		out = append(lines, out...)
	}
	return out, nil
}

// tailFile returns the last n lines of the file at path (no file: none).
func tailFile(path string, n int) ([]string, error) {
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
	return tailOf(f, fi.Size(), n)
}

// tailOf returns the last n lines of the first size bytes of r.
func tailOf(r io.ReaderAt, size int64, n int) ([]string, error) {
	// Read backwards in blocks until n newlines are in hand.
	const block = 64 << 10
	var buf []byte
	for off := size; off > 0 && bytes.Count(buf, []byte("\n")) <= n; {
		step := min(int64(block), off)
		off -= step
		chunk := make([]byte, step)
		if _, err := r.ReadAt(chunk, off); err != nil && err != io.EOF {
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

// follower reads what is appended to a log file, from the size it had
// when the follower was made.
type follower struct {
	path    string
	f       *os.File
	start   int64 // the size at creation: the tail ends here
	off     int64
	partial []byte
}

func newFollower(path string) *follower {
	fl := &follower{path: path}
	if f, err := os.Open(path); err == nil {
		fl.f = f
		size, _ := f.Seek(0, io.SeekEnd)
		// A line still being written belongs to what follows: the
		// follower starts where it began, so it is read whole.
		fl.off = lineStart(f, size)
		fl.start = fl.off
	}
	return fl
}

// lineStart returns where the line that ends at size begins: size itself
// when the first size bytes of r end with a newline (or are none).
func lineStart(r io.ReaderAt, size int64) int64 {
	const block = 4 << 10
	buf := make([]byte, block)
	for end := size; end > 0; {
		step := min(int64(block), end)
		if n, _ := r.ReadAt(buf[:step], end-step); int64(n) < step {
			return size // unreadable: start at the end
		}
		if i := bytes.LastIndexByte(buf[:step], '\n'); i >= 0 {
			return end - step + int64(i) + 1
		}
		end -= step
	}
	return 0
}

// tail returns the last n lines before the point the follower starts at.
func (fl *follower) tail(n int) ([]string, error) {
	if fl.f == nil || fl.start == 0 {
		return nil, nil
	}
	return tailOf(io.NewSectionReader(fl.f, 0, fl.start), fl.start, n)
}

// read returns at most max complete lines appended since the last read.
// It follows the log across its rotations: once the file it reads was
// renamed away and read to its end, it goes on with the file that came
// after it (see logfile.Writer), from its start.
func (fl *follower) read(max int) []string {
	if fl.f == nil {
		f, err := os.Open(fl.path)
		if err != nil {
			return nil
		}
		fl.f, fl.off = f, 0
	}
	if lines := fl.readOpen(max); len(lines) > 0 {
		return lines
	}
	if next := fl.next(); next != nil {
		fl.f.Close()
		fl.f, fl.off, fl.partial = next, 0, nil
		return fl.read(max)
	}
	if fi, err := fl.f.Stat(); err == nil && fi.Size() < fl.off {
		// Truncated: its writers go on from the start.
		fl.off, fl.partial = 0, nil
		return fl.readOpen(max)
	}
	return nil
}

// next opens the file that follows the open one once that was rotated
// away: <path>.(k-1) when it is <path>.k now, else <path>. It returns nil
// while the open file is still the log's.
func (fl *follower) next() *os.File {
	cur, err := fl.f.Stat()
	if err != nil {
		return nil
	}
	if fi, err := os.Stat(fl.path); err != nil || os.SameFile(fi, cur) {
		return nil
	}
	name := fl.path
	for k := 1; k <= logfile.MaxKeep; k++ {
		fi, err := os.Stat(logfile.Rotated(fl.path, k))
		if err != nil {
			break
		}
		if os.SameFile(fi, cur) {
			name = logfile.Rotated(fl.path, k-1)
			break
		}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	return f
}

// readOpen reads at most max complete lines of the open file.
func (fl *follower) readOpen(max int) []string {
	buf := make([]byte, 64<<10)
	var lines []string
	for len(lines) < max {
		n, err := fl.f.ReadAt(buf, fl.off)
		if n == 0 {
			break
		}
		fl.off += int64(n)
		// data is always the file's bytes that end at fl.off.
		data := append(fl.partial, buf[:n]...)
		fl.partial = nil
		for len(lines) < max {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(data[:i]))
			data = data[i+1:]
		}
		if len(lines) >= max {
			fl.off -= int64(len(data)) // read the rest again next time
			return lines
		}
		fl.partial = append([]byte(nil), data...)
		if err != nil {
			break
		}
	}
	return lines
}

func (fl *follower) close() {
	if fl.f != nil {
		fl.f.Close()
	}
}
