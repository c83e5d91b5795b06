package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// The fake-quant family's gradient ops (docs/spec/fake_quant.md §4), bit-exact
// with TensorFlow's float32 CPU kernels, with the forward ops' attrs,
// validation and numerics (forward/fake_quant.go):
//
//   - FakeQuantWithMinMaxArgsGradient, FakeQuantWithMinMaxVarsGradient and
//     FakeQuantWithMinMaxVarsPerChannelGradient (TensorFlow's
//     straight-through rule), which produce the input gradient and, for
//     Vars/PerChannel, the min/max gradients in one fused pass;
//   - two ops TensorFlow lacks, tapegrad.FakeQuantWithMinMaxVarsGradientAdjoint
//     and tapegrad.FakeQuantWithMinMaxVarsPerChannelGradientAdjoint: the
//     adjoints of the (linear in `gradients`) gradient ops, so that the
//     gradient ops have gradients and every order of differentiation works.
//
// The loops are package internal/fqkern's: the gradient pass sums the
// gradients below / above the range in float64 per table position within
// a chunk, folds them into channels per chunk and combines the chunks in
// chunk order, so the min/max gradients are bit-identical for any thread
// count. Steady-state calls allocate nothing on one thread: the tables
// live in the kernel's frame with their rows in kernel scratch
// (registry.Scratch, recycled by the allocator), as do the gradient's
// per-chunk and per-worker sums, and results go through kc.Results.
//
// Gradients.
//
// The forward ops get TensorFlow's registered gradients (array_ops.py): the
// straight-through estimator computed by the matching *Gradient op, which
// passes the upstream gradient where nudged_min <= x <= nudged_max and
// sums it per channel (or over the tensor) below / above the range into the
// min / max gradients.
//
// TensorFlow registers no gradient for the *Gradient ops. tapegrad does,
// so that gradients of gradients work:
//
//   - The gradient ops are linear in their `gradients` input. Their
//     gradient with respect to it is the adjoint of that linear map: the
//     upstream gradient of backprops_wrt_input masked to the range, plus
//     the upstream gradient of backprop_wrt_min (resp. _max) broadcast to
//     the elements below (resp. above) the range. No TensorFlow op
//     expresses it; it is the tapegrad op
//     tapegrad.FakeQuantWithMinMaxVars[PerChannel]GradientAdjoint, whose
//     own gradient (the adjoint of the adjoint) is the gradient op again.
//     FakeQuantWithMinMaxArgsGradient is self-adjoint.
//   - With respect to inputs, min and max the gradient ops (and the adjoint
//     ops) are piecewise constant: their derivative is zero almost
//     everywhere, as TensorFlow's straight-through view implies, and is
//     returned as ZerosLike.

// Short names of the family's gradient ops.
const (
	fqArgsGrad    = OpFakeQuantWithMinMaxArgsGradient
	fqVarsGrad    = OpFakeQuantWithMinMaxVarsGradient
	fqVarsAdj     = OpFakeQuantWithMinMaxVarsGradientAdjoint
	fqChannelGrad = OpFakeQuantWithMinMaxVarsPerChannelGradient
	fqChannelAdj  = OpFakeQuantWithMinMaxVarsPerChannelGradientAdjoint
)

