//go:build !linux

package tray

import "context"

// watchSleep: only Linux's logind announces suspends to the tray here;
// elsewhere nothing is held back.
func watchSleep(context.Context, chan<- bool) {}
