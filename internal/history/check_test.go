package history

import (
	"errors"
	"strings"
	"testing"
)

// s is a time of a hand-made history: seconds, as monotonic nanoseconds.
func s(sec float64) int64 { return int64(sec * 1e9) }

func start(host, identity string, pid int, at float64, fence int64) Record {
	return Record{Kind: Start, At: s(at), Host: host, Identity: identity, PID: pid, Boot: uint64(pid) * 10, Fence: fence}
}

func end(host string, pid int, at float64) Record {
	return Record{Kind: End, At: s(at), Host: host, PID: pid, Boot: uint64(pid) * 10}
}

func gone(host string, pid int, at float64) Record {
	return Record{Kind: Gone, At: s(at), Host: host, PID: pid, Boot: uint64(pid) * 10}
}

// Hand-made histories: each that must fail does, with the violation it
// names, and each that must pass does.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		recs []Record
		opts Options
		// want is the type of every violation, in order ("" for none).
		want     []string
		overlaps int
	}{
		{name: "one holder after the other", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 2),
			start("h2", "a", 20, 3, 9), end("h2", 20, 4),
		}},
		{name: "the second starts the instant the first ends", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 2),
			start("h2", "a", 20, 2, 9), end("h2", 20, 4),
		}},
		{name: "two hosts at once", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 3),
			start("h2", "a", 20, 2, 9), end("h2", 20, 4),
		}, want: []string{"overlap"}, overlaps: 1},
		{name: "records in any order", recs: []Record{
			end("h2", 20, 4), end("h1", 10, 3),
			start("h2", "a", 20, 2, 9), start("h1", "a", 10, 1, 5),
		}, want: []string{"overlap"}, overlaps: 1},
		{name: "one execution inside another", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 9),
			start("h2", "a", 20, 2, 9), end("h2", 20, 3),
		}, want: []string{"overlap"}, overlaps: 1},
		{name: "a holder killed is seen gone after the next one started", recs: []Record{
			start("h1", "a", 10, 1, 5), gone("h1", 10, 3),
			start("h2", "a", 20, 2.5, 9), end("h2", 20, 4),
		}, want: []string{"overlap"}, overlaps: 1},
		{name: "a holder that never ended", recs: []Record{
			start("h1", "a", 10, 1, 5),
			start("h2", "a", 20, 2, 9), end("h2", 20, 4),
		}, want: []string{"overlap"}, overlaps: 1},
		{name: "two processes on one host", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 3),
			start("h1", "a", 11, 2, 5), end("h1", 11, 4),
		}, want: []string{"overlap"}, overlaps: 1},
		{name: "three at once", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 5),
			start("h2", "a", 20, 2, 9), end("h2", 20, 6),
			start("h3", "a", 30, 3, 12), end("h3", 30, 7),
		}, want: []string{"overlap", "overlap", "overlap"}, overlaps: 3},
		{name: "two identities at once", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 3),
			start("h2", "b", 20, 2, 9), end("h2", 20, 4),
		}},
		{name: "the agent's own end wins over its being seen gone", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 2), gone("h1", 10, 2.6),
			start("h2", "a", 20, 2.5, 9), end("h2", 20, 4),
		}},
		{name: "a restart on the same host keeps the token", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 2),
			start("h1", "a", 11, 3, 5), end("h1", 11, 4),
		}},
		{name: "the same token on another host", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 2),
			start("h2", "a", 20, 3, 5), end("h2", 20, 4),
		}, want: []string{"fence"}},
		{name: "a token that goes back", recs: []Record{
			start("h1", "a", 10, 1, 9), end("h1", 10, 2),
			start("h1", "a", 11, 3, 5), end("h1", 11, 4),
		}, want: []string{"fence"}},
		{name: "a paused holder overlaps the next, whose token is higher", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 8),
			start("h2", "a", 20, 6, 9), end("h2", 20, 10),
		}, opts: Options{AllowFenced: true}, overlaps: 1},
		{name: "a paused holder overlaps the next, whose token is not higher", recs: []Record{
			start("h1", "a", 10, 1, 5), end("h1", 10, 8),
			start("h2", "a", 20, 6, 5), end("h2", 20, 10),
		}, opts: Options{AllowFenced: true}, want: []string{"overlap", "fence"}, overlaps: 1},
		{name: "a paused holder overlaps the next, without tokens", recs: []Record{
			start("h1", "a", 10, 1, 0), end("h1", 10, 8),
			start("h2", "a", 20, 6, 0), end("h2", 20, 10),
		}, opts: Options{AllowFenced: true}, want: []string{"overlap"}, overlaps: 1},
		{name: "no token where one is due", recs: []Record{
			start("h1", "a", 10, 1, 0), end("h1", 10, 2),
		}, opts: Options{RequireFence: true}, want: []string{"missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.recs, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range r.Violations {
				var o *Overlap
				var f *FenceOrder
				var m *MissingFence
				switch {
				case errors.As(v, &o):
					got = append(got, "overlap")
				case errors.As(v, &f):
					got = append(got, "fence")
				case errors.As(v, &m):
					got = append(got, "missing")
				default:
					t.Fatalf("a violation of no known type: %v", v)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("violations %v, want %v:\n%v", got, c.want, r.Err())
			}
			if len(r.Overlaps) != c.overlaps {
				t.Errorf("%d overlaps, want %d", len(r.Overlaps), c.overlaps)
			}
			if (r.Err() == nil) != (len(c.want) == 0) {
				t.Errorf("Err() = %v with violations %v", r.Err(), c.want)
			}
		})
	}
}

