package forward

import (
	"fmt"
	"math"
	"slices"

	"github.com/chewxy/math32"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/ewkern"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Elementwise math family, with TensorFlow's names, argument order and CPU
// kernel semantics:
//
//   - binary ops with NumPy/TensorFlow broadcasting: AddV2, Sub, Mul,
//     RealDiv (see broadcast.go);
//   - unary ops: Neg, Square, Sqrt, Rsqrt, Exp, Log, Sigmoid, Tanh, Relu,
//     Relu6;
//   - BroadcastTo, Cast and L2Loss.
//
// Float math is evaluated in the element type where that is accurate:
// math32 for float32 Sqrt (correctly rounded), Log (1 ulp) and Tanh
// (2 ulps), as Eigen's float kernels are accurate to an ulp or two;
// float32 Exp and Sigmoid are computed in float64 and rounded once because
// math32.Exp is not accurate enough. float64 uses the math package.

func init() {
	for _, b := range []struct {
		name, doc string
		k32, k64  registry.Kernel
	}{
		{"AddV2", "z = x + y, broadcasting", binaryKernel("AddV2", addRows[float32]()), binaryKernel("AddV2", addRows[float64]())},
		{"Sub", "z = x - y, broadcasting", binaryKernel("Sub", subRows[float32]()), binaryKernel("Sub", subRows[float64]())},
		{"Mul", "z = x * y, broadcasting", binaryKernel("Mul", mulRows[float32]()), binaryKernel("Mul", mulRows[float64]())},
		{"RealDiv", "z = x / y, broadcasting (IEEE division: x/0 is ±Inf or NaN)", binaryKernel("RealDiv", divRows[float32]()), binaryKernel("RealDiv", divRows[float64]())},
	} {
		registry.MustRegister(&registry.OpDef{Name: b.name, Doc: b.doc,
			Inputs: args("x", "y"), Outputs: args("z"),
			Kernels: floatKernels(b.k32, b.k64), Samples: binarySamples(b.name)})
	}
	for _, u := range []struct {
		name, doc string
		op        ewUnaryOp
		in, out   string
	}{
		{"Neg", "y = -x", ewNeg, "x", "y"},
		{"Square", "y = x * x", ewSquare, "x", "y"},
		{"Sqrt", "y = sqrt(x)", ewSqrt, "x", "y"},
		{"Rsqrt", "y = 1 / sqrt(x)", ewRsqrt, "x", "y"},
		{"Exp", "y = exp(x)", ewExp, "x", "y"},
		{"Log", "y = log(x) (natural logarithm)", ewLog, "x", "y"},
		{"Sigmoid", "y = 1 / (1 + exp(-x))", ewSigmoid, "x", "y"},
		{"Tanh", "y = tanh(x)", ewTanh, "x", "y"},
		{"Relu", "activations = max(features, 0)", ewRelu, "features", "activations"},
		{"Relu6", "activations = min(max(features, 0), 6)", ewRelu6, "features", "activations"},
	} {
		registry.MustRegister(&registry.OpDef{Name: u.name, Doc: u.doc,
			Inputs: args(u.in), Outputs: args(u.out),
			Kernels: floatKernels(unaryKernel[float32](u.op), unaryKernel[float64](u.op)),
			Samples: unarySamples(u.name)})
	}
	registry.MustRegister(&registry.OpDef{Name: "BroadcastTo",
		Doc:    "output = input broadcast to shape (a 1-D int32 or int64 tensor), NumPy rules",
		Inputs: args("input", "shape"), Outputs: args("output"),
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: broadcastToKernel(copyRows[float32]()), tensor.Float64: broadcastToKernel(copyRows[float64]()),
			tensor.Int32: broadcastToKernel(copyRows[int32]()), tensor.Int64: broadcastToKernel(copyRows[int64]()),
			tensor.Bool: broadcastToKernel(copyRows[bool]()),
		},
		Samples: broadcastToSamples})
	registry.MustRegister(&registry.OpDef{Name: "Cast",
		Doc:    "y = x converted to DstT (float→int truncates toward zero, x != 0 → true, bool → 1/0)",
		Inputs: args("x"), Outputs: args("y"), Attrs: CastAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: castKernel[float32], tensor.Float64: castKernel[float64],
			tensor.Int32: castKernel[int32], tensor.Int64: castKernel[int64],
			tensor.Bool: castKernel[bool],
		},
		Samples: castSamples})
	registry.MustRegister(&registry.OpDef{Name: "L2Loss",
		Doc:    "output = sum(t^2) / 2, a scalar",
		Inputs: args("t"), Outputs: args("output"),
		Kernels: floatKernels(l2LossKernel[float32], l2LossKernel[float64]),
		Samples: l2LossSamples})
}

// ---------------------------------------------------------------------------
// Binary ops with broadcasting.

