//go:build !unix && !windows

package tray

// clipboardCommand: no clipboard here.
func clipboardCommand(string) ([]string, string, error) { return nil, "", errNoClipboard }
