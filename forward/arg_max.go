package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/redkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// ArgMax and ArgMin (docs/spec/array.md): the index of the largest
// (smallest) element along dimension (a scalar int32 or int64 in
// [-rank, rank)), as an int32 or int64 tensor (attr output_type, default
// int64) of the input's shape without that dimension. Ties give the first
// index; NaNs are skipped (Eigen's sequential argmax: an element replaces
// the running extreme only when strictly greater). The dimension must not
// be empty. Not differentiable (TensorFlow's gradient is None).

// ArgMaxAttrs are the attributes of ArgMax and ArgMin.
type ArgMaxAttrs struct {
	// OutputType is the index dtype, int32 or int64 (default).
	OutputType tensor.Dtype `tf:"output_type" default:"int64"`
}

func init() {
	for _, o := range []struct {
		name, doc string
		min       bool
	}{
		{"ArgMax", "output = the index of the first largest element of input along dimension", false},
		{"ArgMin", "output = the index of the first smallest element of input along dimension", true},
	} {
		registry.MustRegister(&registry.OpDef{Name: o.name, Doc: o.doc,
			Inputs: args("input", "dimension"), Outputs: args("output"), Attrs: ArgMaxAttrs{},
			Kernels: numKernels(argKernel[float32](o.name, o.min), argKernel[float64](o.name, o.min),
				argKernel[int32](o.name, o.min), argKernel[int64](o.name, o.min))})
	}
}

func argKernel[T redkern.Num](op string, min bool) registry.Kernel {
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a := attrs.(ArgMaxAttrs)
		if a.OutputType != tensor.Int32 && a.OutputType != tensor.Int64 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: output_type must be int32 or int64, got %v", op, a.OutputType)
		}
		x := in[0]
		if len(in[1].Shape()) != 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: dim must be a scalar, but received tensor of shape: %s", op, shapeDebugString(in[1].Shape()))
		}
		dim, err := scalarIndex(op, "dimension", 1, in[1])
		if err != nil {
			return nil, err
		}
		shape := x.Shape()
		rank := len(shape)
		axis := dim
		if axis < 0 {
			axis += rank
		}
		if axis < 0 || axis >= rank {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected dimension in the range [%d, %d), but got %d", op, -rank, rank, dim)
		}
		if shape[axis] == 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Reduction axis %d is empty in shape %s", op, dim, shapeDebugString(shape))
		}
		var obuf [tensorx.MaxRank]int
		outShape := append(append(obuf[:0], shape[:axis]...), shape[axis+1:]...)
		out, err := kc.Output(a.OutputType, outShape...)
		if err != nil {
			return nil, err
		}
		outer, inner := 1, 1
		for _, d := range shape[:axis] {
			outer *= d
		}
		for _, d := range shape[axis+1:] {
			inner *= d
		}
		xv := data[T](x)
		if a.OutputType == tensor.Int32 {
			redkern.ArgMax(kc.NumThreads(), data[int32](out), xv, outer, shape[axis], inner, min)
		} else {
			redkern.ArgMax(kc.NumThreads(), data[int64](out), xv, outer, shape[axis], inner, min)
		}
		return kc.Results(out), nil
	}
}