// An overlap's message names both processes, their hosts and tokens, and
// how long they ran together.
func TestOverlapMessage(t *testing.T) {
	r, err := Check([]Record{
		start("h1", "alice@relay", 10, 1, 5), end("h1", 10, 3.5),
		start("h2", "alice@relay", 20, 2, 9), end("h2", 20, 4),
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := r.Err().Error()
	for _, want := range []string{`"alice@relay"`, "for 1.5s", "pid 10 on h1 (fence 5) from 1.000s to 3.500s", "pid 20 on h2 (fence 9) from 2.000s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}

// A history that cannot be what happened is an error, not a pass.
func TestInconsistentHistories(t *testing.T) {
	for _, c := range []struct {
		name string
		recs []Record
	}{
		{"an end without a start", []Record{end("h1", 10, 2)}},
		{"seen gone without a start", []Record{gone("h1", 10, 2)}},
		{"started twice", []Record{start("h1", "a", 10, 1, 5), start("h1", "a", 10, 2, 5)}},
		{"ended twice", []Record{start("h1", "a", 10, 1, 5), end("h1", 10, 2), end("h1", 10, 3)}},
		{"seen gone twice", []Record{start("h1", "a", 10, 1, 5), gone("h1", 10, 2), gone("h1", 10, 3)}},
		{"an end before the start", []Record{start("h1", "a", 10, 2, 5), end("h1", 10, 1)}},
		{"seen gone before its own end", []Record{start("h1", "a", 10, 1, 5), gone("h1", 10, 2), end("h1", 10, 3)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.recs, Options{})
			if !errors.Is(err, ErrInconsistent) {
				t.Fatalf("Check = %v, %v; want ErrInconsistent", r, err)
			}
		})
	}
}

// A pid used again by another process is another execution: Boot tells
// them apart.
func TestReusedPID(t *testing.T) {
	a := start("h1", "a", 10, 1, 5)
	b := start("h1", "a", 10, 3, 5)
	b.Boot++
	endB := end("h1", 10, 4)
	endB.Boot = b.Boot
	r, err := Check([]Record{a, end("h1", 10, 2), b, endB}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Executions) != 2 || r.Err() != nil {
		t.Fatalf("%d executions, %v; want 2 and no violation", len(r.Executions), r.Err())
	}
}
