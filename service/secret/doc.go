// Package secret reads an agent's secrets where its config points, each
// time it starts: the OS keychain (the Secret Service over D-Bus on Linux,
// such as GNOME Keyring or KeePassXC; the macOS Keychain; the Windows
// Credential Manager; through zalando/go-keyring), or the standard output
// of a command (a password manager's: op read, pass show, bw get), run
// without a shell and for at most Timeout. It also stores a value in the
// keychain, and says whether an entry is there, for "tether secret".
//
// Values go back to the caller and nowhere else: nothing here logs or
// writes them, and an *Error names the variable, its reference and why it
// could not be read, never a value.
//
// A keychain entry is named by the profile and the reference's key (see
// Service): the agents of one profile share its entries, and another
// profile has its own.
//
// Only the service and the command line import it: the guardian links
// none of it, nor the keychain library (internal/layers).
package secret
