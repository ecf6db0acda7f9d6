package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Records appended by many writers at once come back whole, every one.
func TestAppendAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := Record{Kind: Start, At: int64(i + 1), Host: "h", Identity: strings.Repeat("x", 200), PID: w*each + i + 1, Boot: 1, Fence: 3}
				if err := Append(path, r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*each {
		t.Fatalf("%d records, want %d", len(recs), writers*each)
	}
	seen := map[int]bool{}
	for _, r := range recs {
		seen[r.PID] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct records, want %d", len(seen), writers*each)
	}
}

// A line that is not a record is an error naming the file and its line.
func TestReadBadLines(t *testing.T) {
	for _, c := range []struct{ name, line string }{
		{"not JSON", "start 10 h1"},
		{"an unknown kind", `{"kind":"begin","at":1,"host":"h","pid":1}`},
		{"an unknown key", `{"kind":"end","at":1,"host":"h","pid":1,"exit":0}`},
		{"no pid", `{"kind":"end","at":1,"host":"h"}`},
		{"no time", `{"kind":"end","host":"h","pid":1}`},
		{"no host", `{"kind":"end","at":1,"pid":1}`},
		{"a start without an identity", `{"kind":"start","at":1,"host":"h","pid":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history")
			good := string(Record{Kind: End, At: 1, Host: "h", PID: 1}.Encode())
			if err := os.WriteFile(path, []byte(good+c.line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), path+":2:") {
				t.Fatalf("ReadFile = %v; want ErrBadRecord at %s:2", err, path)
			}
		})
	}
}