func init() {
	registry.MustRegister(&registry.OpDef{
		Name:   fqArgsGrad,
		Doc:    "backprops = gradients where nudged_min <= inputs <= nudged_max, else 0 (straight-through gradient of FakeQuantWithMinMaxArgs)",
		Inputs: args("gradients", "inputs"), Outputs: args("backprops"), Attrs: forward.FakeQuantArgsAttrs{},
		Kernels: floatKernels(fqArgsGradKernel[float32], fqArgsGradKernel[float64]),
		Samples: fqArgsGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqVarsGrad,
		Doc: "straight-through gradients of FakeQuantWithMinMaxVars: backprops_wrt_input = gradients inside the nudged range, " +
			"backprop_wrt_min/max = sums of gradients below/above it (scalars)",
		Inputs:  args("gradients", "inputs", "min", "max"),
		Outputs: args("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"), Attrs: forward.FakeQuantAttrs{},
		Kernels: floatKernels(fqVarsGradKernel[float32], fqVarsGradKernel[float64]),
		Samples: fqVarsGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqVarsAdj,
		Doc: "goes beyond TensorFlow: the adjoint of FakeQuantWithMinMaxVarsGradient in its gradients input, " +
			"d_gradients = d_backprops inside the nudged range, d_min below it, d_max above it (the gradient op's gradient)",
		Inputs:  args("d_backprops", "d_min", "d_max", "inputs", "min", "max"),
		Outputs: args("d_gradients"), Attrs: forward.FakeQuantAttrs{},
		Kernels: floatKernels(fqVarsAdjKernel[float32], fqVarsAdjKernel[float64]),
		Samples: fqVarsAdjSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqChannelGrad,
		Doc: "straight-through gradients of FakeQuantWithMinMaxVarsPerChannel: backprops_wrt_input = gradients inside the channel's " +
			"nudged range, backprop_wrt_min/max[c] = per-channel sums of gradients below/above it; inputs of rank 1..4",
		Inputs:  args("gradients", "inputs", "min", "max"),
		Outputs: args("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"), Attrs: forward.FakeQuantAttrs{},
		Kernels: floatKernels(fqChannelGradKernel[float32], fqChannelGradKernel[float64]),
		Samples: fqChannelGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqChannelAdj,
		Doc: "goes beyond TensorFlow: the adjoint of FakeQuantWithMinMaxVarsPerChannelGradient in its gradients input, " +
			"d_gradients = d_backprops inside the channel's nudged range, d_min[c] below it, d_max[c] above it (the gradient op's gradient)",
		Inputs:  args("d_backprops", "d_min", "d_max", "inputs", "min", "max"),
		Outputs: args("d_gradients"), Attrs: forward.FakeQuantAttrs{},
		Kernels: floatKernels(fqChannelAdjKernel[float32], fqChannelAdjKernel[float64]),
		Samples: fqChannelAdjSamples,
	})

	registry.MustSetGradient(forward.OpFakeQuantWithMinMaxArgs, fqArgsForwardGrad)
	registry.MustSetGradient(forward.OpFakeQuantWithMinMaxVars, fqVarsOps.forwardGrad)
	registry.MustSetGradient(forward.OpFakeQuantWithMinMaxVarsPerChannel, fqChannelOps.forwardGrad)

	registry.MustSetGradient(fqArgsGrad, fqArgsGradGrad)
	registry.MustSetGradient(fqVarsGrad, fqVarsOps.gradOpGrad)
	registry.MustSetGradient(fqChannelGrad, fqChannelOps.gradOpGrad)

	registry.MustSetGradient(fqVarsAdj, fqVarsOps.adjointGrad)
	registry.MustSetGradient(fqChannelAdj, fqChannelOps.adjointGrad)
}

// fqRangeOps holds the gradient op and the adjoint op of
// FakeQuantWithMinMaxVars or of FakeQuantWithMinMaxVarsPerChannel, whose
// gradient functions have the same structure.
type fqRangeOps struct {
	gradName   string // the gradient op's name, for error messages
	perChannel bool
	grad       func(e registry.Emitter, attrs registry.Attrs[forward.FakeQuantAttrs], gradients, inputs, min, max registry.Value) []registry.Value
	adj        func(e registry.Emitter, attrs registry.Attrs[forward.FakeQuantAttrs], dBackprops, dMin, dMax, inputs, min, max registry.Value) registry.Value
}

var (
	fqVarsOps = fqRangeOps{
		gradName: fqVarsGrad,
		grad:     FakeQuantWithMinMaxVarsGradient,
		adj:      FakeQuantWithMinMaxVarsGradientAdjoint,
	}
	fqChannelOps = fqRangeOps{
		gradName:   fqChannelGrad,
		perChannel: true,
		grad:       FakeQuantWithMinMaxVarsPerChannelGradient,
		adj:        FakeQuantWithMinMaxVarsPerChannelGradientAdjoint,
	}
)

