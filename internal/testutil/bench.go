package testutil

import "testing"

// BenchBytes runs step once to warm its buffers, then b.N times on the
// benchmark's clock, counting bytes bytes moved per step: it reports the
// wall time per step as ms/op and the bandwidth as GB/s.
func BenchBytes(b *testing.B, bytes float64, step func()) {
	step() // warm the buffers
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e3, "ms/op")
	b.ReportMetric(bytes/sec/1e9, "GB/s")
}
