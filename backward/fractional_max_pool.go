package backward

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// FractionalMaxPool's gradient op FractionalMaxPoolGrad, its adjoint in
// out_backprop tapegrad.FractionalMaxPoolGradGrad, and the gradients of
// the three (docs/spec/fractional_avg_pool.md; tensorflow/python/ops/nn_grad.py):
//
//   - FractionalMaxPool → FractionalMaxPoolGrad(value, output, dy,
//     row_pooling_sequence, col_pooling_sequence). As TensorFlow.
//   - FractionalMaxPoolGrad (beyond TensorFlow): linear in out_backprop,
//     whose gradient gathers the upstream gradient at each cell's maximum:
//     tapegrad.FractionalMaxPoolGradGrad, whose gradient is
//     FractionalMaxPoolGrad again. orig_input and orig_output get zero
//     gradient (nil), as TensorFlow's MaxPoolGrad gradient gives them: the
//     argmax is locally constant away from ties.
//
// Both gradient ops find each cell's first maximum in row-major order
// with the scan of FractionalMaxPool (a greater element replaces the
// current maximum) and refuse an orig_output that is not the max pooling
// of orig_input, as TensorFlow's kernel does. Every gradient call forwards
// the op's overlapping attr; integer inputs get no gradient.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: fpMaxGradName,
		Doc: "gradient of FractionalMaxPool: each out_backprop value added to the input position of its cell's first maximum " +
			"(row-major scan); orig_output must be the max pooling of orig_input",
		Inputs:  args("orig_input", "orig_output", "out_backprop", "row_pooling_sequence", "col_pooling_sequence"),
		Outputs: args("output"),
		Attrs:   forward.FractionalPoolGradAttrs{},
		Kernels: fpKernels(fpMaxGradKernel[float32], fpMaxGradKernel[float64], fpMaxGradKernel[int32], fpMaxGradKernel[int64]),
		Samples: fpMaxGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpMaxGradGradName,
		Doc: "grad (shaped like orig_input) gathered at each cell's first maximum, shaped like orig_output: the gradient of " +
			"FractionalMaxPoolGrad with respect to out_backprop (tapegrad op, beyond TensorFlow)",
		Inputs:  args("orig_input", "orig_output", "grad", "row_pooling_sequence", "col_pooling_sequence"),
		Outputs: args("output"),
		Attrs:   forward.FractionalPoolGradAttrs{},
		Kernels: fpKernels(fpMaxGradGradKernel[float32], fpMaxGradGradKernel[float64], fpMaxGradGradKernel[int32], fpMaxGradGradKernel[int64]),
		Samples: fpMaxGradGradSamples,
	})
	registry.MustSetGradient(forward.OpFractionalMaxPool, fpMaxPoolGrad)
	registry.MustSetGradient(fpMaxGradName, fpMaxPoolGradGrad)
	registry.MustSetGradient(fpMaxGradGradName, fpMaxPoolGradGradGrad)
}

// fpMaxGradCheck validates the inputs of FractionalMaxPoolGrad and
// tapegrad.FractionalMaxPoolGradGrad (in[2] is out_backprop, shaped like
// orig_output, or grad, shaped like orig_input) and returns the read
// sequence entries.
func fpMaxGradCheck(op string, in []*tensor.Dense, overlapping bool) (rows, cols []int64, err error) {
	x, y, g := in[0], in[1], in[2]
	if x.Dims() != 4 {
		return nil, nil, registry.NamedInputErrorf(registry.ErrShape, op, "orig_input", "%s: orig_input should be a tensor of rank 4, got shape %v", op, x.Shape())
	}
	if x.Shape().TotalSize() == 0 {
		return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: orig_input must not be empty, got shape %v", op, x.Shape())
	}
	if y.Dims() != 4 {
		return nil, nil, registry.NamedInputErrorf(registry.ErrShape, op, "orig_output", "%s: orig_output should be a tensor of rank 4, got shape %v", op, y.Shape())
	}
	if y.Shape().TotalSize() == 0 {
		return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: orig_output must not be empty, got shape %v", op, y.Shape())
	}
	if err := sameDtype(op, x.Dtype(), in[:3]); err != nil {
		return nil, nil, err
	}
	xs, ys := x.Shape(), y.Shape()
	if xs[0] != ys[0] || xs[3] != ys[3] {
		return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: orig_output shape %v does not match orig_input shape %v in the batch or depth dimension", op, ys, xs)
	}
	gname, want := "out_backprop", ys
	if op == fpMaxGradGradName {
		gname, want = "grad", xs
	}
	if !tensorx.SameShape(g.Shape(), want) {
		return nil, nil, registry.NamedInputErrorf(registry.ErrShape, op, gname, "%s: %s must have shape %v, got %v", op, gname, want, g.Shape())
	}
	_, oh, ow, _ := fpDims4(y)
	ctx := func() string { return fmt.Sprintf("Given orig_output shape %v", ys) }
	if rows, err = fpSeqInput(op, "row_pooling_sequence", in[3], oh+1, ctx); err != nil {
		return nil, nil, err
	}
	if cols, err = fpSeqInput(op, "col_pooling_sequence", in[4], ow+1, ctx); err != nil {
		return nil, nil, err
	}
	if err := fpCheckSeqs(op, rows, cols, xs[1], xs[2], overlapping); err != nil {
		return nil, nil, err
	}
	return rows, cols, nil
}

