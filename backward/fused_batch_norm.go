package backward

import (
	"math"
	"sync"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/bnkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradient ops of the FusedBatchNorm family, FusedBatchNormGrad and
// FusedBatchNormGradV3 (docs/spec/fused_batch_norm.md §3), with TensorFlow's
// names, argument order, attributes (forward.FusedBatchNormGradAttrs),
// validation (the family's checks of package forward) and CPU-kernel
// outputs, and the gradients of the family (§4).
//
// The training gradient reads (dy, x) once for its two channel sums and
// once more to write dx; the inference gradient does everything in one
// pass. Per-channel sums are accumulated in float64, chunked by shape
// (bit-identical for any thread count); per-channel coefficients are
// formed in float64 and rounded once; the elementwise passes run in the
// element type. The loops are package bnkern's.
//
// Gradients:
//
// First order, as TensorFlow's nn_grad.py: FusedBatchNorm(V3) applies
// FusedBatchNormGrad(V3) to the upstream gradient of y alone (gradients
// arriving at batch_mean, batch_variance and the reserve spaces are
// dropped, as in TensorFlow) and gives no gradient to mean and variance.
// In training the grad op gets the forward's reserve spaces (batch mean
// and biased variance); in inference the mean and variance inputs. Unlike
// TensorFlow, which transposes channels-first data to channels-last around
// the inference-mode grad op (its CPU kernel refuses NCHW there), tapegrad's
// grad op accepts every layout, so it is applied directly.
//
// Second order, as TensorFlow's nn_fused_batch_norm_grad.py: the gradient
// of FusedBatchNormGrad(V3) differentiates a re-implementation of the grad
// op built from primitive ops (Mean, Sum, Sub, Mul, Rsqrt, ...), which in
// training recomputes the batch mean and biased variance from x (it does
// not use the reserve spaces), so that it is the true second derivative of
// the forward. TensorFlow autodifferentiates that composite; here its
// derivative is written out in closed form, again from primitive ops, so
// every further order works too. Per channel, with M[·] the mean over the
// reduction axes, r = rsqrt(var + ε), x̂ = (x − μ)·r, P(v) = v − M[v] −
// x̂·M[v·x̂] (the map the training gradient applies to dy), u, w_γ, w_β the
// upstream gradients of x_backprop, scale_backprop and offset_backprop:
//
//	training:
//	  g_dy = γ·r·P(u) + w_γ·x̂ + w_β
//	  g_γ  = r·Σ u·P(dy)
//	  g_x  = −γ·r²·(x̂·M[P(u)·dy] + P(u)·M[dy·x̂] + P(dy)·M[u·x̂]) + w_γ·r·P(dy)
//	inference (r = rsqrt(reserve_space_2 + ε), m = reserve_space_1):
//	  g_dy = γ·r·u + w_γ·r·(x − m) + w_β
//	  g_γ  = r·Σ u·dy
//	  g_x  = w_γ·r·dy
//
// (M[P(u)·dy] = M[u·dy] − M[u]·M[dy] − M[u·x̂]·M[dy·x̂]; P is not quite a
// projection, M[x̂²] = var/(var + ε) < 1.) The reserve-space inputs get no
// gradient, as in TensorFlow.

// Short names of the gradient ops.
const (
	bnOpGradV1 = OpFusedBatchNormGrad
	bnOpGradV3 = OpFusedBatchNormGradV3
)

func init() {
	bnKernels := func(op string) map[tensor.Dtype]registry.Kernel {
		return map[tensor.Dtype]registry.Kernel{tensor.Float32: bnGradKernel[float32](op), tensor.Float64: bnGradKernel[float64](op)}
	}
	registry.MustRegister(&registry.OpDef{
		Name: bnOpGradV1,
		Doc: "gradient of FusedBatchNorm: x_backprop, scale_backprop, offset_backprop from y_backprop, x, scale " +
			"and the forward's reserve spaces (training) or the population mean/variance (inference)",
		Inputs: []registry.Arg{{Name: "y_backprop"}, {Name: "x"}, {Name: "scale"}, {Name: "reserve_space_1"}, {Name: "reserve_space_2"}},
		Outputs: []registry.Arg{{Name: "x_backprop"}, {Name: "scale_backprop"}, {Name: "offset_backprop"},
			{Name: "reserve_space_3"}, {Name: "reserve_space_4"}},
		Attrs:   forward.FusedBatchNormGradAttrs{},
		Kernels: bnKernels(bnOpGradV1),
		Samples: forward.FusedBatchNormGradSamples(false),
	})
	registry.MustRegister(&registry.OpDef{
		Name: bnOpGradV3,
		Doc: "gradient of FusedBatchNormV3 (4-D or 5-D); reserve_space_3 is accepted and ignored, as by " +
			"TensorFlow's CPU kernel",
		Inputs: []registry.Arg{{Name: "y_backprop"}, {Name: "x"}, {Name: "scale"}, {Name: "reserve_space_1"}, {Name: "reserve_space_2"},
			{Name: "reserve_space_3"}},
		Outputs: []registry.Arg{{Name: "x_backprop"}, {Name: "scale_backprop"}, {Name: "offset_backprop"},
			{Name: "reserve_space_4"}, {Name: "reserve_space_5"}},
		Attrs:   forward.FusedBatchNormGradAttrs{},
		Kernels: bnKernels(bnOpGradV3),
		Samples: forward.FusedBatchNormGradSamples(true),
	})
	registry.MustSetGradient(forward.OpFusedBatchNorm, bnForwardGrad(bnGradV1))
	registry.MustSetGradient(forward.OpFusedBatchNormV3, bnForwardGrad(FusedBatchNormGradV3))
	registry.MustSetGradient(forward.OpFusedBatchNormEx, bnExGrad)
	registry.MustSetGradient(bnOpGradV1, bnGradGrad)
	registry.MustSetGradient(bnOpGradV3, bnGradGrad)
}

// bnGradOp applies FusedBatchNormGrad or FusedBatchNormGradV3 (the
// builder's signature, reserve_space_3 last).
type bnGradOp func(e registry.Emitter, attrs registry.Attrs[forward.FusedBatchNormGradAttrs],
	yBackprop, x, scale, reserveSpace1, reserveSpace2, reserveSpace3 registry.Value) []registry.Value

// bnGradV1 applies FusedBatchNormGrad, which has no reserve_space_3 input
// (the argument is ignored).
func bnGradV1(e registry.Emitter, attrs registry.Attrs[forward.FusedBatchNormGradAttrs],
	yBackprop, x, scale, reserveSpace1, reserveSpace2, _ registry.Value) []registry.Value {
	return FusedBatchNormGrad(e, attrs, yBackprop, x, scale, reserveSpace1, reserveSpace2)
}

// bnForwardGrad returns the gradient of a forward op whose grad op is
// applied by gradOp.
func bnForwardGrad(gradOp bnGradOp) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		res := e.Values(len(n.Inputs()))
		g := dy[0]
		if g == nil || !(n.NeedsGrad(0) || n.NeedsGrad(1) || n.NeedsGrad(2)) {
			return res, nil
		}
		a, ok := n.Attrs().(forward.FusedBatchNormAttrs)
		if !ok {
			return nil, registry.Errorf(registry.ErrInternal, "%s gradient: attrs of type %T", n.Op().Name, n.Attrs())
		}
		bnGradInto(res, e, n, a, g, gradOp)
		return res, nil
	}
}

