package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/redkern"
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

// redAxes validates the reduction axes for a tensor of the given rank and
// returns which dimensions are reduced.
func redAxes(op string, rank int, at *tensor.Dense) ([tensorx.MaxRank]bool, error) {
	var bitmap [tensorx.MaxRank]bool
	if r := len(at.Shape()); r > 1 {
		return bitmap, registry.InputErrorf(registry.ErrShape, 1, "%s: reduction_indices must be a scalar or a vector: Shape must be at most rank 1 but is rank %d", op, r)
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

// kcScratch hands out a kernel context's scratch memory to the reduction
// loops (a redkern.Scratch).
type kcScratch[A redkern.Num] struct{ kc *registry.KernelCtx }

// Scratch returns n accumulators of scratch memory.
func (s kcScratch[A]) Scratch(n int) ([]A, error) { return registry.Scratch[A](s.kc, n, false) }

// reduceKernel returns the kernel of Sum (or Mean) over element type T,
// summing in A.
func reduceKernel[T, A redkern.Num](op string, mean bool) registry.Kernel {
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
		if err := redkern.Into(kc.NumThreads(), kcScratch[A]{kc}, data[T](x), redkern.NewPlan(shape, bitmap), data[T](out), mean); err != nil {
			return nil, err
		}
		return kc.Results(out), nil
	}
}

// ---------------------------------------------------------------------------
// tapegrad.ReducedShape.

func reducedShapeKernel[T int32 | int64](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "tapegrad.ReducedShape"
	st, at := in[0], in[1]
	if len(st.Shape()) != 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 0, "%s: input_shape must be a vector, got shape %s", op, shpDebug(st.Shape()))
	}
	if len(at.Shape()) > 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: axes must be a scalar or a vector, got shape %s", op, shpDebug(at.Shape()))
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