// binaryKernel returns the kernel of a broadcasting binary op whose inner
// loops are rows.
func binaryKernel[T tensorx.Float](op string, rows binRows[T]) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		x, y := in[0], in[1]
		if y.Dtype() != x.Dtype() {
			return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: input 1 (y) has dtype %v, expected %v like input 0 (x)", op, y.Dtype(), x.Dtype())
		}
		p, ok, err := newBcastPlan(x.Shape(), y.Shape())
		if !ok {
			return nil, bcastShapeError(op, x.Shape(), y.Shape())
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out, err := kc.Output(x.Dtype(), p.out()...)
		if err != nil {
			return nil, err
		}
		bcastRun(kc.NumThreads(), &p, data[T](out), data[T](x), data[T](y), rows)
		return kc.Results(out), nil
	}
}

func addRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] + b[i]
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = a + b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] + b
			}
		},
	}
}

func subRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] - b[i]
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = a - b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] - b
			}
		},
	}
}

func mulRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] * b[i]
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = a * b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] * b
			}
		},
	}
}

// divRows divides element by element; a broadcast divisor is not turned
// into a multiplication by its reciprocal, so results are those of x / y.
func divRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] / b[i]
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = a / b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] / b
			}
		},
	}
}

// ---------------------------------------------------------------------------
// Unary ops.

// ewUnaryOp names a unary elementwise op.
type ewUnaryOp uint8

const (
	ewNeg ewUnaryOp = iota
	ewSquare
	ewSqrt
	ewRsqrt
	ewExp
	ewLog
	ewSigmoid
	ewTanh
	ewRelu
	ewRelu6
)

// unaryKernel returns the kernel of a unary elementwise op.
func unaryKernel[T tensorx.Float](op ewUnaryOp) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := like(kc, in[0])
		if err != nil {
			return nil, err
		}
		x, o := data[T](in[0]), data[T](out)
		if threads := kc.NumThreads(); serial(threads, len(x), ewGrain) {
			unaryLoop(op, o, x)
		} else {
			parallel.For(threads, len(x), ewGrain, func(lo, hi int) {
				unaryLoop(op, o[lo:hi], x[lo:hi])
			})
		}
		return kc.Results(out), nil
	}
}

// unaryLoop computes out[i] = op(x[i]).
func unaryLoop[T tensorx.Float](op ewUnaryOp, out, x []T) {
	x = x[:len(out)]
	switch op {
	case ewNeg:
		for i, v := range x {
			out[i] = -v
		}
	case ewSquare:
		for i, v := range x {
			out[i] = v * v
		}
	case ewRelu:
		// max(x, 0) as std::max(x, 0): NaN and -0 pass through. Vectorised:
		// the scalar loop's branch mispredicts on half the activations.
		ewkern.Relu(out, x)
	case ewRelu6:
		for i, v := range x {
			if v < 0 {
				v = 0
			}
			if 6 < v {
				v = 6
			}
			out[i] = v
		}
	default:
		switch o := any(out).(type) {
		case []float32:
			unaryMath32(op, o, any(x).([]float32))
		case []float64:
			unaryMath64(op, o, any(x).([]float64))
		}
	}
}

// exp32 is the float32 exp of the Exp op and the softmax family, computed
// in float64 and rounded once: math32.Exp is off by up to ~14 ulps on
// [-10, 10] and ~100 ulps near overflow, worse than Eigen's float exp
// (about 1 ulp); the float64 route is within half an ulp.
func exp32(v float32) float32 {
	return float32(math.Exp(float64(v)))
}

func unaryMath32(op ewUnaryOp, out, x []float32) {
	x = x[:len(out)]
	switch op {
	case ewSqrt:
		for i, v := range x {
			out[i] = math32.Sqrt(v)
		}
	case ewRsqrt:
		for i, v := range x {
			out[i] = 1 / math32.Sqrt(v)
		}
	case ewExp:
		for i, v := range x {
			out[i] = exp32(v)
		}
	case ewLog:
		for i, v := range x {
			out[i] = math32.Log(v)
		}
	case ewSigmoid:
		// In float64, rounded once, for the same reason as Exp.
		for i, v := range x {
			out[i] = float32(sigmoid64(float64(v)))
		}
	case ewTanh:
		for i, v := range x {
			out[i] = math32.Tanh(v)
		}
	}
}

func unaryMath64(op ewUnaryOp, out, x []float64) {
	x = x[:len(out)]
	switch op {
	case ewSqrt:
		for i, v := range x {
			out[i] = math.Sqrt(v)
		}
	case ewRsqrt:
		for i, v := range x {
			out[i] = 1 / math.Sqrt(v)
		}
	case ewExp:
		for i, v := range x {
			out[i] = math.Exp(v)
		}
	case ewLog:
		for i, v := range x {
			out[i] = math.Log(v)
		}
	case ewSigmoid:
		for i, v := range x {
			out[i] = sigmoid64(v)
		}
	case ewTanh:
		for i, v := range x {
			out[i] = math.Tanh(v)
		}
	}
}

