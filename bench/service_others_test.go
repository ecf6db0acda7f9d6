//go:build !linux

package bench

import "testing"

func BenchmarkService(b *testing.B) {
	b.Skip("the service benchmark needs Linux: it reads /proc, holds pidfds and reaps as a child subreaper")
}

func BenchmarkServiceIdle(b *testing.B) { b.Skip(skipReason) }

func BenchmarkServiceKillStubborn(b *testing.B) {
	b.Skip("the service benchmark needs Linux: it reads /proc, holds pidfds and reaps as a child subreaper")
}
