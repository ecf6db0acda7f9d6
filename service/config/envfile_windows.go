package config

import (
	"io/fs"
	"strings"
)

// exposed says why an env_file is not private enough, or "". On Windows Go
// derives the mode bits from the read-only attribute alone (0666 or 0444),
// so they say nothing about who can read the file; its ACL does, and files
// under the user's profile are private by default. Nothing is checked.
func exposed(path string, fi fs.FileInfo) string { return "" }

// envKey is how environment names compare: case-insensitively, on Windows.
func envKey(name string) string { return strings.ToUpper(name) }