// ---------------------------------------------------------------------------
// Kernels of the gradient ops.

// Input names of the error messages (package variables: a slice literal
// per call could cost an allocation).
var (
	fqNamesGrad    = []string{"gradients", "inputs", "min", "max"}
	fqNamesAdj     = []string{"d_backprops", "d_min", "d_max", "inputs", "min", "max"}
	fqNamesArgs    = []string{"gradients", "inputs"}
	fqNamesMinMax  = []string{"min", "max"}
	fqNamesAdjRngs = []string{"d_min", "d_max", "min", "max"}
)

// fqSameShape checks that gradients (or d_backprops) and inputs have the
// same shape.
func fqSameShape(op, what string, g, x *tensor.Dense) error {
	if !tensorx.SameShape(g.Shape(), x.Shape()) {
		return registry.Errorf(registry.ErrShape, "%s: gradient and input must be the same size (%s %s, inputs %s)",
			op, what, tensorx.FormatShape(g.Shape()), tensorx.FormatShape(x.Shape()))
	}
	return nil
}

func fqArgsGradKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	lo, hi, qmin, qmax, err := attrs.(forward.FakeQuantArgsAttrs).Range(fqArgsGrad)
	if err != nil {
		return nil, err
	}
	if err := forward.FakeQuantDtypes(fqArgsGrad, fqNamesArgs, in); err != nil {
		return nil, err
	}
	if err := fqSameShape(fqArgsGrad, "gradients", in[0], in[1]); err != nil {
		return nil, err
	}
	out, err := like(kc, in[1])
	if err != nil {
		return nil, err
	}
	// No min/max sums: the input gradient alone, one pass, which is the
	// adjoint loop with d_min = d_max = +0 (gradients inside the nudged
	// range, +0 outside and for NaN inputs; Args' range is never the
	// min == max == 0 one).
	mins, maxs, zero := [1]T{T(lo)}, [1]T{T(hi)}, [1]T{}
	buf, err := registry.Scratch[T](kc, fqkern.BoundsSize(1), false)
	if err != nil {
		return nil, err
	}
	var b fqkern.Bounds[T]
	b.InitRanges(buf, mins[:], maxs[:], qmin, qmax, zero[:], zero[:])
	fqkern.Adjoint(data[T](out), data[T](in[0]), data[T](in[1]), &b, kc.NumThreads())
	return kc.Results(out), nil
}

func fqVarsGradKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fqRangeGradKernel[T](kc, fqVarsGrad, false, attrs, in)
}

func fqChannelGradKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fqRangeGradKernel[T](kc, fqChannelGrad, true, attrs, in)
}

// fqRangeGradKernel is the kernel of the Vars (perChannel false) and
// PerChannel gradient ops (inputs of rank 1..4): the fused gradient pass
// into the input gradient (like inputs) and the min/max gradients (like
// min).
func fqRangeGradKernel[T tensorx.Float](kc *registry.KernelCtx, op string, perChannel bool, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	qmin, qmax, err := forward.FakeQuantCheck(op, attrs, fqNamesGrad, in)
	if err != nil {
		return nil, err
	}
	if err := fqSameShape(op, "gradients", in[0], in[1]); err != nil {
		return nil, err
	}
	mins, maxs, err := forward.FakeQuantRanges[T](op, perChannel, in[1], 4, fqNamesMinMax, in[2:])
	if err != nil {
		return nil, err
	}
	bi, err := like(kc, in[1])
	if err != nil {
		return nil, err
	}
	bmin, err := like(kc, in[2])
	if err != nil {
		return nil, err
	}
	bmax, err := like(kc, in[2])
	if err != nil {
		return nil, err
	}
	if len(mins) == 0 {
		return kc.Results(bi, bmin, bmax), nil
	}
	buf, err := registry.Scratch[T](kc, fqkern.BoundsSize(len(mins)), false)
	if err != nil {
		return nil, err
	}
	var b fqkern.Bounds[T]
	b.InitRanges(buf, mins, maxs, qmin, qmax, nil, nil)
	threads := kc.NumThreads()
	np, na := fqkern.GradientScratch(tensorx.Len(in[1]), &b, threads)
	part, err := registry.Scratch[float64](kc, np, true)
	if err != nil {
		return nil, err
	}
	accs, err := registry.Scratch[float64](kc, na, false)
	if err != nil {
		return nil, err
	}
	fqkern.Gradient(data[T](bi), data[T](bmin), data[T](bmax), data[T](in[0]), data[T](in[1]), &b, threads, part, accs)
	return kc.Results(bi, bmin, bmax), nil
}

func fqVarsAdjKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fqRangeAdjKernel[T](kc, fqVarsAdj, false, attrs, in)
}

func fqChannelAdjKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fqRangeAdjKernel[T](kc, fqChannelAdj, true, attrs, in)
}

// fqRangeAdjKernel is the kernel of the tapegrad adjoint ops of the Vars
// (perChannel false) and PerChannel gradient ops.
func fqRangeAdjKernel[T tensorx.Float](kc *registry.KernelCtx, op string, perChannel bool, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	qmin, qmax, err := forward.FakeQuantCheck(op, attrs, fqNamesAdj, in)
	if err != nil {
		return nil, err
	}
	if err := fqSameShape(op, "d_backprops", in[0], in[3]); err != nil {
		return nil, err
	}
	ranges := [4]*tensor.Dense{in[1], in[2], in[4], in[5]}
	mins, maxs, err := forward.FakeQuantRanges[T](op, perChannel, in[3], 0, fqNamesAdjRngs, ranges[:])
	if err != nil {
		return nil, err
	}
	out, err := like(kc, in[3])
	if err != nil {
		return nil, err
	}
	if len(mins) == 0 || tensorx.Len(in[3]) == 0 {
		return kc.Results(out), nil
	}
	buf, err := registry.Scratch[T](kc, fqkern.BoundsSize(len(mins)), false)
	if err != nil {
		return nil, err
	}
	var b fqkern.Bounds[T]
	b.InitRanges(buf, mins, maxs, qmin, qmax, data[T](in[1]), data[T](in[2]))
	fqkern.Adjoint(data[T](out), data[T](in[0]), data[T](in[3]), &b, kc.NumThreads())
	return kc.Results(out), nil
}

// ---------------------------------------------------------------------------
// Gradient functions.

// fqArgsForwardGrad: FakeQuantWithMinMaxArgsGradient(dy, inputs), same attrs.
func fqArgsForwardGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(1), nil
	}
	return vals(e, FakeQuantWithMinMaxArgsGradient(e, registry.NodeAttrs[forward.FakeQuantArgsAttrs](n), dy[0], n.Inputs()[0])), nil
}

// forwardGrad is the gradient of FakeQuantWithMinMaxVars or
// ...PerChannel: the gradient op (dy, inputs, min, max) gives the three
// gradients. TensorFlow's PerChannelGradient op accepts inputs of rank
// 1..4 only, while the forward accepts any rank >= 1; for rank > 4 the
// gradient is computed on the [rows, channels] view and reshaped back.
func (o fqRangeOps) forwardGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	if dy[0] == nil || !(n.NeedsGrad(0) || n.NeedsGrad(1) || n.NeedsGrad(2)) {
		return out, nil
	}
	in := n.Inputs()
	g, x := dy[0], in[0]
	shape := x.Shape()
	flat := o.perChannel && len(shape) > 4
	if flat {
		d := shape[len(shape)-1]
		rows := 1
		for _, s := range shape[:len(shape)-1] {
			rows *= s
		}
		g = forward.Reshape(e, g, e.Ints(rows, d))
		x = forward.Reshape(e, x, e.Ints(rows, d))
	}
	res := o.grad(e, registry.NodeAttrs[forward.FakeQuantAttrs](n), g, x, in[1], in[2])
	if len(res) != 3 {
		return nil, fqApplyErr(e, o.gradName, len(res))
	}
	for i := range out {
		if n.NeedsGrad(i) {
			out[i] = res[i]
		}
	}
	if flat && out[0] != nil {
		out[0] = forward.Reshape(e, out[0], e.Ints(shape...))
	}
	return out, nil
}