// bnExGrad is the gradient of _FusedBatchNormEx: with activation Relu,
// y's upstream gradient through Relu first (ReluGrad with y, the
// activation's output, as features), then FusedBatchNormV3's gradient;
// the graph TensorFlow differentiates before its optimizer fuses the
// forward ops. Built from registered ops, so it has gradients of any
// order.
func bnExGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	res := e.Values(len(n.Inputs()))
	g := dy[0]
	if g == nil || !(n.NeedsGrad(0) || n.NeedsGrad(1) || n.NeedsGrad(2)) {
		return res, nil
	}
	a, ok := n.Attrs().(forward.FusedBatchNormExAttrs)
	if !ok {
		return nil, registry.Errorf(registry.ErrInternal, "%s gradient: attrs of type %T", n.Op().Name, n.Attrs())
	}
	if a.Relu() {
		g = ReluGrad(e, g, n.Outputs()[0])
	}
	bnGradInto(res, e, n, a.BatchNorm(), g, FusedBatchNormGradV3)
	return res, nil
}

// bnGradInto sets res[0..2] (those n needs) to the gradients of the
// forward node n (attrs a as FusedBatchNorm attrs) for y's upstream
// gradient g, with the grad op gradOp.
func bnGradInto(res []registry.Value, e registry.Emitter, n registry.Node, a forward.FusedBatchNormAttrs, g registry.Value, gradOp bnGradOp) {
	in, outs := n.Inputs(), n.Outputs()
	rs1, rs2 := outs[3], outs[4]
	if !a.Training() {
		rs1, rs2 = in[3], in[4]
	}
	var rs3 registry.Value // reserve_space_3 of FusedBatchNormV3 and _FusedBatchNormEx
	if len(outs) == 6 {
		rs3 = outs[5]
	}
	r := gradOp(e, bnGradAttrs(a), g, in[0], in[1], rs1, rs2, rs3)
	for i := 0; i < 3; i++ {
		if n.NeedsGrad(i) {
			res[i] = r[i]
		}
	}
}

