// Package assets holds tether's embedded images: the tray icons, one per
// aggregate state, and the plain mark for informational notices, as PNG
// (Linux and macOS) and ICO (Windows: an ICO container holding PNG
// images). It owns data only; the tray uses it.
//
// The icons are drawn by draw.go; `go generate` writes them out again, and
// a test fails when the embedded files and the drawing disagree.
package assets

import (
	"embed"
	"fmt"
	"runtime"
)

//go:generate go test -run ^TestIconsMatchDrawing$ -update .

// State is what an icon shows. The first four are the tray's: the
// aggregate state of a profile, as a badge on tether's mark. Mark is the
// mark alone, for notices that only inform.
type State int

const (
	// Running: nothing needs the user: some agent runs, and every other
	// one has ended cleanly or was stopped and rests.
	Running State = iota
	// Busy: some agent is starting, stopping, or backing off before a
	// restart.
	Busy
	// Failed: some agent failed or could not be cleaned up, or the config
	// or state file is broken.
	Failed
	// Unreachable: the tray cannot talk to the service (it is not
	// running, or it does not answer).
	Unreachable
	// Mark is tether's mark without a badge: the icon of informational
	// notices, and the tray's while its service runs no agent.
	Mark
)

// States lists the tray's states, in order.
var States = []State{Running, Busy, Failed, Unreachable}

// all lists every State with an embedded icon.
var all = append(States[:len(States):len(States)], Mark)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Busy:
		return "busy"
	case Failed:
		return "failed"
	case Unreachable:
		return "unreachable"
	case Mark:
		return "tether"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

//go:embed icons
var icons embed.FS

// PNG returns the icon of s as a PNG image.
func PNG(s State) []byte { return mustRead("icons/" + s.String() + ".png") }

// ICO returns the icon of s as a Windows ICO file.
func ICO(s State) []byte { return mustRead("icons/" + s.String() + ".ico") }

// Tray returns the icon of s in the format the system tray of this OS
// takes: ICO on Windows, PNG elsewhere.
func Tray(s State) []byte {
	if runtime.GOOS == "windows" {
		return ICO(s)
	}
	return PNG(s)
}

func mustRead(name string) []byte {
	b, err := icons.ReadFile(name)
	if err != nil {
		// Only an unknown State gets here: every file is embedded.
		panic(fmt.Sprintf("assets: %v", err))
	}
	return b
}