// sigmoid64 is 1 / (1 + exp(-x)), evaluated through exp(-|x|) so that it
// never overflows; NaN stays NaN.
func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// ---------------------------------------------------------------------------
// BroadcastTo.

// broadcastToKernel returns the kernel of BroadcastTo for element type T
// (rows are copyRows[T]()): the input is broadcast (NumPy rules) to the
// shape given by input 1, which must be exactly the broadcast result.
func broadcastToKernel[T tensorx.Elem](rows binRows[T]) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		x, st := in[0], in[1]
		var buf [tensorx.MaxRank]int
		target, err := shapeInput(buf[:0], "BroadcastTo", st)
		if err != nil {
			return nil, err
		}
		xs := x.Shape()
		if tensorx.SameShape(xs, target) {
			out, err := like(kc, x)
			if err != nil {
				return nil, err
			}
			tensorx.CopyData(out, x)
			return kc.Results(out), nil
		}
		if len(xs) > len(target) {
			return nil, registry.InputErrorf(registry.ErrShape, 0, "BroadcastTo: Rank of input (%d) must be no greater than rank of output shape (%d)", len(xs), len(target))
		}
		p, ok, err := newBcastPlan(xs, target)
		if !ok {
			return nil, bcastShapeError("BroadcastTo", xs, target)
		}
		if err != nil {
			return nil, fmt.Errorf("BroadcastTo: %w", err)
		}
		if !tensorx.SameShape(p.out(), target) {
			return nil, registry.InputErrorf(registry.ErrShape, 0, "BroadcastTo: Unable to broadcast tensor of shape %s to tensor of shape %s", shapeDebugString(xs), shapeDebugString(target))
		}
		out, err := kc.Output(x.Dtype(), target...)
		if err != nil {
			return nil, err
		}
		o := data[T](out)
		// The second operand has the output's shape and is never read: the
		// output itself stands in for it.
		bcastRun(kc.NumThreads(), &p, o, data[T](x), o, rows)
		return kc.Results(out), nil
	}
}

// copyRows are BroadcastTo's inner loops: out = a, b ignored.
func copyRows[T tensorx.Elem]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, _ []T) { copy(o, a) },
		sv: func(o []T, a T, _ []T) {
			for i := range o {
				o[i] = a
			}
		},
		vs: func(o, a []T, _ T) { copy(o, a) },
	}
}

// shapeInput reads a shape from a 1-D int32 or int64 tensor, appending it
// to dst, and checks that its dimensions are non-negative.
func shapeInput(dst []int, op string, st *tensor.Dense) ([]int, error) {
	if st.Dtype() != tensor.Int32 && st.Dtype() != tensor.Int64 {
		return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: shape must be an int32 or int64 tensor, got %v", op, st.Dtype())
	}
	if len(st.Shape()) != 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: shape must be a vector of {int32,int64}, got shape %s", op, shapeDebugString(st.Shape()))
	}
	dims, err := tensorx.AppendInts(dst, st)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for _, d := range dims {
		if d < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d must be >= 0 (shape %v)", op, d, slices.Clone(dims))
		}
	}
	if _, err := tensorx.Numel(dims); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return dims, nil
}

// ---------------------------------------------------------------------------
// Cast.

// CastAttrs are the attributes of Cast. TensorFlow's SrcT is the input's
// dtype and is inferred.
type CastAttrs struct {
	// DstT is the output dtype (required): float32, float64, int32, int64
	// or bool.
	DstT tensor.Dtype `tf:"DstT"`
	// Truncate, for float64 → float32, truncates the mantissa (rounds
	// toward zero) instead of rounding to nearest. It has no effect on
	// other conversions, as in TensorFlow.
	Truncate bool `tf:"Truncate"`
}

// castKernel converts a tensor of element type S to CastAttrs.DstT.
//
// Conversions follow TensorFlow's CPU kernel (C++ static_cast): float →
// integer truncates toward zero; a NaN or out-of-range float gives the
// smallest integer of the destination type (what TensorFlow's x86 kernels
// produce; C++ leaves it undefined); int64 → int32 wraps; x → bool is
// x != 0 (true for NaN); bool → number is 1 or 0; float64 → float32 rounds
// to nearest unless Truncate.
func castKernel[S tensorx.Elem](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a, ok := attrs.(CastAttrs)
	if !ok {
		return nil, registry.Errorf(registry.ErrInternal, "Cast: attrs are %T, want CastAttrs", attrs)
	}
	x := in[0]
	if a.DstT == (tensor.Dtype{}) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "Cast: attr DstT is required")
	}
	if !tensorx.Supported(a.DstT) {
		return nil, registry.Errorf(registry.ErrUnimplemented, "Cast: Cast %v to %v is not supported", x.Dtype(), a.DstT)
	}
	out, err := kc.Output(a.DstT, x.Shape()...)
	if err != nil {
		return nil, err
	}
	src := data[S](x)
	switch a.DstT {
	case tensor.Float32:
		castInto(data[float32](out), src, a.Truncate)
	case tensor.Float64:
		castInto(data[float64](out), src, false)
	case tensor.Int32:
		castInto(data[int32](out), src, false)
	case tensor.Int64:
		castInto(data[int64](out), src, false)
	case tensor.Bool:
		castInto(data[bool](out), src, false)
	}
	return kc.Results(out), nil
}