// bnGradAttrs returns the grad op's attrs for a forward op's attrs a
// (forward.FusedBatchNormAttrs.GradAttrs: same epsilon, data format and
// mode, as TensorFlow's gradient passes them), made once for each such
// triple (the values are immutable), so that after the first call for
// each the backward pass allocates nothing for them.
func bnGradAttrs(a forward.FusedBatchNormAttrs) registry.Attrs[forward.FusedBatchNormGradAttrs] {
	k := bnGradKey{eps: math.Float32bits(a.Eps()), format: a.Format(), training: a.Training()}
	bnGradCache.RLock()
	v, ok := bnGradCache.m[k]
	bnGradCache.RUnlock()
	if ok {
		return v
	}
	bnGradCache.Lock()
	defer bnGradCache.Unlock()
	if v, ok := bnGradCache.m[k]; ok {
		return v
	}
	if bnGradCache.m == nil {
		bnGradCache.m = map[bnGradKey]registry.Attrs[forward.FusedBatchNormGradAttrs]{}
	}
	v = registry.NewAttrs(a.GradAttrs())
	bnGradCache.m[k] = v
	return v
}

// bnGradKey identifies the grad-op attrs of bnGradAttrs (epsilon by its
// bits, so that a NaN epsilon finds its entry).
type bnGradKey struct {
	eps      uint32
	format   string
	training bool
}

// bnGradCache holds bnGradAttrs's values.
var bnGradCache struct {
	sync.RWMutex
	m map[bnGradKey]registry.Attrs[forward.FusedBatchNormGradAttrs]
}

// bnBuilder applies the primitive ops of the second-order gradient for
// one grad-op node.
type bnBuilder struct {
	e     registry.Emitter
	shape []int          // x's shape
	bc    []int          // per-channel values broadcastable against x
	first bool           // channels-first layout
	axes  registry.Value // the reduction axes (all but the channel axis)
}

func (b *bnBuilder) mul(x, y registry.Value) registry.Value { return forward.Mul(b.e, x, y) }
func (b *bnBuilder) sub(x, y registry.Value) registry.Value { return forward.Sub(b.e, x, y) }

// add returns x + y, treating nil as zero.
func (b *bnBuilder) add(x, y registry.Value) registry.Value {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return forward.AddV2(b.e, x, y)
}

// mean and sum reduce over the reduction axes, keeping them (per-channel
// results of the broadcastable shape).
func (b *bnBuilder) mean(x registry.Value) registry.Value {
	return forward.Mean(b.e, sumKeepDims, x, b.axes)
}

func (b *bnBuilder) sum(x registry.Value) registry.Value {
	return forward.Sum(b.e, sumKeepDims, x, b.axes)
}

// perChannel makes a [C] vector broadcastable against x (a reshape for
// channels-first layouts; a channels-last [C] broadcasts as it is).
func (b *bnBuilder) perChannel(v registry.Value) registry.Value {
	if !b.first {
		return v
	}
	return forward.Reshape(b.e, v, b.e.Ints(b.bc...))
}

// vector reshapes a per-channel value back to [C].
func (b *bnBuilder) vector(v registry.Value) registry.Value {
	c := b.bc[1]
	if !b.first {
		c = b.bc[len(b.bc)-1]
	}
	return forward.Reshape(b.e, v, b.e.Ints(c))
}

// proj returns P(v) = v − M[v] − x̂·M[v·x̂], and M[v·x̂].
func (b *bnBuilder) proj(v, xh registry.Value) (p, mvx registry.Value) {
	mvx = b.mean(b.mul(v, xh))
	return b.sub(b.sub(v, b.mean(v)), b.mul(xh, mvx)), mvx
}

