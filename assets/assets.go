// Package assets holds tether's embedded images: the tray icons, one per
// aggregate state, as PNG (Linux and macOS) and ICO (Windows: an ICO
// container holding PNG images). It owns data only and imports nothing of
// ours; the tray uses it.
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

// State is what the tray icon shows: the aggregate state of a profile's
// agents.
type State int

const (
	// Running: every agent runs.
	Running State = iota
	// Stopped: some agent is stopped (or starting, or stopping), there is
	// no agent, or the service is not running.
	Stopped
	// Failed: some agent failed, is in backoff, or could not be cleaned
	// up; or the config or state file is broken.
	Failed
)

// States lists every State, in order.
var States = []State{Running, Stopped, Failed}

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Stopped:
		return "stopped"
	case Failed:
		return "failed"
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
