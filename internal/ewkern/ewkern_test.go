package ewkern

import (
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// special values where the semantics matter: NaN, ±Inf, ±0, denormals.
func specials() []float64 {
	return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-40, -1e-40, 5e-324, -5e-324, 1, -1}
}

func fill[T Float](r *rand.Rand, n int) []T {
	s := specials()
	v := make([]T, n)
	for i := range v {
		if r.Intn(4) == 0 {
			v[i] = T(s[r.Intn(len(s))])
		} else {
			v[i] = T(r.NormFloat64())
		}
	}
	return v
}

func sameBits[T Float](t *testing.T, what string, n int, got, want []T) {
	t.Helper()
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
			t.Fatalf("%s n=%d: element %d = %v (bits %x), want %v (bits %x)", what, n, i, g, math.Float64bits(g), w, math.Float64bits(w))
		}
	}
}

func testKernels[T Float](t *testing.T, name string) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 257, 1031, 1<<14 - 1, 1 << 14, 1<<14 + 9} {
		for off := range 3 {
			x, g := fill[T](r, n+off), fill[T](r, n+off)
			x, g = x[off:], g[off:]
			// Guard elements before and past out must stay untouched.
			buf := make([]T, off+n+5)
			for i := range buf {
				buf[i] = 7
			}
			out := buf[off : off+n]
			want := make([]T, n)
			guards := func(what string) {
				t.Helper()
				sameBits(t, what+" guard before", n, buf[:off], []T{7, 7, 7}[:off])
				sameBits(t, what+" guard after", n, buf[off+n:], []T{7, 7, 7, 7, 7})
			}
			Relu(out, x)
			ReluGo(want, x)
			sameBits(t, name+" Relu", n, out, want)
			guards(name + " Relu")
			ReluGrad(out, g, x)
			ReluGradGo(want, g, x)
			sameBits(t, name+" ReluGrad", n, out, want)
			guards(name + " ReluGrad")
			copy(out, g)
			AddTo(out, x)
			// The reference: each sum in float64, rounded to T (exact for
			// float32, whose sums float64 holds without rounding).
			for i := range want {
				want[i] = T(float64(g[i]) + float64(x[i]))
			}
			sameBits(t, name+" AddTo", n, out, want)
			guards(name + " AddTo")
			copy(want, g)
			AddToGo(want, x)
			sameBits(t, name+" AddToGo", n, want, out)
		}
	}
}

// tiers returns the tiers this CPU and build run, logging which run and
// which do not.
func tiers(t testing.TB) []cpu.ISA {
	t.Helper()
	var run []cpu.ISA
	for _, isa := range cpu.ISAs {
		if cpu.Has(isa) {
			t.Logf("tier %-6v: run", isa)
			run = append(run, isa)
		} else {
			t.Logf("tier %-6v: NOT RUN: this CPU or build lacks it (cpu.Max() = %v)", isa, cpu.Max())
		}
	}
	return run
}

// withTier runs f with the package's tier set to isa.
func withTier(isa cpu.ISA, f func()) {
	old := tier
	tier = isa
	defer func() { tier = old }()
	f()
}

func TestKernelsMatchGo(t *testing.T) {
	for _, isa := range tiers(t) {
		withTier(isa, func() {
			testKernels[float32](t, isa.String()+" float32")
			testKernels[float64](t, isa.String()+" float64")
		})
	}
}

// TestSemantics pins TensorFlow's values at the special points.
func TestSemantics(t *testing.T) {
	for _, isa := range tiers(t) {
		withTier(isa, func() { testSemantics(t) })
	}
}

func testSemantics(t *testing.T) {
	negZero := math.Copysign(0, -1)
	x := []float64{math.NaN(), math.Inf(-1), -1, negZero, 0, 2, math.Inf(1), 0.5}
	wantRelu := []float64{math.NaN(), 0, 0, negZero, 0, 2, math.Inf(1), 0.5}
	g := []float64{3, math.NaN(), -2, 4, math.Inf(1), -5, 6, 7}
	wantGrad := []float64{0, math.NaN(), negZero, 0, math.NaN(), -5, 6, 7}
	out := make([]float64, len(x))
	Relu(out, x)
	sameBits(t, "Relu", len(x), out, wantRelu)
	ReluGrad(out, g, x)
	sameBits(t, "ReluGrad", len(x), out, wantGrad)
	out32 := make([]float32, len(x))
	x32, g32 := make([]float32, len(x)), make([]float32, len(x))
	for i := range x {
		x32[i], g32[i] = float32(x[i]), float32(g[i])
	}
	Relu(out32, x32)
	for i := range out32 {
		out[i] = float64(out32[i])
	}
	sameBits(t, "Relu float32", len(x), out, wantRelu)
	ReluGrad(out32, g32, x32)
	for i := range out32 {
		out[i] = float64(out32[i])
	}
	sameBits(t, "ReluGrad float32", len(x), out, wantGrad)
}

