package autodiff_test

import (
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
)

// BenchmarkTapeOverheadPerOp measures the tape's cost of recording one op
// (a one-element Identity, so the kernel is negligible), forward only and
// with the backward pass, on a reused tape.
func BenchmarkTapeOverheadPerOp(b *testing.B) {
	const ops = 100
	x0 := vec(b, 1)
	b.Run("forward", func(b *testing.B) {
		tp := autodiff.NewTape()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			tp.Reset()
			x := tp.Watch(x0)
			for j := 0; j < ops; j++ {
				x = tp.Apply("Identity", nil, x)[0]
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ops), "ns/recorded-op")
	})
	b.Run("forward+backward", func(b *testing.B) {
		tp := autodiff.NewTape()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			tp.Reset()
			x0v := tp.Watch(x0)
			x := x0v
			for j := 0; j < ops; j++ {
				x = tp.Apply("Identity", nil, x)[0]
			}
			if _, err := tp.Grad([]autodiff.Value{x}, []autodiff.Value{x0v}, nil, autodiff.GradOpts{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ops), "ns/recorded-op")
	})
}
