// Package tray will hold the system tray: a pure menu model and its
// fyne.io/systray binding. It is a thin client of the local API and owns no
// agent. Not built yet: "tether tray" says so.
package tray
