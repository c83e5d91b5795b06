package ewkern

import (
	"math"
	"math/rand"
	"testing"
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
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 100, 257, 1031} {
		x, g := fill[T](r, n), fill[T](r, n)
		// Guard elements past len(out) must stay untouched.
		out := make([]T, n+5)
		want := make([]T, n)
		for i := range out {
			out[i] = 7
		}
		Relu(out[:n], x)
		ReluGo(want, x)
		sameBits(t, name+" Relu", n, out[:n], want)
		sameBits(t, name+" Relu guard", n, out[n:], []T{7, 7, 7, 7, 7})
		ReluGrad(out[:n], g, x)
		ReluGradGo(want, g, x)
		sameBits(t, name+" ReluGrad", n, out[:n], want)
		sameBits(t, name+" ReluGrad guard", n, out[n:], []T{7, 7, 7, 7, 7})
	}
}

func TestKernelsMatchGo(t *testing.T) {
	if !bulkOK {
		t.Log("no AVX2: the portable loops run (compared with themselves)")
	}
	testKernels[float32](t, "float32")
	testKernels[float64](t, "float64")
}

// TestSemantics pins TensorFlow's values at the special points.
func TestSemantics(t *testing.T) {
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

func BenchmarkRelu(b *testing.B) {
	x := fill[float32](rand.New(rand.NewSource(1)), 1<<16)
	out := make([]float32, len(x))
	b.Run("asm", func(b *testing.B) {
		b.SetBytes(8 << 16)
		for b.Loop() {
			Relu(out, x)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(8 << 16)
		for b.Loop() {
			ReluGo(out, x)
		}
	})
}

func BenchmarkReluGrad(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x, g := fill[float32](r, 1<<16), fill[float32](r, 1<<16)
	out := make([]float32, len(x))
	b.Run("asm", func(b *testing.B) {
		b.SetBytes(12 << 16)
		for b.Loop() {
			ReluGrad(out, g, x)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(12 << 16)
		for b.Loop() {
			ReluGradGo(out, g, x)
		}
	})
}

// TestGradLoopsMatchNaive compares the gradient loops with the float64
// formulas, in float64 (exactly up to rounding order) and float32.
func TestGradLoopsMatchNaive(t *testing.T) {
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
		for _, n := range []int{0, 1, 9, 100} {
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