// bnGradGrad is the gradient of FusedBatchNormGrad and
// FusedBatchNormGradV3; see the comment at the top of the file.
func bnGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	in := n.Inputs()
	res := e.Values(len(in))
	u, wg, wb := dy[0], dy[1], dy[2]
	need0, need1, need2 := n.NeedsGrad(0), n.NeedsGrad(1), n.NeedsGrad(2)
	if (u == nil && wg == nil && wb == nil) || !(need0 || need1 || need2) {
		return res, nil
	}
	a, ok := n.Attrs().(forward.FusedBatchNormGradAttrs)
	if !ok {
		return nil, registry.Errorf(registry.ErrInternal, "%s gradient: attrs of type %T", n.Op().Name, n.Attrs())
	}
	g, x, gamma := in[0], in[1], in[2]
	xs := x.Shape()
	format := a.Format()
	first := format == "NCHW" || format == "NCDHW"
	ch := len(xs) - 1
	if first {
		ch = 1
	}
	b := &bnBuilder{e: e, shape: xs, first: first}
	b.bc = make([]int, len(xs))
	var axes []int
	for i, d := range xs {
		b.bc[i] = 1
		if i == ch {
			b.bc[i] = d
		} else {
			axes = append(axes, i)
		}
	}
	if redNumel(xs) == 0 {
		// No elements: the grad op's outputs are empty or 0 whatever its
		// inputs (TensorFlow's composite would put NaN means in here).
		if need0 {
			res[0] = forward.ZerosLike(e, g)
		}
		if need1 {
			res[1] = forward.ZerosLike(e, x)
		}
		if need2 {
			res[2] = forward.ZerosLike(e, gamma)
		}
		return res, nil
	}
	b.axes = e.Ints(axes...)
	eps := e.Scalar(x.Dtype(), float64(a.Eps()))
	gb := b.perChannel(gamma)
	var gdy, gx, ggamma registry.Value
	if a.Training() {
		mu := b.mean(x)
		xc := b.sub(x, mu)
		r := forward.Rsqrt(e, forward.AddV2(e, b.mean(forward.Square(e, xc)), eps))
		xh := b.mul(xc, r)
		var pdy, mdyxh registry.Value
		if need1 || (need2 && u != nil) {
			pdy, mdyxh = b.proj(g, xh)
		}
		if u != nil {
			pu, muxh := b.proj(u, xh)
			gr := b.mul(gb, r)
			if need0 {
				gdy = b.mul(gr, pu)
			}
			if need2 {
				ggamma = b.vector(b.mul(b.sum(b.mul(u, pdy)), r))
			}
			if need1 {
				inner := b.add(b.add(b.mul(xh, b.mean(b.mul(pu, g))), b.mul(pu, mdyxh)), b.mul(pdy, muxh))
				gx = forward.Neg(e, b.mul(b.mul(gr, r), inner))
			}
		}
		if wg != nil {
			wgb := b.perChannel(wg)
			if need0 {
				gdy = b.add(gdy, b.mul(wgb, xh))
			}
			if need1 {
				gx = b.add(gx, b.mul(b.mul(wgb, r), pdy))
			}
		}
	} else {
		m, v := b.perChannel(in[3]), b.perChannel(in[4])
		r := forward.Rsqrt(e, forward.AddV2(e, v, eps))
		if u != nil {
			if need0 {
				gdy = b.mul(u, b.mul(gb, r))
			}
			if need2 {
				ggamma = b.vector(b.mul(b.sum(b.mul(u, g)), r))
			}
		}
		if wg != nil {
			wr := b.mul(b.perChannel(wg), r)
			if need0 {
				gdy = b.add(gdy, b.mul(wr, b.sub(x, m)))
			}
			if need1 {
				gx = b.mul(wr, g)
			}
		}
	}
	if wb != nil && need0 {
		wbb := b.perChannel(wb)
		if gdy == nil {
			gdy = forward.BroadcastTo(e, wbb, e.Ints(xs...))
		} else {
			gdy = b.add(gdy, wbb)
		}
	}
	if need0 {
		res[0] = gdy
	}
	if need1 {
		res[1] = gx
	}
	if need2 {
		res[2] = ggamma
	}
	return res, nil
}

// ---------------------------------------------------------------------------
// Gradient ops.

