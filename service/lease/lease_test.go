package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/service/config"
)

// Without a lease section, Open connects nowhere and says why.
func TestOpenNotConfigured(t *testing.T) {
	s, err := Open(context.Background(), nil, "default")
	if s != nil || !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("Open(nil) = %v, %v; want ErrNotConfigured", s, err)
	}
}

// The deadline is the renewal's sending plus the ttl less the margin, on
// the monotonic clock.
func TestDeadline(t *testing.T) {
	sent := time.Now()
	got := deadline(sent, 4*time.Second)
	if d := got.Sub(sent); d != 4*time.Second-config.LeaseMargin {
		t.Errorf("deadline is %v after the renewal, want %v", d, 4*time.Second-config.LeaseMargin)
	}
	if !strings.Contains(got.String(), " m=") {
		t.Error("the deadline lost the monotonic clock")
	}
}

func TestKeyAndFence(t *testing.T) {
	if k := Key("/tether", "alice@relay/x y"); k != "/tether/identities/alice@relay%2Fx%20y" {
		t.Errorf("Key = %q", k)
	}
	if f := Fence(1234567890123).String(); f != "1234567890123" {
		t.Errorf("Fence.String = %q, want the decimal", f)
	}
	e := &HeldElsewhere{Identity: "alice", Holder: Holder{Host: "vps", Profile: "default", Since: time.Now()}}
	var held *HeldElsewhere
	if err := error(e); !errors.As(err, &held) || held.Holder.Host != "vps" {
		t.Errorf("errors.As does not find the holder in %v", err)
	}
}
