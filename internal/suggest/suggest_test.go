package suggest

import "testing"

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"status", "status", 0},
		{"stauts", "status", 1}, {"strat", "start", 1}, {"sart", "start", 1},
		{"restat", "restart", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := editDistance(c.b, c.a); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}

func TestBest(t *testing.T) {
	cmds := []string{"tray", "demo", "service", "status", "top", "start", "stop", "restart", "logs", "check", "reload", "config", "version", "help", "completion"}
	for _, c := range []struct{ word, want string }{
		{"strat", "start"},
		{"stauts", "status"},
		{"stat", "status"},  // the only command it begins
		{"re", ""},          // restart and reload both begin so
		{"rload", "reload"}, // a letter left out
		{"versoin", "version"},
		{"frobnicate", ""},
		{"x", ""},
		{"start", ""}, // not a typo
	} {
		if got := Best(c.word, cmds); got != c.want {
			t.Errorf("Best(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	ids := []string{"alice", "alice-2", "bob@relay"}
	for _, c := range []struct{ word, want string }{
		{"alcie", "alice"}, {"bob@rely", "bob@relay"}, {"bob", "bob@relay"}, {"carol", ""},
	} {
		if got := Best(c.word, ids); got != c.want {
			t.Errorf("Best(%q, ids) = %q, want %q", c.word, got, c.want)
		}
	}
}