// ewNumber is the set of numeric element types.
type ewNumber interface {
	float32 | float64 | int32 | int64
}

// castInto converts src into dst (same length).
func castInto[D, S tensorx.Elem](dst []D, src []S, truncate bool) {
	switch s := any(src).(type) {
	case []bool:
		castFromBool(dst, s)
	case []float32:
		castNumber(dst, s, true)
	case []float64:
		if truncate {
			if d, ok := any(dst).([]float32); ok {
				castTruncate(d, s)
				return
			}
		}
		castNumber(dst, s, true)
	case []int32:
		castNumber(dst, s, false)
	case []int64:
		castNumber(dst, s, false)
	}
}

func castFromBool[D tensorx.Elem](dst []D, src []bool) {
	if d, ok := any(dst).([]bool); ok {
		copy(d, src)
		return
	}
	var one, zero D
	switch p := any(&one).(type) {
	case *float32:
		*p = 1
	case *float64:
		*p = 1
	case *int32:
		*p = 1
	case *int64:
		*p = 1
	}
	src = src[:len(dst)]
	for i, v := range src {
		if v {
			dst[i] = one
		} else {
			dst[i] = zero
		}
	}
}

// castNumber converts numbers; isFloat says whether S is a float type.
func castNumber[D tensorx.Elem, S ewNumber](dst []D, src []S, isFloat bool) {
	switch d := any(dst).(type) {
	case []bool:
		src = src[:len(d)]
		for i, v := range src {
			d[i] = v != 0
		}
	case []float32:
		convertNumbers(d, src)
	case []float64:
		convertNumbers(d, src)
	case []int32:
		if isFloat {
			floatToInt(d, src, -(1 << 31), 1<<31)
		} else {
			convertNumbers(d, src)
		}
	case []int64:
		if isFloat {
			floatToInt(d, src, -(1 << 63), 1<<63)
		} else {
			convertNumbers(d, src)
		}
	}
}

func convertNumbers[D, S ewNumber](dst []D, src []S) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = D(v)
	}
}

// floatToInt truncates floats toward zero; values outside [lo, hi) and NaN
// give the smallest value of D (lo).
func floatToInt[D int32 | int64, S ewNumber](dst []D, src []S, lo, hi float64) {
	src = src[:len(dst)]
	for i, v := range src {
		if f := float64(v); f >= lo && f < hi {
			dst[i] = D(v)
		} else {
			dst[i] = D(lo)
		}
	}
}

// castTruncate converts float64 to float32 by first clearing the 29
// mantissa bits float32 lacks (NaN excepted), as TensorFlow's Truncate.
func castTruncate(dst []float32, src []float64) {
	src = src[:len(dst)]
	for i, v := range src {
		if v == v {
			v = math.Float64frombits(math.Float64bits(v) &^ (1<<29 - 1))
		}
		dst[i] = float32(v)
	}
}

// ---------------------------------------------------------------------------
// L2Loss.

// l2LossKernel computes sum(t^2)/2 as a scalar. The sum is accumulated in
// float64 (also for float32 input, rounded once at the end) over fixed
// chunks combined in order, so the result does not depend on the thread
// count.
func l2LossKernel[T tensorx.Float](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	x := data[T](in[0])
	nc := parallel.Chunks(len(x), ewGrain)
	var sum float64
	if nc <= 1 {
		sum = sumSquares(x)
	} else {
		part, err := registry.Scratch[float64](kc, nc, false)
		if err != nil {
			return nil, err
		}
		parallel.ForChunks(kc.NumThreads(), len(x), ewGrain, func(c, lo, hi int) {
			part[c] = sumSquares(x[lo:hi])
		})
		for _, p := range part {
			sum += p
		}
	}
	out, err := kc.Output(in[0].Dtype())
	if err != nil {
		return nil, err
	}
	data[T](out)[0] = T(sum / 2)
	return kc.Results(out), nil
}

func sumSquares[T tensorx.Float](x []T) float64 {
	var s float64
	for _, v := range x {
		f := float64(v)
		s += f * f
	}
	return s
}
