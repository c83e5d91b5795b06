package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Reductions: Sum and Mean over the axes given by an int32/int64 scalar or
// vector (TensorFlow's reduction_indices), and tapegrad.ReducedShape, the
// helper op their gradients use.
//
// Accumulation: float32 inputs are summed in float64 and rounded once
// (Mean divides in float64 before rounding); float64 in float64; int32 in
// int64, which gives TensorFlow's wrapping int32 result. Every output
// element is summed by one goroutine in a fixed order that depends only on
// the shapes, so results are bit-identical for any thread count.

// SumAttrs are the attributes of Sum and Mean.
type SumAttrs struct {
	// KeepDims keeps the reduced dimensions in the output with length 1.
	KeepDims bool `tf:"keep_dims"`
}

// MeanAttrs are the attributes of Mean, the same as Sum's.
type MeanAttrs = SumAttrs

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: "Sum",
		Doc: "sum of input over the axes in reduction_indices (int32/int64 scalar or vector, negative axes " +
			"count from the end); an empty list of axes copies the input",
		Inputs:  args("input", "reduction_indices"),
		Outputs: args("output"),
		Attrs:   SumAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: reduceKernel[float32, float64]("Sum", false),
			tensor.Float64: reduceKernel[float64, float64]("Sum", false),
			tensor.Int32:   reduceKernel[int32, int64]("Sum", false),
			tensor.Int64:   reduceKernel[int64, int64]("Sum", false),
		},
		Samples: sumSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "Mean",
		Doc: "mean of input over the axes in reduction_indices (int32/int64 scalar or vector); " +
			"the mean over an empty dimension is NaN",
		Inputs:  args("input", "reduction_indices"),
		Outputs: args("output"),
		Attrs:   SumAttrs{},
		Kernels: floatKernels(reduceKernel[float32, float64]("Mean", true), reduceKernel[float64, float64]("Mean", true)),
		Samples: meanSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "tapegrad.ReducedShape",
		Doc: "the shape input_shape would have after reducing over axes with keep_dims: " +
			"input_shape with every reduced dimension set to 1 (TensorFlow's Python math_ops.reduced_shape; " +
			"tapegrad's own op, used by the gradients of Sum and Mean)",
		Inputs:  args("input_shape", "axes"),
		Outputs: args("output"),
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Int32: reducedShapeKernel[int32], tensor.Int64: reducedShapeKernel[int64],
		},
	})
}

// redNum are the element types reductions work on.
type redNum interface {
	float32 | float64 | int32 | int64
}

// redGrain is the number of input elements per parallel chunk.
const redGrain = 1 << 15

// redQBlock is the widest column block one task sums.
const redQBlock = 2048

// redFewTasks and redMaxChunks: a reduction with fewer output tasks than
// redFewTasks and enough input is cut along the reduced axis into at most
// redMaxChunks chunks of rows.
const (
	redFewTasks  = 8
	redMaxChunks = 32
)

// redAxes validates the reduction axes for a tensor of the given rank and
// returns which dimensions are reduced.
func redAxes(op string, rank int, at *tensor.Dense) ([tensorx.MaxRank]bool, error) {
	var bitmap [tensorx.MaxRank]bool
	if r := len(at.Shape()); r > 1 {
		return bitmap, registry.Errorf(registry.ErrShape, "%s: reduction_indices must be a scalar or a vector: Shape must be at most rank 1 but is rank %d", op, r)
	}
	var buf [tensorx.MaxRank]int
	axes, err := shpIndexInput(buf[:0], op, 1, at)
	if err != nil {
		return bitmap, err
	}
	for _, a := range axes {
		if a < -rank || a >= rank {
			return bitmap, registry.Errorf(registry.ErrInvalidArgument, "%s: Invalid reduction dimension (%d for input with %d dimension(s)", op, a, rank)
		}
		if a < 0 {
			a += rank
		}
		if bitmap[a] {
			return bitmap, registry.Errorf(registry.ErrInvalidArgument, "%s: Invalid reduction arguments: Axes contains duplicate dimension: %d", op, a)
		}
		bitmap[a] = true
	}
	return bitmap, nil
}

// redPlan is a reduction with size-1 dimensions dropped and neighbouring
// dimensions of the same kind (kept or reduced) merged into runs.
type redPlan struct {
	n     int // number of runs
	size  [tensorx.MaxRank]int
	red   [tensorx.MaxRank]bool
	count int // input elements summed into each output element
}

func newRedPlan(shape []int, bitmap [tensorx.MaxRank]bool) redPlan {
	p := redPlan{count: 1}
	for i, d := range shape {
		if bitmap[i] {
			p.count *= d
		}
		if d == 1 {
			continue
		}
		if p.n > 0 && p.red[p.n-1] == bitmap[i] {
			p.size[p.n-1] *= d
			continue
		}
		p.size[p.n], p.red[p.n] = d, bitmap[i]
		p.n++
	}
	return p
}