// benchBulk runs f under every tier this CPU has, as sub-benchmarks named
// by tier, then the portable loop as "go-loop".
func benchBulk(b *testing.B, bytes int64, f, goLoop func()) {
	for _, isa := range tiers(b) {
		b.Run(isa.String(), func(b *testing.B) {
			withTier(isa, func() {
				b.SetBytes(bytes)
				for b.Loop() {
					f()
				}
			})
		})
	}
	b.Run("go-loop", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			goLoop()
		}
	})
}

func BenchmarkRelu(b *testing.B) {
	x := fill[float32](rand.New(rand.NewSource(1)), 1<<16)
	out := make([]float32, len(x))
	benchBulk(b, 8<<16, func() { Relu(out, x) }, func() { ReluGo(out, x) })
}

func BenchmarkReluGrad(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x, g := fill[float32](r, 1<<16), fill[float32](r, 1<<16)
	out := make([]float32, len(x))
	benchBulk(b, 12<<16, func() { ReluGrad(out, g, x) }, func() { ReluGradGo(out, g, x) })
}

// BenchmarkReluSmall is Relu on 1000 elements (a tail on every tier), in
// L1.
func BenchmarkReluSmall(b *testing.B) {
	x := fill[float32](rand.New(rand.NewSource(1)), 1000)
	out := make([]float32, len(x))
	benchBulk(b, 8*1000, func() { Relu(out, x) }, func() { ReluGo(out, x) })
}

// TestGradLoopsMatchNaive compares the gradient loops with the float64
// formulas, in float64 (exactly up to rounding order) and float32.
func TestGradLoopsMatchNaive(t *testing.T) {
	for _, isa := range tiers(t) {
		withTier(isa, func() { testGradLoopsMatchNaive(t) })
	}
}

func testGradLoopsMatchNaive(t *testing.T) {
	ref := map[string]struct {
		f32 func(out, a, b []float32)
		f64 func(out, a, b []float64)
		f   func(a, b float64) float64
	}{
		"SqrtGrad": {SqrtGrad[float32], SqrtGrad[float64], func(y, dy float64) float64 {
			if dy == 0 {
				return 0
			}
			return dy * 0.5 / y
		}},
		"RsqrtGrad": {RsqrtGrad[float32], RsqrtGrad[float64], func(y, dy float64) float64 {
			if dy == 0 || y == 0 {
				return 0
			}
			return -0.5 * dy * y * y * y
		}},
		"SigmoidGrad": {SigmoidGrad[float32], SigmoidGrad[float64], func(y, dy float64) float64 { return dy * y * (1 - y) }},
		"TanhGrad":    {TanhGrad[float32], TanhGrad[float64], func(y, dy float64) float64 { return dy * (1 - y*y) }},
		"ReluGrad": {ReluGrad[float32], ReluGrad[float64], func(g, f float64) float64 {
			if f > 0 {
				return g
			}
			return g * 0
		}},
		"Relu6Grad": {Relu6Grad[float32], Relu6Grad[float64], func(g, f float64) float64 {
			if f > 0 && f < 6 {
				return g
			}
			return g * 0
		}},
	}
	r := rand.New(rand.NewSource(6))
	for name, k := range ref {
		for _, n := range []int{0, 1, 9, 17, 100} {
			a, b := make([]float64, n), make([]float64, n)
			a32, b32 := make([]float32, n), make([]float32, n)
			for i := range a {
				a32[i], b32[i] = float32(r.Float64()*4-2), float32(r.Float64()*10-2)
				a[i], b[i] = float64(a32[i]), float64(b32[i])
			}
			out, out32 := make([]float64, n), make([]float32, n)
			k.f64(out, a, b)
			k.f32(out32, a32, b32)
			for i := range out {
				want := k.f(a[i], b[i])
				if math.Abs(out[i]-want) > 1e-15*(1+math.Abs(want)) {
					t.Fatalf("%s float64 n=%d element %d = %v, want %v", name, n, i, out[i], want)
				}
				if math.Abs(float64(out32[i])-want) > 1e-6*(1+math.Abs(want)) {
					t.Fatalf("%s float32 n=%d element %d = %v, want %v", name, n, i, out32[i], want)
				}
			}
		}
	}
}
