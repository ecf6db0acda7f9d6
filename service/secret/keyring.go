package secret

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/zalando/go-keyring"
)

// servicePrefix starts the service name of every keychain entry of
// tether's.
const servicePrefix = "tether/"

// Service is the keychain's service name of a profile's entries:
// "tether/PROFILE". An entry's account name is the key that the config's
// {keyring: KEY} names. The Secret Service stores them as the attributes
// service and username (secret-tool lookup service tether/default
// username KEY finds one), the macOS Keychain as a generic password of
// that service and account, the Windows Credential Manager as the generic
// credential "tether/PROFILE:KEY".
func Service(profile string) string { return servicePrefix + profile }

// Set stores value as the keychain entry key of profile, replacing one
// that is there. It waits at most Timeout (the keychain may ask the
// person to unlock it).
func Set(ctx context.Context, profile, key, value string) error {
	if err := CheckValue(value); err != nil {
		return err
	}
	_, err := within(ctx, func() (string, error) { return "", keyring.Set(Service(profile), key, value) })
	if err != nil {
		return fmt.Errorf("storing %s in the keychain: %w", entryName(profile, key), err)
	}
	return nil
}

// Has reports whether the keychain has the entry key of profile. It
// reads the entry (no keychain says more cheaply whether one is there)
// and drops its value.
func Has(ctx context.Context, profile, key string) (bool, error) {
	_, err := within(ctx, func() (string, error) {
		_, err := keyring.Get(Service(profile), key)
		return "", err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("reading %s from the keychain: %w", entryName(profile, key), err)
}

// get reads the entry key of profile, for the variable name of agent id.
func get(ctx context.Context, profile, id, name, key string) (string, *Error) {
	v, err := within(ctx, func() (string, error) { return keyring.Get(Service(profile), key) })
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, ErrNotFound):
		return "", &Error{Reason: fmt.Sprintf("%s is not in the keychain; store it with: tether secret set %s %s",
			entryName(profile, key), id, name), Err: err}
	case errors.Is(err, ErrTimeout):
		return "", &Error{Reason: fmt.Sprintf("the keychain did not answer within %v (is it locked, waiting for its password?)", Timeout), Err: err}
	}
	return "", &Error{Reason: "the keychain could not be read: " + err.Error(), Err: err}
}

// entryName names an entry in messages.
func entryName(profile, key string) string {
	return fmt.Sprintf("the entry %s of service %s", strconv.Quote(key), strconv.Quote(Service(profile)))
}

// within runs f, a keychain call, for at most Timeout or until ctx ends,
// and maps its errors onto this package's causes. go-keyring's calls take
// no context and a Secret Service prompt can wait for ever: one that does
// not answer in time is left to finish on its own, its result dropped.
func within(ctx context.Context, f func() (string, error)) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		switch {
		case r.err == nil:
			return r.v, nil
		case errors.Is(r.err, keyring.ErrNotFound):
			return "", ErrNotFound
		case errors.Is(r.err, keyring.ErrSetDataTooBig):
			return "", fmt.Errorf("%w: the value is too large for this keychain", ErrInvalid)
		}
		return "", fmt.Errorf("%w: %w", ErrKeychain, r.err)
	case <-ctx.Done():
		return "", ErrTimeout
	}
}
