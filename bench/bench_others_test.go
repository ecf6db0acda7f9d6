//go:build !linux

package bench

import "testing"

const skipReason = "the lifetime benchmarks need Linux: pidfds, /proc and a child subreaper"

func BenchmarkOwnerKillCleanup(b *testing.B) { b.Skip(skipReason) }

func BenchmarkStartToReady(b *testing.B) { b.Skip(skipReason) }

func BenchmarkGuardianIdle(b *testing.B) { b.Skip(skipReason) }
