package probe

import (
	"errors"
	"testing"
)

func TestSpecValidate(t *testing.T) {
	good := []Spec{
		{Kind: KindNotify},
		{Kind: KindFD, FD: 3},
		{Kind: KindHTTP, URL: "http://127.0.0.1:8080/health"},
		{Kind: KindTCP, Addr: "localhost:6379"},
		{Kind: KindExec, Argv: []string{"check-it"}},
		{Kind: KindLog, Pattern: `listening on \d+`},
	}
	for _, s := range good {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	bad := []Spec{
		{Kind: "carrier-pigeon"},
		{Kind: KindFD, FD: 2},
		{Kind: KindFD, FD: 1000},
		{Kind: KindHTTP, URL: "127.0.0.1:8080"},
		{Kind: KindHTTP, URL: "ftp://x/y"},
		{Kind: KindTCP, Addr: "8080"},
		{Kind: KindExec},
		{Kind: KindLog},
		{Kind: KindLog, Pattern: "("},
	}
	for _, s := range bad {
		if err := s.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", s, err)
		}
	}
}

func TestSpecCheck(t *testing.T) {
	for _, k := range []Kind{KindNotify, KindFD} {
		if _, err := (Spec{Kind: k, FD: 3}).Check(Context{}); err == nil {
			t.Errorf("%s built a check", k)
		}
	}
	c, err := (Spec{Kind: KindTCP, Addr: "127.0.0.1:1"}).Check(Context{})
	if err != nil || c.String() != "tcp 127.0.0.1:1" {
		t.Fatalf("Check = %v, %v", c, err)
	}
}
