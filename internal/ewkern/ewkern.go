// Package ewkern holds the loops of the elementwise ops that TensorFlow
// also registers as gradient kernels: Relu and ReluGrad, which have AVX2
// assembly, and the gradient loops SqrtGrad, RsqrtGrad, SigmoidGrad,
// TanhGrad and Relu6Grad, which are plain Go. Every function writes its
// destination first (out), reads equal-length operands and does not
// allocate.
//
// Relu and ReluGrad branch on the data in scalar Go, and a data-dependent
// branch mispredicts for about half the elements of a trained network's
// activations, which made them the slowest loops of a training step. Their
// assembly keeps TensorFlow's semantics bit for bit: Relu is
// std::max(x, 0) (NaN and −0 pass through), ReluGrad is
// gradients · (features > 0) as a 0/1 factor (a NaN or Inf gradient times
// 0 stays NaN, a negative gradient times 0 is −0). ReluGo and ReluGradGo
// are the portable loops, the reference of the tests.
//
// The assembly routines (reluF32, reluF64, reluGradF32, reluGradF64) have
// Go twins of the same name and signature, chosen at build time: the
// assembly on amd64 (kernel_amd64.go), the Go loops under the noasm tag and
// on other architectures (kernel_other.go). Relu and ReluGrad pick the
// routine's bulk path themselves when the CPU allows it; callers never ask.
package ewkern

// Float is the element type of the kernels.
type Float interface{ ~float32 | ~float64 }

// block is the element count the assembly handles per iteration of its
// narrow loop (one 256-bit register of float32); shorter tails run in Go.
const block = 8

// Relu sets out[i] = max(x[i], 0) for i < len(out); len(x) >= len(out).
// It equals ReluGo bit for bit.
func Relu[T Float](out, x []T) {
	x = x[:len(out)]
	n := 0
	if bulkOK && len(out) >= block {
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
// len(g), len(f) >= len(out). It equals ReluGradGo bit for bit.
func ReluGrad[T Float](out, g, f []T) {
	g, f = g[:len(out)], f[:len(out)]
	n := 0
	if bulkOK && len(out) >= block {
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

// ReluGo is the portable Relu loop:
//
//	for i, v := range x { if v < 0 { v = 0 }; out[i] = v }
func ReluGo[T Float](out, x []T) {
	x = x[:len(out)]
	for i, v := range x {
		if v < 0 {
			v = 0
		}
		out[i] = v
	}
}

// ReluGradGo is the portable ReluGrad loop:
//
//	for i := range out { var m T; if f[i] > 0 { m = 1 }; out[i] = g[i] * m }
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

// The gradient loops below follow the order of operations of TensorFlow's
// vectorised CPU kernels (cwise_ops_gradients.h, relu_op_functor.h). Each
// reads len(out) elements of its operands.

// SqrtGrad sets out[i] = (0.5 / y[i]) · dy[i], the gradient of y = sqrt(x),
// and 0 where dy[i] == 0 (TensorFlow's mul_no_nan: no NaN from y == 0
// where nothing flows).
func SqrtGrad[T Float](out, y, dy []T) {
	y, dy = y[:len(out)], dy[:len(out)]
	for i := range out {
		y, dy := y[i], dy[i]
		if dy == 0 {
			out[i] = 0
		} else {
			out[i] = (T(0.5) / y) * dy
		}
	}
}

// RsqrtGrad sets out[i] = (−0.5 · (y·y)) · (y·dy), the gradient of
// y = 1/sqrt(x), and 0 where dy[i] == 0 or y·dy == 0.
func RsqrtGrad[T Float](out, y, dy []T) {
	y, dy = y[:len(out)], dy[:len(out)]
	for i := range out {
		y, dy := y[i], dy[i]
		t := y * dy
		if dy == 0 || t == 0 {
			out[i] = 0
		} else {
			out[i] = (T(-0.5) * (y * y)) * t
		}
	}
}

// SigmoidGrad sets out[i] = dy[i] · (y[i] · (1 − y[i])), the gradient of
// y = sigmoid(x).
func SigmoidGrad[T Float](out, y, dy []T) {
	y, dy = y[:len(out)], dy[:len(out)]
	for i := range out {
		y := y[i]
		out[i] = dy[i] * (y * (1 - y))
	}
}

// TanhGrad sets out[i] = dy[i] · (1 − y[i]·y[i]), the gradient of
// y = tanh(x).
func TanhGrad[T Float](out, y, dy []T) {
	y, dy = y[:len(out)], dy[:len(out)]
	for i := range out {
		y := y[i]
		out[i] = dy[i] * (1 - y*y)
	}
}

// Relu6Grad sets out[i] = g[i] · (0 < f[i] < 6 ? 1 : 0), the gradient of
// Relu6 (a NaN or Inf gradient times 0 stays NaN, as in TensorFlow).
func Relu6Grad[T Float](out, g, f []T) {
	g, f = g[:len(out)], f[:len(out)]
	for i := range out {
		var m T
		if v := f[i]; v > 0 && v < 6 {
			m = 1
		}
		out[i] = g[i] * m
	}
}