// redOutShape appends to dst the output shape of reducing shape over
// bitmap.
func redOutShape(dst, shape []int, bitmap [tensorx.MaxRank]bool, keepDims bool) []int {
	out := dst
	for i, d := range shape {
		switch {
		case !bitmap[i]:
			out = append(out, d)
		case keepDims:
			out = append(out, 1)
		}
	}
	return out
}

func reduceKernel[T, A redNum](op string, mean bool) registry.Kernel {
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		at := attrs.(SumAttrs)
		x := in[0]
		shape := x.Shape()
		bitmap, err := redAxes(op, len(shape), in[1])
		if err != nil {
			return nil, err
		}
		var sbuf [tensorx.MaxRank]int
		out, err := kc.Output(x.Dtype(), redOutShape(sbuf[:0], shape, bitmap, at.KeepDims)...)
		if err != nil {
			return nil, err
		}
		if err := redInto[T, A](kc, data[T](x), newRedPlan(shape, bitmap), data[T](out), mean); err != nil {
			return nil, err
		}
		return kc.Results(out), nil
	}
}

// redInto writes the sums (or means) of src over the plan's reduced runs
// into out, which has one element per output position. A holds the partial
// sums.
func redInto[T, A redNum](kc *registry.KernelCtx, src []T, p redPlan, out []T, mean bool) error {
	if len(out) == 0 {
		return nil
	}
	threads := kc.NumThreads()
	// The sums go straight into out when it has the accumulator's type.
	final, direct := any(out).([]A)
	if !direct {
		var err error
		if final, err = registry.Scratch[A](kc, len(out), false); err != nil {
			return err
		}
	}
	var runs [tensorx.MaxRank]int
	var red [tensorx.MaxRank]bool
	n := p.n
	copy(runs[:], p.size[:n])
	copy(red[:], p.red[:n])
	var cur []A // the partial sums of the previous step; nil before the first
	for {
		// Reduce the innermost reduced run: [P, R, Q] -> [P, Q].
		j := -1
		for i := n - 1; i >= 0; i-- {
			if red[i] {
				j = i
				break
			}
		}
		if j < 0 {
			break
		}
		P, Q := 1, 1
		more := false // another reduced run remains before j
		for i := 0; i < j; i++ {
			P *= runs[i]
			more = more || red[i]
		}
		for i := j + 1; i < n; i++ {
			Q *= runs[i]
		}
		R := runs[j]
		dst := final
		if more {
			var err error
			if dst, err = registry.Scratch[A](kc, P*Q, false); err != nil {
				return err
			}
		}
		var err error
		if cur == nil {
			err = redMiddle(kc, src, dst, P, R, Q)
		} else {
			err = redMiddle(kc, cur, dst, P, R, Q)
		}
		if err != nil {
			return err
		}
		cur = dst
		// Remove run j; the kept runs on either side become one.
		switch {
		case j > 0 && j < n-1:
			runs[j-1] *= runs[j+1]
			copy(runs[j:], runs[j+2:n])
			copy(red[j:], red[j+2:n])
			n -= 2
		default:
			copy(runs[j:], runs[j+1:n])
			copy(red[j:], red[j+1:n])
			n--
		}
	}
	// The elementwise passes below run serially without a closure (which
	// would cost an allocation) when they fit one chunk.
	one := serial(threads, len(out), redGrain)
	if cur == nil { // nothing to reduce: a copy
		if one {
			redConvert(final, src[:len(out)])
		} else {
			parallel.For(threads, len(out), redGrain, func(lo, hi int) {
				redConvert(final[lo:hi], src[lo:hi])
			})
		}
	}
	switch {
	case mean:
		c := A(p.count)
		if one {
			redDivide(out, final, c)
		} else {
			parallel.For(threads, len(out), redGrain, func(lo, hi int) {
				redDivide(out[lo:hi], final[lo:hi], c)
			})
		}
	case !direct:
		if one {
			redConvert(out, final)
		} else {
			parallel.For(threads, len(out), redGrain, func(lo, hi int) {
				redConvert(out[lo:hi], final[lo:hi])
			})
		}
	}
	return nil
}

// redConvert sets dst[i] = D(src[i]).
func redConvert[D, S redNum](dst []D, src []S) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = D(v)
	}
}

// redDivide sets out[i] = T(sums[i] / c) (float only: 0/0 is NaN).
func redDivide[T, A redNum](out []T, sums []A, c A) {
	sums = sums[:len(out)]
	for i, v := range sums {
		out[i] = T(v / c)
	}
}

