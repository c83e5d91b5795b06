// Package ewkern has vectorised loops for the elementwise ops whose scalar
// Go loops branch on the data: Relu and ReluGrad. A data-dependent branch
// mispredicts for about half the elements of a trained network's
// activations, which made them the slowest loops of a training step.
//
// The assembly kernels keep TensorFlow's semantics bit for bit: Relu is
// std::max(x, 0) (NaN and −0 pass through), ReluGrad is
// gradients · (features > 0) as a 0/1 factor (a NaN or Inf gradient times
// 0 stays NaN, a negative gradient times 0 is −0). The portable loops in
// this file are the reference of the tests and run without AVX2.
package ewkern

// Float is the element type of the kernels.
type Float interface{ ~float32 | ~float64 }

// block is the element count the assembly handles per iteration of its
// narrow loop (one 256-bit register of float32); shorter tails run in Go.
const block = 8

// Relu sets out[i] = max(x[i], 0) for i < len(out); len(x) >= len(out).
func Relu[T Float](out, x []T) {
	x = x[:len(out)]
	n := 0
	if Enabled && len(out) >= block {
		switch o := any(out).(type) {
		case []float32:
			n = len(o) &^ (block - 1)
			reluF32(&o[0], &any(x).([]float32)[0], n)
		case []float64:
			n = len(o) &^ (block/2 - 1)
			reluF64(&o[0], &any(x).([]float64)[0], n)
		}
	}
	ReluGo(out[n:], x[n:])
}

// ReluGrad sets out[i] = g[i] · (f[i] > 0 ? 1 : 0) for i < len(out);
// len(g), len(f) >= len(out).
func ReluGrad[T Float](out, g, f []T) {
	g, f = g[:len(out)], f[:len(out)]
	n := 0
	if Enabled && len(out) >= block {
		switch o := any(out).(type) {
		case []float32:
			n = len(o) &^ (block - 1)
			reluGradF32(&o[0], &any(g).([]float32)[0], &any(f).([]float32)[0], n)
		case []float64:
			n = len(o) &^ (block/2 - 1)
			reluGradF64(&o[0], &any(g).([]float64)[0], &any(f).([]float64)[0], n)
		}
	}
	ReluGradGo(out[n:], g[n:], f[n:])
}

// ReluGo is the portable Relu loop.
func ReluGo[T Float](out, x []T) {
	x = x[:len(out)]
	for i, v := range x {
		if v < 0 {
			v = 0
		}
		out[i] = v
	}
}

// ReluGradGo is the portable ReluGrad loop.
func ReluGradGo[T Float](out, g, f []T) {
	g, f = g[:len(out)], f[:len(out)]
	for i := range out {
		var m T
		if f[i] > 0 {
			m = 1
		}
		out[i] = g[i] * m
	}
}
