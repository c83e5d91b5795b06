package main

import (
	"runtime"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// BenchmarkW10Memory runs W10's training step and reports its memory
// (testutil.MemProbe: peak-live-MB, and peak-RSS-MB when run alone:
// go test -run '^$' -bench '^BenchmarkW10Memory$' ./cmd/bench).
func BenchmarkW10Memory(b *testing.B) {
	m, err := newW10(1)
	if err != nil {
		b.Fatal(err)
	}
	for range 3 {
		if err := m.step(); err != nil {
			b.Fatal(err)
		}
	}
	p := testutil.StartMemProbe()
	b.ResetTimer()
	for b.Loop() {
		if err := m.step(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	p.Report(b)
	runtime.KeepAlive(m)
}
