package backward

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// FractionalAvgPool's gradient op FractionalAvgPoolGrad, its adjoint
// tapegrad.FractionalAvgPoolWithSequences, and the gradients of the three
// (docs/spec/fractional_avg_pool.md §5; tensorflow/python/ops/nn_grad.py):
//
//   - FractionalAvgPool → FractionalAvgPoolGrad(static shape of value as
//     int64, dy, row_pooling_sequence, col_pooling_sequence) with the
//     forward's recorded sequences (its outputs 1 and 2); the sequence
//     outputs are integers and take no gradient. As TensorFlow.
//   - FractionalAvgPoolGrad (beyond TensorFlow, which registers none): it
//     is linear in out_backprop, whose gradient is the adjoint, average
//     pooling with the same sequences:
//     tapegrad.FractionalAvgPoolWithSequences, whose own gradient is
//     FractionalAvgPoolGrad again, so every order works.
//
// FractionalAvgPoolGrad accumulates in float64 in TensorFlow's order and
// converts to T once; tapegrad.FractionalAvgPoolWithSequences pools as
// FractionalAvgPool does. Every gradient call forwards the op's
// overlapping attr; integer inputs get no gradient.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: fpAvgGradName,
		Doc: "gradient of FractionalAvgPool: each out_backprop value spread uniformly over its cell of an input of shape " +
			"orig_input_tensor_shape (int64 [4]); accumulated in float64",
		Inputs:    args("orig_input_tensor_shape", "out_backprop", "row_pooling_sequence", "col_pooling_sequence"),
		Outputs:   args("output"),
		Attrs:     forward.FractionalPoolGradAttrs{},
		TypeInput: 1,
		Kernels:   fpKernels(fpAvgGradKernel[float32], fpAvgGradKernel[float64], fpAvgGradKernel[int32], fpAvgGradKernel[int64]),
		Samples:   fpAvgGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpAvgSeqName,
		Doc: "average pooling (NHWC) over the cells of given int64 row and column pooling sequences; the adjoint of " +
			"FractionalAvgPoolGrad (tapegrad op, beyond TensorFlow)",
		Inputs: args("value", "row_pooling_sequence", "col_pooling_sequence"), Outputs: args("output"),
		Attrs:   forward.FractionalPoolSeqAttrs{},
		Kernels: fpKernels(fpAvgSeqKernel[float32], fpAvgSeqKernel[float64], fpAvgSeqKernel[int32], fpAvgSeqKernel[int64]),
		Samples: fpAvgSeqSamples,
	})
	registry.MustSetGradient(forward.OpFractionalAvgPool, fpAvgPoolGrad)
	registry.MustSetGradient(fpAvgGradName, fpAvgPoolGradGrad)
	registry.MustSetGradient(fpAvgSeqName, fpAvgWithSequencesGrad)
}

// fpAvgSeqKernel is the kernel of tapegrad.FractionalAvgPoolWithSequences.
func fpAvgSeqKernel[T fracpool.Num](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = fpAvgSeqName
	a := attrs.(forward.FractionalPoolSeqAttrs)
	x := in[0]
	if x.Dims() != 4 {
		return nil, registry.NamedInputErrorf(registry.ErrShape, op, "value", "%s: value must be 4-dimensional, got shape %v", op, x.Shape())
	}
	n, h, w, c := fpDims4(x)
	oh, ow := a.OutputRows, a.OutputCols
	if oh < 0 || ow < 0 || a.OutputBatch < 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: output_batch, output_rows and output_cols must be >= 0, got %d, %d and %d",
			op, a.OutputBatch, oh, ow)
	}
	if a.OutputBatch > n {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: output_batch %d exceeds the batch %d of value", op, a.OutputBatch, n)
	}
	if a.OutputBatch > 0 {
		n = a.OutputBatch
	}
	for i, name := range []string{"row_pooling_sequence", "col_pooling_sequence"} {
		s, err := fpSeqVector(op, name, in[1+i])
		if err != nil {
			return nil, err
		}
		if len(s) < 2 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %s must have at least 2 entries, got %d", op, name, len(s))
		}
		if i == 0 && oh == 0 {
			oh = len(s) - 1
		}
		if i == 1 && ow == 0 {
			ow = len(s) - 1
		}
	}
	ctx := func() string { return fmt.Sprintf("given output size %dx%d", oh, ow) }
	rows, err := fpSeqInput(op, "row_pooling_sequence", in[1], oh+1, ctx)
	if err != nil {
		return nil, err
	}
	cols, err := fpSeqInput(op, "col_pooling_sequence", in[2], ow+1, ctx)
	if err != nil {
		return nil, err
	}
	if err := fpCheckSeqs(op, rows, cols, h, w, a.Overlapping); err != nil {
		return nil, err
	}
	out, err := kc.Output(x.Dtype(), n, oh, ow, c)
	if err != nil {
		return nil, err
	}
	fracpool.AvgPool(tensorx.MustSlice[T](out), tensorx.MustSlice[T](x), n, h, w, c, rows, cols, a.Overlapping, kc.NumThreads())
	return kc.Results(out), nil
}

