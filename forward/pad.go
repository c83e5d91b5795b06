package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/slicekern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Pad and PadV2 (docs/spec/array.md): output = input with paddings[i][0]
// elements before and paddings[i][1] after it along every dimension i,
// filled with 0 (Pad) or with the scalar constant_values (PadV2).
// paddings is an int32 or int64 matrix [rank(input), 2] of non-negative
// entries. Checks and messages are TensorFlow's (pad_op.cc). The gradient
// slices the input's part out of the upstream gradient; paddings and
// constant_values get none (TensorFlow's _PadGrad).

func init() {
	registry.MustRegister(&registry.OpDef{Name: "Pad",
		Doc:    "output = input padded with zeros: paddings[i] = (before, after) along dimension i (an int32/int64 [rank, 2] matrix)",
		Inputs: args("input", "paddings"), Outputs: args("output"),
		Kernels: elemKernels(padKernel[float32], padKernel[float64], padKernel[int32], padKernel[int64], padKernel[bool]),
		Samples: padSamples})
	registry.MustRegister(&registry.OpDef{Name: "PadV2",
		Doc:    "output = input padded with the scalar constant_values: paddings[i] = (before, after) along dimension i",
		Inputs: args("input", "paddings", "constant_values"), Outputs: args("output"),
		Kernels: elemKernels(padKernel[float32], padKernel[float64], padKernel[int32], padKernel[int64], padKernel[bool]),
		Samples: padV2Samples})
}

func padKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	op := "Pad"
	if len(in) == 3 {
		op = "PadV2"
	}
	x, pt := in[0], in[1]
	shape := x.Shape()
	rank := len(shape)
	ps := pt.Shape()
	if len(ps) != 2 || ps[1] != 2 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: paddings must be a matrix with 2 columns: %s", op, shapeDebugString(ps))
	}
	if ps[0] != rank {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: The first dimension of paddings must be the rank of inputs%s, %s", op, shapeDebugString(ps), shapeDebugString(shape))
	}
	var pbuf [2 * tensorx.MaxRank]int
	pads, err := shpIndexInput(pbuf[:0], op, 1, pt)
	if err != nil {
		return nil, err
	}
	var fill T
	if op == "PadV2" {
		cv := in[2]
		if cv.Dtype() != x.Dtype() {
			return nil, registry.Errorf(registry.ErrDtype, "PadV2: input 2 (constant_values) has dtype %v, expected %v like input 0 (input)", cv.Dtype(), x.Dtype())
		}
		if len(cv.Shape()) != 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "PadV2: constant_values must be a scalar. Shape of constant_values is: %s", shapeDebugString(cv.Shape()))
		}
		fill = data[T](cv)[0]
	}
	var obuf, bbuf, sbuf [tensorx.MaxRank]int
	out := obuf[:rank]
	begin := bbuf[:rank]
	for i, d := range shape {
		before, after := pads[2*i], pads[2*i+1]
		if before < 0 || after < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Paddings must be non-negative: %d %d", op, before, after)
		}
		out[i] = before + d + after
		begin[i] = before
	}
	if _, err := tensorx.Numel(out); err != nil {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %v", op, err)
	}
	o, err := kc.Output(x.Dtype(), out...)
	if err != nil {
		return nil, err
	}
	dst := data[T](o)
	slicekern.Fill(kc.NumThreads(), dst, fill)
	slicekern.Scatter(kc.NumThreads(), dst, data[T](x), out, begin, ones(sbuf[:0], rank), shape)
	return kc.Results(o), nil
}
