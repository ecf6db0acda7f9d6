package secret

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/danieljoos/wincred"
	"github.com/zalando/go-keyring"
)

// The Windows Credential Manager (Wine's, in the tests) holds what Set
// stores, as the generic credential "tether/PROFILE:KEY"; Has and
// Resolve read it, and another profile's entry is not it.
func TestCredentialManager(t *testing.T) {
	ctx := context.Background()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	key := "test-" + hex.EncodeToString(b[:])
	value := "s3cret-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = keyring.Delete(Service("default"), key) })

	if _, err := Resolve(ctx, "default", keyringAgent(key), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before set: %v, want ErrNotFound", err)
	}
	if err := Set(ctx, "default", key, value); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(ctx, "default", keyringAgent(key), nil)
	if err != nil || got["TOKEN"] != value {
		t.Fatalf("after set: %q, %v", got["TOKEN"], err)
	}
	if ok, err := Has(ctx, "default", key); !ok || err != nil {
		t.Errorf("Has: %v, %v", ok, err)
	}
	if _, err := Resolve(ctx, "work", keyringAgent(key), nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("profile work: %v, want ErrNotFound", err)
	}
	// The documented name, read with the Credential Manager's own API.
	cred, err := wincred.GetGenericCredential("tether/default:" + key)
	if err != nil || string(cred.CredentialBlob) != value {
		t.Errorf("the generic credential tether/default:%s: %v", key, err)
	}
}
