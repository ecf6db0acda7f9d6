package logfile

import "fmt"

// Policy says how an agent's log is written: the size at which it
// rotates, how many rotated files are kept, and whether each line starts
// with its time.
type Policy struct {
	// MaxSize is the size in bytes past which the log rotates: a line
	// that would take the file past it goes to a new file. A single
	// line longer than MaxSize fills a file of its own.
	MaxSize int64 `json:"max_size"`
	// Keep is how many rotated files are kept (<path>.1 the newest);
	// zero keeps none: the log starts again empty at each rotation.
	Keep int `json:"keep"`
	// Timestamps starts each line with its time (TimeFormat).
	Timestamps bool `json:"timestamps"`
}

// Defaults are the policy of an agent whose config says nothing.
const (
	DefaultMaxSize = 10 << 20
	DefaultKeep    = 5
)

// Default is the policy of an agent whose config says nothing.
func Default() Policy {
	return Policy{MaxSize: DefaultMaxSize, Keep: DefaultKeep, Timestamps: true}
}

// MinSize is the smallest MaxSize: below it, rotations would outnumber
// lines.
const MinSize = 4 << 10

// MaxKeep bounds Keep.
const MaxKeep = 1000

// Validate says what is wrong with p, naming the key.
func (p Policy) Validate() error {
	if p.MaxSize < MinSize {
		return fmt.Errorf("max_size %d: must be at least %d bytes", p.MaxSize, MinSize)
	}
	if p.Keep < 0 || p.Keep > MaxKeep {
		return fmt.Errorf("keep %d: must be between 0 and %d", p.Keep, MaxKeep)
	}
	return nil
}