// fpAvgGradCheck validates FractionalAvgPoolGrad's inputs in TensorFlow's
// order and returns the original input shape and the read sequence
// entries.
func fpAvgGradCheck(in []*tensor.Dense, overlapping bool) (shape [4]int, rows, cols []int64, err error) {
	const op = fpAvgGradName
	st, dy := in[0], in[1]
	if st.Dtype() != tensor.Int64 {
		return shape, nil, nil, registry.NamedInputErrorf(registry.ErrDtype, op, "orig_input_tensor_shape", "%s: orig_input_tensor_shape must be int64, got %v", op, st.Dtype())
	}
	if st.Dims() != 1 || st.Shape().TotalSize() != 4 {
		return shape, nil, nil, registry.NamedInputErrorf(registry.ErrShape, op, "orig_input_tensor_shape", "%s: original input tensor shape must be1-dimensional and 4 elements, got shape %v", op, st.Shape())
	}
	if dy.Dims() != 4 {
		return shape, nil, nil, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: out_backprop must be 4-dimensional, got shape %v", op, dy.Shape())
	}
	for _, d := range dy.Shape() {
		if d <= 0 {
			return shape, nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: out_backprop must be positive for all dimension, got: %v", op, dy.Shape())
		}
	}
	_, oh, ow, _ := fpDims4(dy)
	ctx := func() string { return fmt.Sprintf("Given out_backprop shape %v", dy.Shape()) }
	if rows, err = fpSeqInput(op, "row_pooling_sequence", in[2], oh+1, ctx); err != nil {
		return shape, nil, nil, err
	}
	if cols, err = fpSeqInput(op, "col_pooling_sequence", in[3], ow+1, ctx); err != nil {
		return shape, nil, nil, err
	}
	sv := tensorx.MustSlice[int64](st)
	for i, name := range []string{"Batch", "Rows", "Columns", "Depth"} {
		if sv[i] == 0 {
			return shape, nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %s dimension of input must not be 0", op, name)
		}
	}
	total := int64(1)
	for i, v := range sv {
		if v < 0 {
			return shape, nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected a non-negative size, got %d (orig_input_tensor_shape %v)", op, v, sv)
		}
		if v > math.MaxInt32*64/total {
			return shape, nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: The total elements specified by orig_input_tensor_shape is too large: %v", op, sv)
		}
		total *= v
		shape[i] = int(v)
	}
	if err := fpCheckSeqsTF(op, rows, cols, shape[1], shape[2], overlapping); err != nil {
		return shape, nil, nil, err
	}
	// TensorFlow reads out of bounds here; a smaller batch is valid (the
	// remaining images get zero gradient).
	if dy.Shape()[0] > shape[0] || dy.Shape()[3] != shape[3] {
		return shape, nil, nil, registry.Errorf(registry.ErrInvalidArgument,
			"%s: out_backprop shape %v does not fit orig_input_tensor_shape %v: its batch must not exceed the input's and its depth must equal it",
			op, dy.Shape(), sv)
	}
	if err := fpCheckSeqsStrict(op, rows, cols, shape[1], shape[2]); err != nil {
		return shape, nil, nil, err
	}
	return shape, rows, cols, nil
}

