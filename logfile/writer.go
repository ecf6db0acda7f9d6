package logfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// MaxLine is the longest line kept whole: a longer one is cut into lines
// of MaxLine bytes (each ends with a newline it did not have).
const MaxLine = 64 << 10

// Opener opens path for appending, creating it private to the user.
type Opener func(path string) (*os.File, error)

// Writer writes a log's lines and rotates its files. Each line goes
// whole into one file, in the order of the calls; the rotation happens
// between two lines, by renames (<path> becomes <path>.1, <path>.1
// becomes <path>.2, ..., the oldest beyond Keep is dropped) and the
// opening of a new <path>. No line is ever lost or written twice by a
// rotation.
//
// Its methods may be called from several goroutines.
type Writer struct {
	mu     sync.Mutex
	path   string
	policy Policy
	open   Opener
	onOpen func(*os.File) error
	f      *os.File // nil: the lines are discarded
	size   int64
	out    []byte
	stamp  stamper
	// stampBuf holds the stamp of the lines being written.
	stampBuf []byte
	// lost counts the bytes not written because of errors; err is the
	// last of those errors.
	err  error
	lost int64
}

// Open opens the log at path for appending; one already past the policy's
// size is rotated first, and one whose last line was cut (its writer
// killed in the middle of a write) is ended with a newline. onOpen, when not nil, is told of each file the
// writer opens (the guardian points its own output at it); its error
// fails the Open, not a rotation. An empty path discards every line.
func Open(path string, p Policy, open Opener, onOpen func(*os.File) error) (*Writer, error) {
	w := &Writer{path: path, policy: p, open: open, onOpen: onOpen}
	if path == "" {
		return w, nil
	}
	if err := w.reopen(); err != nil {
		if w.f != nil {
			w.f.Close()
		}
		return nil, err
	}
	if w.size >= p.MaxSize {
		if err := w.rotate(); err != nil {
			return nil, err
		}
	} else if w.size > 0 && endsCut(path, w.f, w.size) {
		// The writer before was killed in the middle of a write: its cut
		// line stays as it is, and the lines from here start whole.
		w.write([]byte{'\n'})
	}
	return w, nil
}

// endsCut reports whether f, the file of size bytes at path, ends in the
// middle of a line. f is open for appending only, so its last byte is
// read through another descriptor, of the same file.
func endsCut(path string, f *os.File, size int64) bool {
	r, err := os.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	ri, err := r.Stat()
	if err != nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(ri, fi) {
		return false
	}
	var b [1]byte
	if _, err := r.ReadAt(b[:], size-1); err != nil {
		return false
	}
	return b[0] != '\n'
}

// reopen opens path and takes its size. Once the file is open, it is the
// writer's, whatever onOpen returns.
func (w *Writer) reopen() error {
	f, err := w.open(w.path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.f, w.size = f, fi.Size()
	if w.onOpen != nil {
		return w.onOpen(f)
	}
	return nil
}

// Write writes p, whole lines already formatted (the guardian's own),
// as they are. It implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.room(int64(len(p)))
	w.write(p)
	return len(p), nil
}

// lines writes the complete lines in b (each ends with a newline) of
// stream s, stamped (now: so the times in a file never go back) and
// marked as the policy says.
func (w *Writer) lines(s Stream, b []byte) {
	w.linesAt(s, b, time.Time{})
}

// linesAt is lines with the stamp t, when t is not zero.
func (w *Writer) linesAt(s Stream, b []byte, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var stamp []byte
	if w.policy.Timestamps {
		if t.IsZero() {
			t = time.Now()
		}
		stamp = w.stamp.append(w.stampBuf[:0], t)
		w.stampBuf = stamp
	}
	mark := ""
	if s == Stderr {
		mark = StderrMark
	}
	out := w.out[:0]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 {
			i = len(b)
		}
		n := int64(len(stamp) + len(mark) + i)
		if w.f != nil && w.size+int64(len(out))+n > w.policy.MaxSize && w.size+int64(len(out)) > 0 {
			w.write(out)
			out = out[:0]
			w.room(n)
		}
		out = append(append(append(out, stamp...), mark...), b[:i]...)
		b = b[i:]
	}
	w.write(out)
	w.out = out[:0]
}

// room rotates the log if n more bytes would take it past the size.
func (w *Writer) room(n int64) {
	if w.f != nil && w.size > 0 && w.size+n > w.policy.MaxSize {
		if err := w.rotate(); err != nil {
			w.fail(err, 0)
		}
	}
}

// write writes b to the current file.
func (w *Writer) write(b []byte) {
	if len(b) == 0 || w.f == nil {
		return
	}
	n, err := w.f.Write(b)
	w.size += int64(n)
	if err != nil {
		w.fail(err, int64(len(b)-n))
	}
}

func (w *Writer) fail(err error, lost int64) {
	w.err = err
	w.lost += lost
}

// Lost returns how many bytes were lost to errors in all, and the last
// error (a rotation that failed loses nothing: the lines go on in the
// file that could not be moved).
func (w *Writer) Lost() (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost, w.err
}

// rotate moves the files one number up and opens a new one. A file it
// cannot move stays where it is, and is written on.
func (w *Writer) rotate() error {
	keep := w.policy.Keep
	// Files beyond keep, left by a policy that kept more, go.
	for n := keep + 1; os.Remove(Rotated(w.path, n)) == nil; n++ {
	}
	var err error
	if keep == 0 {
		err = os.Remove(w.path)
	}
	for n := keep - 1; n >= 0 && err == nil; n-- {
		if e := os.Rename(Rotated(w.path, n), Rotated(w.path, n+1)); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = e
		}
	}
	if err != nil {
		return err
	}
	old := w.f
	if err := w.reopen(); err != nil && w.f == old {
		// Go on in the file renamed away rather than lose lines.
		return err
	}
	// Closed after: the guardian's own output moved to the new file.
	// (On Windows that move closed it already.)
	_ = old.Close()
	return nil
}

// Close closes the current file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

// Copy writes the lines read from r, of stream s, until r ends, and
// returns the read's error (nil at EOF). Each line read is also given to
// each, when not nil, without its newline. A last line without a newline
// is written with one; a line longer than MaxLine is cut.
func (w *Writer) Copy(r io.Reader, s Stream, each func(line []byte)) error {
	// One byte more than a line, for the newline a cut line is given.
	buf := make([]byte, MaxLine+1)
	have := 0 // bytes of an incomplete line at the start of buf
	emit := func(b []byte) {
		if each != nil {
			eachLine(b, each)
		}
		w.lines(s, b)
	}
	for {
		n, err := r.Read(buf[have:MaxLine])
		have += n
		if end := bytes.LastIndexByte(buf[:have], '\n') + 1; end > 0 {
			emit(buf[:end])
			have = copy(buf, buf[end:have])
		}
		if have == MaxLine || err != nil && have > 0 {
			buf[have] = '\n'
			emit(buf[:have+1])
			have = 0
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// eachLine calls each for every line of b, which ends with a newline.
func eachLine(b []byte, each func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			each(b)
			return
		}
		each(b[:i])
		b = b[i+1:]
	}
}