// fpMaxGradKernel is the kernel of FractionalMaxPoolGrad.
func fpMaxGradKernel[T fracpool.Num](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(forward.FractionalPoolGradAttrs)
	rows, cols, err := fpMaxGradCheck(fpMaxGradName, in, a.Overlapping)
	if err != nil {
		return nil, err
	}
	out, err := kc.Zeros(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	s, err := fpMaxScratch[T](kc, in[0])
	if err != nil {
		return nil, err
	}
	x, y, dy := tensorx.MustSlice[T](in[0]), tensorx.MustSlice[T](in[1]), tensorx.MustSlice[T](in[2])
	n, h, w, c := fpDims4(in[0])
	if !fracpool.MaxGrad(tensorx.MustSlice[T](out), dy, x, y, n, h, w, c, rows, cols, a.Overlapping, s, kc.NumThreads()) {
		return nil, fpStaleOutput(fpMaxGradName)
	}
	return kc.Results(out), nil
}

// fpMaxGradGradKernel is the kernel of tapegrad.FractionalMaxPoolGradGrad.
func fpMaxGradGradKernel[T fracpool.Num](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(forward.FractionalPoolGradAttrs)
	rows, cols, err := fpMaxGradCheck(fpMaxGradGradName, in, a.Overlapping)
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(in[1].Dtype(), in[1].Shape()...)
	if err != nil {
		return nil, err
	}
	s, err := fpMaxScratch[T](kc, in[0])
	if err != nil {
		return nil, err
	}
	x, y, g := tensorx.MustSlice[T](in[0]), tensorx.MustSlice[T](in[1]), tensorx.MustSlice[T](in[2])
	n, h, w, c := fpDims4(in[0])
	if !fracpool.MaxGradGrad(tensorx.MustSlice[T](out), g, x, y, n, h, w, c, rows, cols, a.Overlapping, s, kc.NumThreads()) {
		return nil, fpStaleOutput(fpMaxGradGradName)
	}
	return kc.Results(out), nil
}

// fpMaxScratch returns the scratch of fracpool.MaxGrad and MaxGradGrad for
// the input x [n,h,w,c]: one argmax and one maximum slot per batch and
// channel, one mismatch flag per batch.
func fpMaxScratch[T fracpool.Num](kc *registry.KernelCtx, x *tensor.Dense) (fracpool.MaxScratch[T], error) {
	n, _, _, c := fpDims4(x)
	var s fracpool.MaxScratch[T]
	var err error
	if s.Argmax, err = registry.Scratch[int64](kc, n*c, false); err != nil {
		return s, err
	}
	if s.Max, err = registry.Scratch[T](kc, n*c, false); err != nil {
		return s, err
	}
	s.Bad, err = registry.Scratch[bool](kc, n, true)
	return s, err
}

// fpStaleOutput is the error of a max-pool gradient op whose orig_output
// is not the max pooling of orig_input, as TensorFlow reports it.
func fpStaleOutput(op string) error {
	return registry.Errorf(registry.ErrInvalidArgument,
		"%s: tensor_out_dup is not the same as tensor_out (orig_output is not the max pooling of orig_input with these sequences)", op)
}

// fpMaxPoolGrad: FractionalMaxPool(x) with upstream (g, _, _) gives
// FractionalMaxPoolGrad(x, y, g, rows, cols).
func fpMaxPoolGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(1)
	if dy[0] == nil || !n.NeedsGrad(0) {
		return out, nil
	}
	a := n.Attrs().(forward.FractionalPoolAttrs)
	outs := n.Outputs()
	out[0] = FractionalMaxPoolGrad(e, fpGradAttrs[b2i(a.Overlapping)], n.Inputs()[0], outs[0], dy[0], outs[1], outs[2])
	return out, nil
}

// fpMaxPoolGradGrad: FractionalMaxPoolGrad(x, y, d, rows, cols) with
// upstream g (shaped like x) gives nil, nil (zero) for x and y and
// tapegrad.FractionalMaxPoolGradGrad(x, y, g, rows, cols) for d.
func fpMaxPoolGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(5)
	if dy[0] == nil || !n.NeedsGrad(2) {
		return out, nil
	}
	in := n.Inputs()
	out[2] = FractionalMaxPoolGradGrad(e, registry.NodeAttrs[forward.FractionalPoolGradAttrs](n), in[0], in[1], dy[0], in[3], in[4])
	return out, nil
}

// fpMaxPoolGradGradGrad: tapegrad.FractionalMaxPoolGradGrad(x, y, g, rows,
// cols) with upstream u (shaped like y) gives nil, nil for x and y and
// FractionalMaxPoolGrad(x, y, u, rows, cols) for g.
func fpMaxPoolGradGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(5)
	if dy[0] == nil || !n.NeedsGrad(2) {
		return out, nil
	}
	in := n.Inputs()
	out[2] = FractionalMaxPoolGrad(e, registry.NodeAttrs[forward.FractionalPoolGradAttrs](n), in[0], in[1], dy[0], in[3], in[4])
	return out, nil
}
