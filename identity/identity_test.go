package identity

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		id   string
		want string // "" for valid, else part of the message
	}{
		{"alice@relay", ""},
		{"../x", ""},
		{"ünïcode", ""},
		{strings.Repeat("a", MaxLen), ""},
		{"", "empty"},
		{strings.Repeat("a", MaxLen+1), "the limit is 256"},
		{"a\xffb", "not valid UTF-8"},
		{"a\tb", "control character U+0009"},
		{"a\x00b", "control character U+0000"},
		{"a\x7fb", "control character U+007F"},
	} {
		err := Validate(c.id)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Validate(%q) = %v, want nil", c.id, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Validate(%q) = %v, want an error containing %q", c.id, err, c.want)
		}
	}
}
