package config

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeYAML decodes the first YAML document in data and reads on for a
// second one: doc is nil when data holds no document, extra is the second
// document when there is one. err is the first syntax error met.
func decodeYAML(data []byte) (doc, extra *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first, second yaml.Node
	if err := dec.Decode(&first); errors.Is(err, io.EOF) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	if err := dec.Decode(&second); errors.Is(err, io.EOF) {
		return &first, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	return &first, &second, nil
}

// syntax reports a YAML syntax error in data at the line of the fault.
func (p *parser) syntax(data []byte, err error) {
	line, msg := yamlProblem(err)
	line = faultLine(data, line, msg)
	p.add(&Error{File: p.file, Line: line, Msg: "invalid YAML: " + msg, Err: err})
}

// yamlProblem splits a yaml.v3 error, "yaml: line N: problem", into its
// line (0 when it names none) and its problem.
func yamlProblem(err error) (line int, problem string) {
	msg := err.Error()
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// faultLine returns the line of data that holds a syntax fault, given the
// line yaml.v3 named and its problem. That line is often not the fault's:
// yaml.v3 names the line where the construct around the fault began (the
// plain scalar before a tab in the indentation, the block list before an
// entry indented too little), a line before even that for the errors of
// its parser (an unclosed '['), no line at all for a fault on the first
// line or a byte that is not UTF-8, and, when the construct began on the
// first line, wherever the reading stopped. The fault is on the last line
// of the shortest run of leading lines that fails with the same problem:
// a shorter run either parses or, cut inside a construct that the next
// lines would have closed, fails with another one. The named line, when
// the lines before it do not fail that way, bounds the search from below.
// Each step of the search parses the lines before it again, so a file over
// maxSearch keeps the line yaml.v3 named.
func faultLine(data []byte, named int, problem string) int {
	switch {
	case len(data) > maxSearch:
		return named
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return named // UTF-16: its lines are not found by bytes
	}
	ends := lineEnds(data)
	fails := func(n int) bool {
		_, _, err := decodeYAML(data[:ends[n-1]])
		if err == nil {
			return false
		}
		_, got := yamlProblem(err)
		return got == problem
	}
	// Invariant: the first lo lines do not fail with problem, the first
	// hi lines (all of them, to start with) do.
	lo, hi := 0, len(ends)
	if before := min(named, hi) - 1; before > 0 && !fails(before) {
		lo = before
	}
	// The fault is most often on one of the next few lines: try them
	// first, each a parse of all the lines before it.
	for n, last := lo+1, lo+3; n < hi && n <= last; n++ {
		if fails(n) {
			return n
		}
		lo = n
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return max(hi, 1)
}

// maxSearch bounds the size of a file whose syntax fault faultLine looks
// for: at most about 20 parses of it (a config is a few KiB).
const maxSearch = 256 << 10

// lineEnds returns the offset just past each line of data, lines counted
// as yaml.v3 counts them for its node lines: each ends at "\r\n", "\r",
// "\n", NEL, LS or PS, and a last line without a break counts too.
func lineEnds(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); {
		n := breakLen(data[i:])
		if n == 0 {
			i++
			continue
		}
		i += n
		ends = append(ends, i)
	}
	if len(ends) == 0 || ends[len(ends)-1] < len(data) {
		ends = append(ends, len(data))
	}
	return ends
}

// breakLen is the length of the line break that b starts with, or 0.
func breakLen(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("\r\n")):
		return 2
	case b[0] == '\r', b[0] == '\n':
		return 1
	case bytes.HasPrefix(b, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(b, []byte("\u2028")), bytes.HasPrefix(b, []byte("\u2029")):
		return 3
	}
	return 0
}