// redMiddle sums src viewed as [P, R, Q] over its middle axis into dst
// [P, Q]. Each output element is summed in order r = 0..R-1 by one task,
// or, when there are few outputs and many rows (a long reduction that one
// goroutine would do alone), in fixed chunks of rows whose partial sums are
// then added in chunk order. The choice and the chunks depend only on the
// shape, so results do not depend on the thread count.
func redMiddle[S, A redNum](kc *registry.KernelCtx, src []S, dst []A, P, R, Q int) error {
	threads := kc.NumThreads()
	if R == 0 {
		clear(dst)
		return nil
	}
	qb := min(Q, redQBlock)
	nqb := (Q + qb - 1) / qb
	if P*nqb < redFewTasks && R*Q >= 4*redGrain {
		rc := max(1, redGrain/Q, (R+redMaxChunks-1)/redMaxChunks) // rows per chunk
		nc := (R + rc - 1) / rc
		part, err := registry.Scratch[A](kc, nc*P*Q, false)
		if err != nil {
			return err
		}
		parallel.For(threads, nc, 1, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				r0, r1 := c*rc, min(R, (c+1)*rc)
				for p := 0; p < P; p++ {
					redRows(src[(p*R+r0)*Q:(p*R+r1)*Q], part[(c*P+p)*Q:(c*P+p+1)*Q], r1-r0, Q)
				}
			}
		})
		n := P * Q
		parallel.For(threads, n, max(1, redGrain/nc), func(lo, hi int) {
			d := dst[lo:hi]
			copy(d, part[lo:hi])
			for c := 1; c < nc; c++ {
				for i, v := range part[c*n+lo : c*n+hi] {
					d[i] += v
				}
			}
		})
		return nil
	}
	if Q == 1 {
		grain := max(1, redGrain/R)
		if serial(threads, P, grain) {
			redLastAxis(src, dst, R, 0, P)
		} else {
			parallel.For(threads, P, grain, func(lo, hi int) { redLastAxis(src, dst, R, lo, hi) })
		}
		return nil
	}
	grain := max(1, redGrain/(R*qb))
	if serial(threads, P*nqb, grain) {
		redBlocks(src, dst, R, Q, qb, 0, P*nqb)
	} else {
		parallel.For(threads, P*nqb, grain, func(lo, hi int) { redBlocks(src, dst, R, Q, qb, lo, hi) })
	}
	return nil
}

// redLastAxis sums the rows p in [lo, hi) of src viewed as [P, R] into
// dst[p].
func redLastAxis[S, A redNum](src []S, dst []A, R, lo, hi int) {
	for p := lo; p < hi; p++ {
		dst[p] = redSumContig[S, A](src[p*R : (p+1)*R])
	}
}

// redBlocks does redMiddle's tasks [lo, hi): task t sums a block of up to
// qb columns of one [R, Q] slice of src over its R rows.
func redBlocks[S, A redNum](src []S, dst []A, R, Q, qb, lo, hi int) {
	nqb := (Q + qb - 1) / qb
	for t := lo; t < hi; t++ {
		p, q0 := t/nqb, (t%nqb)*qb
		q1 := min(q0+qb, Q)
		base := p * R * Q
		redRows(src[base+q0:base+(R-1)*Q+q1], dst[p*Q+q0:p*Q+q1], R, Q)
	}
}

// redRows sets d[i] to the sum over r < rows of src[r*stride+i]: the
// columns of a block of rows (src starts at the block's first element).
// A single column is summed with redSumContig.
func redRows[S, A redNum](src []S, d []A, rows, stride int) {
	if stride == 1 && len(d) == 1 {
		d[0] = redSumContig[S, A](src[:rows])
		return
	}
	for i, v := range src[:len(d)] {
		d[i] = A(v)
	}
	for r := 1; r < rows; r++ {
		s := src[r*stride : r*stride+len(d)]
		for i, v := range s {
			d[i] += A(v)
		}
	}
}

// redSumContig sums x in A with four interleaved partial sums.
func redSumContig[S, A redNum](x []S) A {
	var s0, s1, s2, s3 A
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += A(v[0])
		s1 += A(v[1])
		s2 += A(v[2])
		s3 += A(v[3])
	}
	for ; i < len(x); i++ {
		s0 += A(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// ---------------------------------------------------------------------------
// tapegrad.ReducedShape.

func reducedShapeKernel[T int32 | int64](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "tapegrad.ReducedShape"
	st, at := in[0], in[1]
	if len(st.Shape()) != 1 {
		return nil, registry.Errorf(registry.ErrShape, "%s: input_shape must be a vector, got shape %s", op, shpDebug(st.Shape()))
	}
	if len(at.Shape()) > 1 {
		return nil, registry.Errorf(registry.ErrShape, "%s: axes must be a scalar or a vector, got shape %s", op, shpDebug(at.Shape()))
	}
	var buf [tensorx.MaxRank]int
	axes, err := shpIndexInput(buf[:0], op, 1, at)
	if err != nil {
		return nil, err
	}
	shape := data[T](st)
	rank := len(shape)
	out, err := kc.Output(st.Dtype(), rank)
	if err != nil {
		return nil, err
	}
	o := data[T](out)
	copy(o, shape)
	for _, a := range axes {
		if a < -rank || a >= rank {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Invalid reduction dimension (%d for input with %d dimension(s)", op, a, rank)
		}
		if a < 0 {
			a += rank
		}
		o[a] = 1
	}
	return kc.Results(out), nil
}
