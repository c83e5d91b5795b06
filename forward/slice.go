package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/slicekern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Slice (docs/spec/array.md): output = input[begin[i] : begin[i]+size[i]]
// along every dimension i; begin and size are int32 or int64 vectors (the
// same dtype) of length rank(input), size[i] = -1 meaning "to the end".
// Checks and messages are TensorFlow's (slice_op.cc). The gradient is
// tapegrad.SliceGrad (package backward), the upstream gradient placed at
// begin in zeros of the input's shape.

func init() {
	registry.MustRegister(&registry.OpDef{Name: "Slice",
		Doc:    "output = input[begin : begin+size] (begin, size: int32/int64 vectors; size -1 takes the rest of a dimension)",
		Inputs: args("input", "begin", "size"), Outputs: args("output"),
		Kernels: elemKernels(sliceKernel[float32], sliceKernel[float64], sliceKernel[int32], sliceKernel[int64], sliceKernel[bool]),
		Samples: sliceSamples})
}

// sliceBox validates Slice's begin and size for an input of the given
// shape, with TensorFlow's checks and messages (op names the op in
// errors), and returns begin and the resolved sizes (-1 replaced), each
// appended to its own dst slice (stack arrays of the caller's).
func sliceBox(op string, shape []int, beginT, sizeT *tensor.Dense, beginDst, sizeDst []int) (begin, size []int, err error) {
	if beginT.Dtype() != sizeT.Dtype() {
		return nil, nil, registry.Errorf(registry.ErrDtype, "%s: begin and size must have the same dtype, got %v and %v", op, beginT.Dtype(), sizeT.Dtype())
	}
	rank := len(shape)
	if len(beginT.Shape()) != 1 || len(sizeT.Shape()) != 1 || beginT.Shape()[0] != rank || sizeT.Shape()[0] != rank {
		return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected begin and size arguments to be 1-D tensors of size %d, but got shapes %s and %s instead.",
			op, rank, shapeDebugString(beginT.Shape()), shapeDebugString(sizeT.Shape()))
	}
	if begin, err = shpIndexInput(beginDst, op, 1, beginT); err != nil {
		return nil, nil, err
	}
	if size, err = shpIndexInput(sizeDst, op, 2, sizeT); err != nil {
		return nil, nil, err
	}
	for i := range size {
		if size[i] == -1 {
			size[i] = shape[i] - begin[i]
		}
	}
	for i, d := range shape {
		b, s := begin[i], size[i]
		if d == 0 {
			if b != 0 || s != 0 {
				return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected begin[%d] == 0 (got %d) and size[%d] == 0 (got %d) when input.dim_size(%d) == 0", op, i, b, i, s, i)
			}
			continue
		}
		if b < 0 || b > d {
			return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected begin[%d] in [0, %d], but got %d", op, i, d, b)
		}
		if s < 0 || b+s > d {
			return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected size[%d] in [0, %d], but got %d", op, i, d-b, s)
		}
	}
	return begin, size, nil
}

// ones returns n ones in dst (a stack array of the caller's).
func ones(dst []int, n int) []int {
	for range n {
		dst = append(dst, 1)
	}
	return dst
}

func sliceKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	x := in[0]
	shape := x.Shape()
	var bbuf, sbuf, obuf [tensorx.MaxRank]int
	begin, size, err := sliceBox("Slice", shape, in[1], in[2], bbuf[:0], sbuf[:0])
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(x.Dtype(), size...)
	if err != nil {
		return nil, err
	}
	slicekern.Gather(kc.NumThreads(), data[T](out), data[T](x), shape, begin, ones(obuf[:0], len(shape)), size)
	return kc.Results(out), nil
}
