package secret

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-dev/tether/internal/keyringtest"
)

// Against a real Secret Service (GNOME Keyring on a private bus): Set
// stores a value under the profile's service name, where another client
// (libsecret's secret-tool) finds it by the documented attributes; Has
// and Resolve read it; another profile's entry is not it; a missing entry
// and an unreachable keychain are typed errors that name the reference
// and never the value. One test: the process's session bus connection is
// shared, and each step depends on the bus the one before left.
func TestKeychain(t *testing.T) {
	keyringtest.Skip(t)
	ctx := context.Background()
	const value = "s3cret-keyring-value"

	// No bus at all: the keychain is unavailable, said so.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	_, err := Resolve(ctx, "default", keyringAgent("alice-token"), nil)
	if !errors.Is(err, ErrKeychain) || !strings.Contains(err.Error(), `secret TOKEN (keyring "alice-token"): the keychain could not be read`) {
		t.Fatalf("without a bus: %v, want ErrKeychain naming the reference", err)
	}

	k := keyringtest.Start(t, keyringtest.Options{})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", k.Address)

	// Not there yet.
	_, err = Resolve(ctx, "default", keyringAgent("alice-token"), nil)
	var se *Error
	if !errors.As(err, &se) || !errors.Is(err, ErrNotFound) || se.Name != "TOKEN" {
		t.Fatalf("before set: %v, want ErrNotFound for TOKEN", err)
	}
	if !strings.Contains(err.Error(), "tether secret set alice TOKEN") {
		t.Errorf("the message does not say how to store it: %v", err)
	}
	if ok, err := Has(ctx, "default", "alice-token"); ok || err != nil {
		t.Errorf("Has before set: %v, %v", ok, err)
	}

	if err := Set(ctx, "default", "alice-token", "old"); err != nil {
		t.Fatal(err)
	}
	if err := Set(ctx, "default", "alice-token", value); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(ctx, "default", keyringAgent("alice-token"), nil)
	if err != nil || got["TOKEN"] != value {
		t.Fatalf("after set: %q, %v", got["TOKEN"], err)
	}
	if ok, err := Has(ctx, "default", "alice-token"); !ok || err != nil {
		t.Errorf("Has after set: %v, %v", ok, err)
	}
	// The naming is the documented one: service tether/PROFILE, the key
	// as the account (username).
	if _, err := exec.LookPath("secret-tool"); err == nil {
		cmd := exec.Command("secret-tool", "lookup", "service", "tether/default", "username", "alice-token")
		cmd.Env = k.Env
		out, err := cmd.Output()
		if err != nil || string(out) != value {
			t.Errorf("secret-tool lookup service tether/default username alice-token: %q, %v", out, err)
		}
	} else if os.Getenv("CI") == "true" {
		t.Errorf("CI=true: no secret-tool (libsecret-tools) to check the naming with another client")
	} else {
		t.Logf("SKIP part: no secret-tool (libsecret-tools): the naming is not checked with another client")
	}
	// Another profile has its own entries.
	if _, err := Resolve(ctx, "work", keyringAgent("alice-token"), nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("profile work: %v, want ErrNotFound", err)
	}
	// Nothing that cannot be an environment variable is stored.
	for _, bad := range []string{"", "a\x00b", strings.Repeat("x", MaxValue+1)} {
		if err := Set(ctx, "default", "bad", bad); !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrInvalid) {
			t.Errorf("Set(%.10q): %v", bad, err)
		}
	}
}
