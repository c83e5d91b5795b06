package backward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/redkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// BiasAddGrad, the gradient kernel of BiasAdd, and the gradients of MatMul
// (math_grad.py) and of BiasAdd and BiasAddGrad (nn_grad.py), as
// TensorFlow registers them.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name:    OpBiasAddGrad,
		Doc:     "the gradient of BiasAdd's bias: out_backprop summed over every dimension but the channel one",
		Inputs:  args("out_backprop"),
		Outputs: args("output"),
		Attrs:   forward.BiasAddAttrs{},
		Kernels: floatKernels(biasAddGradKernel[float32], biasAddGradKernel[float64]),
		Samples: biasAddGradSamples,
	})
	registry.MustSetGradient(forward.OpMatMul, mmMatMulGrad)
	registry.MustSetGradient(forward.OpBiasAdd, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil {
			return e.Values(2), nil
		}
		out := e.Values(2)
		if n.NeedsGrad(0) {
			out[0] = dy[0]
		}
		if n.NeedsGrad(1) {
			out[1] = BiasAddGrad(e, registry.NodeAttrs[forward.BiasAddAttrs](n), dy[0])
		}
		return out, nil
	})
	registry.MustSetGradient(OpBiasAddGrad, mmBiasAddGradGrad)
}

// biasAddGradKernel sums out_backprop over every dimension but the channel
// one; float32 sums accumulate in float64.
func biasAddGradKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	at := attrs.(forward.BiasAddAttrs)
	g := in[0]
	gs := g.Shape()
	cd, err := at.ChannelDim(OpBiasAddGrad, gs)
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(g.Dtype(), gs[cd])
	if err != nil {
		return nil, err
	}
	var bitmap [tensorx.MaxRank]bool
	for i := range gs {
		bitmap[i] = i != cd
	}
	if err := redkern.Into(kc.NumThreads(), kcScratch[float64]{kc}, data[T](g), redkern.NewPlan(gs, bitmap), data[T](out), false); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// kcScratch hands out a kernel context's scratch memory to the reduction
// loops (a redkern.Scratch).
type kcScratch[A redkern.Num] struct{ kc *registry.KernelCtx }

// Scratch returns n accumulators of scratch memory.
func (s kcScratch[A]) Scratch(n int) ([]A, error) { return registry.Scratch[A](s.kc, n, false) }

// biasAddGradSamples are BiasAddGrad's gradient-sweep samples, both data
// formats, N(0, 1) entries.
func biasAddGradSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "nhwc-3x4", Attrs: forward.BiasAddAttrs{DataFormat: "NHWC"}, Inputs: []*tensor.Dense{forward.SampleNormal(r, 3, 4)}},
		{Name: "nhwc-2x2x3x2", Attrs: forward.BiasAddAttrs{}, Inputs: []*tensor.Dense{forward.SampleNormal(r, 2, 2, 3, 2)}},
		{Name: "nchw-2x3x2x2", Attrs: forward.BiasAddAttrs{DataFormat: "NCHW"}, Inputs: []*tensor.Dense{forward.SampleNormal(r, 2, 3, 2, 2)}},
		{Name: "nchw-2x3x4", Attrs: forward.BiasAddAttrs{DataFormat: "NCHW"}, Inputs: []*tensor.Dense{forward.SampleNormal(r, 2, 3, 4)}},
	}
}

// mmMatMulGrad: for c = op(a)·op(b) with upstream g,
//
//	no transposes:  da = g·bᵀ        db = aᵀ·g
//	transpose_b:    da = g·b         db = gᵀ·a
//	transpose_a:    da = b·gᵀ        db = a·g
//	both:           da = bᵀ·gᵀ       db = gᵀ·aᵀ
func mmMatMulGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(2)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	at := n.Attrs().(forward.MatMulAttrs)
	a, b := n.Inputs()[0], n.Inputs()[1]
	mm := func(x, y registry.Value, ta, tb bool) registry.Value {
		return forward.MatMul(e, mmAttrs[b2i(ta)][b2i(tb)], x, y)
	}
	ta, tb := at.TransposeA, at.TransposeB
	if n.NeedsGrad(0) {
		switch {
		case !ta && !tb:
			out[0] = mm(g, b, false, true)
		case !ta && tb:
			out[0] = mm(g, b, false, false)
		case ta && !tb:
			out[0] = mm(b, g, false, true)
		default:
			out[0] = mm(b, g, true, true)
		}
	}
	if n.NeedsGrad(1) {
		switch {
		case !ta && !tb:
			out[1] = mm(a, g, true, false)
		case !ta && tb:
			out[1] = mm(g, a, true, false)
		case ta && !tb:
			out[1] = mm(a, g, false, false)
		default:
			out[1] = mm(g, a, true, true)
		}
	}
	return out, nil
}

// mmAttrs[ta][tb] are MatMul's attrs with transpose_a = ta, transpose_b =
// tb, made once.
var mmAttrs = [2][2]registry.Attrs[forward.MatMulAttrs]{
	{registry.NewAttrs(forward.MatMulAttrs{}), registry.NewAttrs(forward.MatMulAttrs{TransposeB: true})},
	{registry.NewAttrs(forward.MatMulAttrs{TransposeA: true}), registry.NewAttrs(forward.MatMulAttrs{TransposeA: true, TransposeB: true})},
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mmBiasAddGradGrad is TensorFlow's _BiasAddGradGrad: BiasAddGrad is
// linear, so the gradient of its input is the upstream gradient (one value
// per channel) broadcast over the input's other dimensions.
func mmBiasAddGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(1), nil
	}
	xs := n.Inputs()[0].Shape()
	at := n.Attrs().(forward.BiasAddAttrs)
	expanded := make([]int, len(xs))
	for i := range expanded {
		expanded[i] = 1
	}
	cd := len(xs) - 1
	if at.DataFormat == "NCHW" {
		cd = 1
	}
	expanded[cd] = xs[cd]
	g := forward.Reshape(e, dy[0], e.Ints(expanded...))
	if !bcSameShape(expanded, xs) {
		g = forward.BroadcastTo(e, g, e.Ints(xs...))
	}
	return only(e, 1, 0, g), nil
}
