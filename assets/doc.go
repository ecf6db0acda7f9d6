// Package assets will hold the tray icons, generated and embedded (PNG for
// Linux and macOS, ICO for Windows). Not built yet.
package assets