// fpAvgGradKernel is the kernel of FractionalAvgPoolGrad.
func fpAvgGradKernel[T fracpool.Num](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(forward.FractionalPoolGradAttrs)
	shape, rows, cols, err := fpAvgGradCheck(in, a.Overlapping)
	if err != nil {
		return nil, err
	}
	n, h, w, c := shape[0], shape[1], shape[2], shape[3]
	dyT := in[1]
	nd := dyT.Shape()[0] // nd <= n: images nd.. get zeros
	dy := tensorx.MustSlice[T](dyT)
	out, err := kc.Output(dyT.Dtype(), n, h, w, c)
	if err != nil {
		return nil, err
	}
	o := tensorx.MustSlice[T](out)
	clear(o[nd*h*w*c:])
	if !a.Overlapping {
		fracpool.AvgGradDisjoint(o, dy, nd, h, w, c, rows, cols, kc.NumThreads())
		return kc.Results(out), nil
	}
	nv, ncover, naccs := fracpool.AvgGradOverlapScratch(nd, h, w, c, len(rows)-1, len(cols)-1)
	v, err := registry.Scratch[float64](kc, nv, false)
	if err != nil {
		return nil, err
	}
	cover, err := registry.Scratch[int64](kc, ncover, false)
	if err != nil {
		return nil, err
	}
	accs, err := registry.Scratch[float64](kc, naccs, false)
	if err != nil {
		return nil, err
	}
	fracpool.AvgGradOverlap(o, dy, nd, h, w, c, rows, cols, v, cover, accs, kc.NumThreads())
	return kc.Results(out), nil
}

// fpShapeConst returns the static shape of v as an int64 vector constant
// (FractionalAvgPoolGrad's orig_input_tensor_shape): Emitter.Ints's int32
// vector cast to int64, which costs no allocation (a tensor built here and
// copied by Emitter.Const would cost a dozen).
func fpShapeConst(e registry.Emitter, v registry.Value) registry.Value {
	return forward.Cast(e, castInt64, e.Ints(v.Shape()...))
}

// castInt64 is Cast's attrs to int64, made once.
var castInt64 = registry.NewAttrs(forward.CastAttrs{DstT: tensor.Int64})

// fpAvgPoolGrad: FractionalAvgPool(x) with upstream (g, _, _) gives
// FractionalAvgPoolGrad(shape(x), g, rows, cols).
func fpAvgPoolGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(1)
	if dy[0] == nil || !n.NeedsGrad(0) {
		return out, nil
	}
	a := n.Attrs().(forward.FractionalPoolAttrs)
	outs := n.Outputs()
	shape := fpShapeConst(e, n.Inputs()[0])
	out[0] = FractionalAvgPoolGrad(e, fpGradAttrs[b2i(a.Overlapping)], shape, dy[0], outs[1], outs[2])
	return out, nil
}

// fpAvgPoolGradGrad: FractionalAvgPoolGrad(shape, d, rows, cols) with
// upstream g (input-shaped) gives, for d, the average pooling of g over
// the same cells, restricted to d's batch and cell counts.
func fpAvgPoolGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(4)
	if dy[0] == nil || !n.NeedsGrad(1) {
		return out, nil
	}
	in := n.Inputs()
	ds := in[1].Shape()
	a := n.Attrs().(forward.FractionalPoolGradAttrs)
	out[1] = FractionalAvgPoolWithSequences(e,
		registry.NewAttrs(forward.FractionalPoolSeqAttrs{Overlapping: a.Overlapping, OutputBatch: ds[0], OutputRows: ds[1], OutputCols: ds[2]}),
		dy[0], in[2], in[3])
	return out, nil
}

// fpAvgWithSequencesGrad: tapegrad.FractionalAvgPoolWithSequences(x, rows,
// cols) with upstream g gives FractionalAvgPoolGrad(shape(x), g, rows, cols)
// (images beyond output_batch get zeros).
func fpAvgWithSequencesGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	if dy[0] == nil || !n.NeedsGrad(0) {
		return out, nil
	}
	in := n.Inputs()
	a := n.Attrs().(forward.FractionalPoolSeqAttrs)
	shape := fpShapeConst(e, in[0])
	out[0] = FractionalAvgPoolGrad(e, fpGradAttrs[b2i(a.Overlapping)], shape, dy[0], in[1], in[2])
	return out, nil
}