// bnGradKernel is the kernel of FusedBatchNormGrad (op bnOpGradV1) or
// FusedBatchNormGradV3.
func bnGradKernel[T tensorx.Float](op string) registry.Kernel {
	names := []string{"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2", "reserve_space_3"}
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, format, err := forward.CheckFusedBatchNormOp[forward.FusedBatchNormGradAttrs](op, attrs, 1, names, in)
		if err != nil {
			return nil, err
		}
		dy, x, scale, m, v := in[0], in[1], in[2], in[3], in[4]
		if err := forward.CheckFusedBatchNormRank(op, "y_backprop", dy); err != nil {
			return nil, err
		}
		if err := forward.CheckFusedBatchNormRank(op, "x", x); err != nil {
			return nil, err
		}
		if err := forward.CheckFusedBatchNormVectors(op, []string{"scale", "saved mean", "saved variance"}, scale, m, v); err != nil {
			return nil, err
		}
		if !tensorx.SameShape(x.Shape(), dy.Shape()) {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: x and y_backprop must have same shape, but x has shape %s and y_backprop has shape %s",
				op, forward.FusedBatchNormShape(x.Shape()), forward.FusedBatchNormShape(dy.Shape()))
		}
		l, err := forward.FusedBatchNormLayout(op, "x", x.Shape(), format)
		if err != nil {
			return nil, err
		}
		C := l.C
		if err := forward.CheckFusedBatchNormChannels(op, "", C, []string{"scale", "reserve_space_1", "reserve_space_2"}, scale, m, v); err != nil {
			return nil, err
		}

		dt := x.Dtype()
		var outs [5]*tensor.Dense
		out := outs[:]
		if out[0], err = kc.Output(x.Dtype(), x.Shape()...); err != nil {
			return nil, err
		}
		for i, n := range []int{C, C, 0, 0} { // scale, offset backprops; empty reserve spaces
			if out[i+1], err = kc.Output(dt, n); err != nil {
				return nil, err
			}
		}
		dscale, doffset := tensorx.MustSlice[T](out[1]), tensorx.MustSlice[T](out[2])
		if l.Size() == 0 {
			clear(dscale)
			clear(doffset)
			return kc.Results(out...), nil
		}
		st, err := registry.Scratch[float64](kc, 2*C, false)
		if err != nil {
			return nil, err
		}
		s1, s2 := st[:C], st[C:]
		ms, vs, gamma := tensorx.MustSlice[T](m), tensorx.MustSlice[T](v), tensorx.MustSlice[T](scale)
		coef, err := registry.Scratch[T](kc, 3*C, false)
		if err != nil {
			return nil, err
		}
		eps := float64(a.Eps())
		dys, xs, dxs := tensorx.MustSlice[T](dy), tensorx.MustSlice[T](x), tensorx.MustSlice[T](out[0])
		part, err := registry.Scratch[float64](kc, bnkern.PartialsLen(l), false)
		if err != nil {
			return nil, err
		}
		if !a.Training() {
			// dx = dy·(γ·r) needs no statistics: one pass writes it and
			// sums Σdy, Σdy·(x − m).
			k := coef[:C]
			for c := range k {
				k[c] = T(float64(gamma[c]) / math.Sqrt(float64(vs[c])+eps))
			}
			bnkern.GradSums(s1, s2, dxs, dys, xs, l, ms, k, part, kc.NumThreads())
			for c := 0; c < C; c++ {
				r := 1 / math.Sqrt(float64(vs[c])+eps)
				dscale[c] = T(s2[c] * r)
				doffset[c] = T(s1[c])
			}
			return kc.Results(out...), nil
		}
		bnkern.GradSums(s1, s2, nil, dys, xs, l, ms, nil, part, kc.NumThreads())
		// dx = γr·(dy − M[dy] − (x − m)·r²·M[dy·(x − m)])
		//    = A·(dy − M[dy]) − B·(x − m).
		n := float64(l.Count())
		A, mdy, B := coef[:C], coef[C:2*C], coef[2*C:3*C]
		for c := 0; c < C; c++ {
			r := 1 / math.Sqrt(float64(vs[c])+eps)
			dscale[c] = T(s2[c] * r)
			doffset[c] = T(s1[c])
			ac := float64(gamma[c]) * r
			A[c] = T(ac)
			mdy[c] = T(s1[c] / n)
			B[c] = T(ac * r * r * s2[c] / n)
		}
		bnkern.GradDx(dxs, dys, xs, l, A, mdy, B, ms, kc.NumThreads())
		return kc.Results(out...), nil
	}
}