// fqApplyErr is the error of an Apply that did not return the gradient
// op's three outputs: the emitter's error if it failed.
func fqApplyErr(e registry.Emitter, op string, n int) error {
	if err := e.Err(); err != nil {
		return err
	}
	return registry.Errorf(registry.ErrInternal, "%s returned %d outputs, want 3", op, n)
}

// fqZerosFor returns ZerosLike(in[i]) for every i >= from that needs a
// gradient: the gradient ops are piecewise constant in inputs, min and max.
func fqZerosFor(e registry.Emitter, n registry.Node, out []registry.Value, from int) {
	in := n.Inputs()
	for i := from; i < len(in); i++ {
		if n.NeedsGrad(i) {
			out[i] = forward.ZerosLike(e, in[i])
		}
	}
}

// fqArgsGradGrad is the gradient of FakeQuantWithMinMaxArgsGradient
// (gradients, inputs): the map gradients ↦ gradients·mask is self-adjoint,
// so the gradient w.r.t. gradients is the op applied to the upstream
// gradient; w.r.t. inputs it is zero.
func fqArgsGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(2)
	if dy[0] == nil {
		return out, nil
	}
	if n.NeedsGrad(0) {
		out[0] = FakeQuantWithMinMaxArgsGradient(e, registry.NodeAttrs[forward.FakeQuantArgsAttrs](n), dy[0], n.Inputs()[1])
	}
	fqZerosFor(e, n, out, 1)
	return out, nil
}

// gradOpGrad is the gradient of FakeQuantWithMinMaxVars[PerChannel]
// Gradient(gradients, inputs, min, max) → (backprops_wrt_input,
// backprop_wrt_min, backprop_wrt_max): the adjoint op applied to the three
// upstream gradients (zeros for those that get none) for gradients, zeros
// for inputs, min and max.
func (o fqRangeOps) gradOpGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(4)
	if dy[0] == nil && dy[1] == nil && dy[2] == nil {
		return out, nil
	}
	in := n.Inputs()
	if n.NeedsGrad(0) {
		u := e.Values(3)
		like := []registry.Value{in[1], in[2], in[2]} // shapes of the three outputs
		for i := range u {
			u[i] = dy[i]
			if u[i] == nil {
				u[i] = forward.ZerosLike(e, like[i])
			}
		}
		out[0] = o.adj(e, registry.NodeAttrs[forward.FakeQuantAttrs](n), u[0], u[1], u[2], in[1], in[2], in[3])
	}
	fqZerosFor(e, n, out, 1)
	return out, nil
}

// adjointGrad is the gradient of the tapegrad adjoint op (d_backprops,
// d_min, d_max, inputs, min, max) → d_gradients: the adjoint of the
// adjoint, i.e. the gradient op applied to the upstream gradient, gives
// the gradients of d_backprops, d_min and d_max; inputs, min and max get
// zeros.
func (o fqRangeOps) adjointGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(6)
	if dy[0] == nil {
		return out, nil
	}
	in := n.Inputs()
	if n.NeedsGrad(0) || n.NeedsGrad(1) || n.NeedsGrad(2) {
		res := o.grad(e, registry.NodeAttrs[forward.FakeQuantAttrs](n), dy[0], in[3], in[4], in[5])
		if len(res) != 3 {
			return nil, fqApplyErr(e, o.gradName, len(res))
		}
		for i := 0; i < 3; i++ {
			if n.NeedsGrad(i) {
				out[i] = res[i]
			}
		}
	}
	fqZerosFor(e, n, out, 3)
	return out, nil
}
