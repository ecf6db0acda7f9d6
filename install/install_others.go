//go:build !linux && !darwin && !windows

package install

import (
	"fmt"
	"runtime"
)

// Elsewhere tether has no login service or tray autostart to register.

func unsupported() error {
	return fmt.Errorf("%w: tether cannot register itself on %s", ErrNoServiceManager, runtime.GOOS)
}

func install(target) (Result, error)       { return Result{}, unsupported() }
func uninstall(target) (Result, error)     { return Result{}, unsupported() }
func start(target) error                   { return unsupported() }
func stop(target) error                    { return unsupported() }
func status(target) (StatusInfo, error)    { return StatusInfo{State: StateUnknown}, unsupported() }
func installTray(target) (Result, error)   { return Result{}, unsupported() }
func uninstallTray(target) (Result, error) { return Result{}, unsupported() }
func trayInstalled(target) (bool, error)   { return false, unsupported() }
func disable(target) (Result, error)       { return Result{}, unsupported() }
func installedSettings(target) (Settings, bool, error) {
	return Settings{}, false, unsupported()
}
