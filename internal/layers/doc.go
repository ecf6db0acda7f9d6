// Package layers holds the test of which of tether's packages may depend
// on which: its rules (rules.go) are the layering, and TestLayers checks
// the import graph that go list reports for Linux, Windows and macOS
// against them. A package that imports upward fails the test, whose
// message names the chain of imports.
package layers
