package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// ErrCorrupt reports a state file that is not a valid state: it is left
// as it is until the user fixes or removes it.
var ErrCorrupt = errors.New("malformed state file")

// CorruptError says where and why the state file is malformed.
type CorruptError struct {
	Path   string
	Line   int   // 1-based line of the fault
	Offset int64 // 0-based byte offset of the fault
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s:%d: malformed state file: %v (byte %d); it is left as it is: fix or remove it, then reload",
		e.Path, e.Line, e.Err, e.Offset)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes every *CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// decode parses a state file strictly: besides what encoding/json checks,
// an empty file, an unknown or duplicate key (keys match exactly, not
// case-insensitively), trailing data and a version other than Version
// are errors. Every error is a *CorruptError that points at the fault.
func decode(path string, data []byte) (State, error) {
	if st, ok := asWritten(data); ok {
		return st, nil
	}
	return walkDecode(path, data)
}

// asWritten decodes data, and reports whether it is byte for byte what
// Update writes of the state it holds (encode) in this version: such a
// file passes every check of the walk by construction (one value, each
// key once and spelt as written, no null, a known version), so one
// decode and one encode read it. The service's own file is read so at
// every start; any other goes through the walk, which says where it
// is wrong.
func asWritten(data []byte) (State, bool) {
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&st) != nil || st.Version != Version || st.Agents == nil {
		return State{}, false
	}
	enc, err := encode(st)
	if err != nil || !bytes.Equal(enc, data) {
		return State{}, false
	}
	return st, true
}

// encode is the state file that holds st, as Update writes it.
func encode(st State) ([]byte, error) {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// walkDecode is decode by the walk: every check made token by token,
// with the offset of the first fault.
func walkDecode(path string, data []byte) (State, error) {
	w := &walker{path: path, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return State{}, w.fail(0, errors.New("the file is empty"))
	}
	if err := w.value(reflect.TypeFor[State](), ""); err != nil {
		return State{}, err
	}
	if end := w.next(); end < int64(len(data)) {
		return State{}, w.fail(end, errors.New("unexpected data after the JSON object"))
	}
	// The walk has checked shape, keys and every value; this fills st.
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return State{}, w.fail(0, err)
	}
	if st.Version != Version {
		return State{}, w.fail(w.versionAt, fmt.Errorf("version %d is not supported (this tether reads version %d)", st.Version, Version))
	}
	if st.Agents == nil {
		st.Agents = map[string]Agent{}
	}
	return st, nil
}

// walker checks a JSON document against a Go type token by token, so
// that it knows the offset of every key and value (encoding/json reports
// none for an unknown field or a bad time).
type walker struct {
	path      string
	data      []byte
	dec       *json.Decoder
	versionAt int64
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// value checks the next value against t; where names it for messages.
func (w *walker) value(t reflect.Type, where string) error {
	at := w.next()
	if where == "version" {
		w.versionAt = at
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(err)
	}
	for t.Kind() == reflect.Pointer {
		if tok == nil {
			return nil
		}
		t = t.Elem()
	}
	leaf := reflect.PointerTo(t).Implements(unmarshalerType) // time.Time
	if tok == nil {
		// encoding/json would take null for a zero value; this package
		// writes null nowhere but for a missing pointer.
		return w.fail(at, fmt.Errorf("%s: want %s, found null", name(where), kind(t, leaf)))
	}
	if d, ok := tok.(json.Delim); ok {
		if d != '{' || leaf || (t.Kind() != reflect.Struct && t.Kind() != reflect.Map) {
			return w.fail(at, fmt.Errorf("%s: want %s, found %s", name(where), kind(t, leaf), map[json.Delim]string{'{': "an object", '[': "an array"}[d]))
		}
		return w.object(t, where)
	}
	// A scalar: encoding/json judges it against t, here where its offset
	// is known.
	raw, err := json.Marshal(tok)
	if err == nil {
		err = json.Unmarshal(raw, reflect.New(t).Interface())
	}
	if err != nil {
		return w.fail(at, fmt.Errorf("%s: %w", name(where), err))
	}
	return nil
}

// object checks the members of an object whose '{' has been read.
func (w *walker) object(t reflect.Type, where string) error {
	fields := map[string]reflect.Type{}
	if t.Kind() == reflect.Struct {
		for f := range t.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "" {
				key = f.Name
			}
			if key != "-" && f.IsExported() {
				fields[key] = f.Type
			}
		}
	}
	seen := map[string]bool{}
	for w.dec.More() {
		at := w.next()
		tok, err := w.dec.Token()
		if err != nil {
			return w.syntax(err)
		}
		key, _ := tok.(string) // the decoder allows nothing else here
		var ft reflect.Type
		if t.Kind() == reflect.Map {
			ft = t.Elem()
		} else if ft = fields[key]; ft == nil {
			return w.fail(at, fmt.Errorf("unknown field %q in %s", key, name(where)))
		}
		if seen[key] {
			return w.fail(at, fmt.Errorf("duplicate key %q in %s", key, name(where)))
		}
		seen[key] = true
		sub := key
		if where != "" {
			sub = where + "." + key
		}
		if err := w.value(ft, sub); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil { // the closing '}'
		return w.syntax(err)
	}
	return nil
}

// next is the offset of the next token: the decoder's offset past the
// separators and white space that precede it.
func (w *walker) next() int64 {
	off := w.dec.InputOffset()
	for off < int64(len(w.data)) && strings.IndexByte(" \t\r\n,:", w.data[off]) >= 0 {
		off++
	}
	return off
}

func (w *walker) syntax(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return w.fail(se.Offset, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		end := len(bytes.TrimRight(w.data, " \t\r\n"))
		return w.fail(int64(end), errors.New("unexpected end of file (the JSON is cut short)"))
	}
	return w.fail(w.dec.InputOffset(), err)
}

// fail returns a *CorruptError at offset off.
func (w *walker) fail(off int64, err error) error {
	off = min(max(off, 0), int64(len(w.data)))
	return &CorruptError{Path: w.path, Line: 1 + bytes.Count(w.data[:off], []byte{'\n'}), Offset: off, Err: err}
}

func name(where string) string {
	if where == "" {
		return "the top level"
	}
	return where
}

// kind names what JSON value a Go type wants, for messages.
func kind(t reflect.Type, leaf bool) string {
	switch {
	case leaf:
		return "a string"
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "an object"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "a number"
}
