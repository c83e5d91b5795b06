package forward

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/slicekern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// ConcatV2 (docs/spec/array.md): output = the values (two or more tensors
// of one dtype and rank >= 1, equal in every dimension but axis) joined
// along axis, a scalar int32 or int64 in [-rank, rank). TensorFlow's
// legacy concatenation of scalars is refused, as its shape inference does
// ("use tf.stack instead"). The gradient slices the upstream gradient back
// into the values' shapes; axis gets none.

func init() {
	registry.MustRegister(&registry.OpDef{Name: "ConcatV2",
		Doc:    "output = values (two or more tensors) concatenated along axis (a scalar int32/int64 in [-rank, rank))",
		Inputs: []registry.Arg{{Name: "values", Variadic: true}, {Name: "axis"}}, Outputs: args("output"),
		Kernels: elemKernels(concatKernel[float32], concatKernel[float64], concatKernel[int32], concatKernel[int64], concatKernel[bool]),
		Samples: concatSamples})
}

// elemKernels returns the kernel map of an op with kernels for every
// element type (float32, float64, int32, int64, bool).
func elemKernels(f32, f64, i32, i64, b registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: f32, tensor.Float64: f64, tensor.Int32: i32, tensor.Int64: i64, tensor.Bool: b}
}

// scalarIndex reads a scalar int32 or int64 input (an axis or dimension)
// named name, input number input of op.
func scalarIndex(op, name string, input int, t *tensor.Dense) (int, error) {
	if dt := t.Dtype(); dt != tensor.Int32 && dt != tensor.Int64 {
		return 0, registry.Errorf(registry.ErrDtype, "%s: input %d (%s) must be int32 or int64, got %v", op, input, name, dt)
	}
	if len(t.Shape()) != 0 {
		return 0, registry.Errorf(registry.ErrInvalidArgument, "%s: %s tensor should be a scalar integer, but got shape %s", op, name, shapeDebugString(t.Shape()))
	}
	var buf [1]int
	v, err := tensorx.AppendInts(buf[:0], t)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return v[0], nil
}

func concatKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	values, axisT := in[:len(in)-1], in[len(in)-1]
	if len(values) < 2 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "ConcatV2: expected at least 2 values to concatenate, got %d", len(values))
	}
	axis, err := scalarIndex("ConcatV2", "axis", len(in)-1, axisT)
	if err != nil {
		return nil, err
	}
	if err := sameDtype("ConcatV2", values[0].Dtype(), values); err != nil {
		return nil, err
	}
	s0 := values[0].Shape()
	rank := len(s0)
	if rank == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "ConcatV2: Can't concatenate scalars (use tf.stack instead)")
	}
	ax := axis
	if ax < 0 {
		ax += rank
	}
	if ax < 0 || ax >= rank {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "ConcatV2: ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %d", -rank, rank, axis)
	}
	var obuf [tensorx.MaxRank]int
	out := append(obuf[:0], s0...)
	out[ax] = 0
	for i, v := range values {
		s := v.Shape()
		if len(s) != rank {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "ConcatV2: ConcatOp : Ranks of all input tensors should match: shape[0] = %s vs. shape[%d] = %s", shapeDebugString(s0), i, shapeDebugString(s))
		}
		for j := range s {
			if j != ax && s[j] != s0[j] {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "ConcatV2: ConcatOp : Dimension %d in both shapes must be equal: shape[0] = %s vs. shape[%d] = %s", j, shapeDebugString(s0), i, shapeDebugString(s))
			}
		}
		out[ax] += s[ax]
	}
	o, err := kc.Output(values[0].Dtype(), out...)
	if err != nil {
		return nil, err
	}
	outer := 1
	for _, d := range out[:ax] {
		outer *= d
	}
	dst := data[T](o)
	if outer == 0 || len(dst) == 0 {
		return kc.Results(o), nil
	}
	dstW, col := len(dst)/outer, 0
	for _, v := range values {
		src := data[T](v)
		w := len(src) / outer
		slicekern.CopyColumns(kc.NumThreads(), dst, dstW, col, src, outer, w)
		col += w
	}
	return kc.Results(o), nil
}
