package forward

import (
	"math"
	"strconv"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Fake-quantisation family, bit-exact with TensorFlow's float32 CPU
// kernels (spec/fake_quant.md):
//
//   - FakeQuantWithMinMaxArgs(inputs), range from attrs;
//   - FakeQuantWithMinMaxVars(inputs, min, max), scalar range;
//   - FakeQuantWithMinMaxVarsPerChannel(inputs, min, max), one range per
//     channel (the last axis of inputs, any rank >= 1);
//   - their gradient ops (TensorFlow's straight-through rule), which
//     produce the input gradient and, for Vars/PerChannel, the min/max
//     gradients in one fused pass;
//   - two ops TensorFlow lacks, tapegrad.FakeQuantWithMinMaxVarsGradientAdjoint
//     and tapegrad.FakeQuantWithMinMaxVarsPerChannelGradientAdjoint: the
//     adjoints of the (linear in `gradients`) gradient ops, so that the
//     gradient ops have gradients and every order of differentiation works.
//
// Numerics. float32 is TensorFlow's dtype: every + − × ÷ of the spec is
// rounded to float32 (explicit conversions at each rounding point keep Go
// from fusing a multiply and an add into one FMA). float64 is an extension:
// the same algorithm, the same operation order, in float64 arithmetic
// (Args' float32 min/max attrs are widened exactly). Element rounding is
// floor(v + 0.5) (round half up); the zero point is rounded half away from
// zero (C++ std::round) and clamped to [quant_min, quant_max]. Args and
// PerChannel multiply by the separately computed inverse scale
// (quant_max − quant_min)/(max − min); Vars divides by the scale, as
// TensorFlow's kernels do (the two can differ in the last bit).
//
// NaN inputs: TensorFlow leaves the result undefined; here a NaN input
// gives a NaN output and is neither inside nor outside the range for the
// gradients (its input gradient is 0 and it adds to no min/max sum), as
// TensorFlow's comparisons do; in the min == max == 0 case it outputs 0 and
// passes its gradient, like every other input. A NaN zero point (NaN min
// or max) is treated as quant_min. Degenerate ranges TensorFlow does not
// check (min > max, min == max != 0) run the formulas as written.

// FakeQuantAttrs are the attrs of FakeQuantWithMinMaxVars,
// FakeQuantWithMinMaxVarsPerChannel, their gradient ops and the tapegrad
// adjoint ops. In a Go struct NumBits 0 means TensorFlow's default 8; an
// explicit num_bits 0 from registry.ParseAttrs (golden files) is kept and
// refused like any value outside 2..16.
type FakeQuantAttrs struct {
	// NumBits is the quantiser's bit width, 2..16 (default 8).
	NumBits int `tf:"num_bits" default:"8"`
	// NarrowRange makes the grid [1, 2^num_bits − 1] instead of
	// [0, 2^num_bits − 1].
	NarrowRange bool `tf:"narrow_range"`
}

// FakeQuantArgsAttrs are the attrs of FakeQuantWithMinMaxArgs and
// FakeQuantWithMinMaxArgsGradient. Min and Max are pointers because 0 is a
// legal value that differs from TensorFlow's defaults (-6 and 6); nil means
// the default. Write them with new, e.g. Min: new(float32(-1)).
type FakeQuantArgsAttrs struct {
	// Min is the lower end of the range (default -6); it must be < Max.
	Min *float32 `tf:"min" default:"-6"`
	// Max is the upper end of the range (default 6).
	Max *float32 `tf:"max" default:"6"`
	// NumBits is the quantiser's bit width, 2..16 (default 8).
	NumBits int `tf:"num_bits" default:"8"`
	// NarrowRange makes the grid [1, 2^num_bits − 1].
	NarrowRange bool `tf:"narrow_range"`
}

// Op names of the family.
const (
	fqArgs        = "FakeQuantWithMinMaxArgs"
	fqArgsGrad    = "FakeQuantWithMinMaxArgsGradient"
	fqVars        = "FakeQuantWithMinMaxVars"
	fqVarsGrad    = "FakeQuantWithMinMaxVarsGradient"
	fqVarsAdj     = "tapegrad.FakeQuantWithMinMaxVarsGradientAdjoint"
	fqChannel     = "FakeQuantWithMinMaxVarsPerChannel"
	fqChannelGrad = "FakeQuantWithMinMaxVarsPerChannelGradient"
	fqChannelAdj  = "tapegrad.FakeQuantWithMinMaxVarsPerChannelGradientAdjoint"
)

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: fqArgs,
		Doc: "outputs = inputs snapped to the num_bits grid of the attr range [min, max] (nudged so that 0 is on the grid), " +
			"clamped; float32 (TensorFlow) and float64",
		Inputs: args("inputs"), Outputs: args("outputs"), Attrs: FakeQuantArgsAttrs{},
		Kernels: floatKernels(fqArgsKernel[float32], fqArgsKernel[float64]),
		Samples: fqArgsSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name:   fqArgsGrad,
		Doc:    "backprops = gradients where nudged_min <= inputs <= nudged_max, else 0 (straight-through gradient of FakeQuantWithMinMaxArgs)",
		Inputs: args("gradients", "inputs"), Outputs: args("backprops"), Attrs: FakeQuantArgsAttrs{},
		Kernels: floatKernels(fqArgsGradKernel[float32], fqArgsGradKernel[float64]),
		Samples: fqArgsGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqVars,
		Doc: "outputs = inputs snapped to the num_bits grid of the scalar range [min, max] (nudged so that 0 is on the grid), " +
			"clamped; 0 if min == max == 0",
		Inputs: args("inputs", "min", "max"), Outputs: args("outputs"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqVarsKernel[float32], fqVarsKernel[float64]),
		Samples: fqVarsSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqVarsGrad,
		Doc: "straight-through gradients of FakeQuantWithMinMaxVars: backprops_wrt_input = gradients inside the nudged range, " +
			"backprop_wrt_min/max = sums of gradients below/above it (scalars)",
		Inputs:  args("gradients", "inputs", "min", "max"),
		Outputs: args("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqVarsGradKernel[float32], fqVarsGradKernel[float64]),
		Samples: fqVarsGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqVarsAdj,
		Doc: "goes beyond TensorFlow: the adjoint of FakeQuantWithMinMaxVarsGradient in its gradients input, " +
			"d_gradients = d_backprops inside the nudged range, d_min below it, d_max above it (the gradient op's gradient)",
		Inputs:  args("d_backprops", "d_min", "d_max", "inputs", "min", "max"),
		Outputs: args("d_gradients"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqVarsAdjKernel[float32], fqVarsAdjKernel[float64]),
		Samples: fqVarsAdjSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqChannel,
		Doc: "outputs = inputs snapped, per channel c of the last axis, to the num_bits grid of [min[c], max[c]] " +
			"(nudged so that 0 is on the grid), clamped; 0 in channels with min == max == 0",
		Inputs: args("inputs", "min", "max"), Outputs: args("outputs"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqChannelKernel[float32], fqChannelKernel[float64]),
		Samples: fqChannelSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqChannelGrad,
		Doc: "straight-through gradients of FakeQuantWithMinMaxVarsPerChannel: backprops_wrt_input = gradients inside the channel's " +
			"nudged range, backprop_wrt_min/max[c] = per-channel sums of gradients below/above it; inputs of rank 1..4",
		Inputs:  args("gradients", "inputs", "min", "max"),
		Outputs: args("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqChannelGradKernel[float32], fqChannelGradKernel[float64]),
		Samples: fqChannelGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqChannelAdj,
		Doc: "goes beyond TensorFlow: the adjoint of FakeQuantWithMinMaxVarsPerChannelGradient in its gradients input, " +
			"d_gradients = d_backprops inside the channel's nudged range, d_min[c] below it, d_max[c] above it (the gradient op's gradient)",
		Inputs:  args("d_backprops", "d_min", "d_max", "inputs", "min", "max"),
		Outputs: args("d_gradients"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqChannelAdjKernel[float32], fqChannelAdjKernel[float64]),
		Samples: fqChannelAdjSamples,
	})
}

// ---------------------------------------------------------------------------
// The quantisation grid.

// fqGrid is the nudged grid of one range, in the element type.
type fqGrid[T tensorx.Float] struct {
	nmin, nmax T // nudged bounds
	scale      T // grid step
	inv        T // (quant_max − quant_min) / (max − min), computed separately
	qzero      T // floor(−nmin·inv + 0.5): the grid index of real 0
	zero       bool
}

// fqQuantRange returns quant_min and quant_max for num_bits and
// narrow_range.
func fqQuantRange(numBits int, narrow bool) (qmin, qmax int) {
	if narrow {
		qmin = 1
	}
	return qmin, 1<<numBits - 1
}

// fqFloor is floor(v): v is already rounded to T, and floor is exact in
// float64 for both element types. (Truncating through an integer and
// stepping down for negative fractions measured slower here: the step is
// a mispredicted branch for half the negative values.)
func fqFloor[T tensorx.Float](v T) T { return T(math.Floor(float64(v))) }

// fqNudge computes the nudged grid of [lo, hi] = [min, max] (spec §2),
// every operation rounded to T. The quant_zero index uses the inverse
// scale for every op, as the spec writes it (for Vars, −nmin/scale would
// floor to the same integer: −nmin is (zp − quant_min)·scale to within an
// ulp). The min == max == 0 case is flagged (zero) and
// its grid is all zeros; callers give it its special meaning.
func fqNudge[T tensorx.Float](lo, hi T, qmin, qmax int) fqGrid[T] {
	if lo == 0 && hi == 0 {
		return fqGrid[T]{zero: true}
	}
	qminF, qmaxF := T(qmin), T(qmax)
	steps := T(qmaxF - qminF) // exact: integers below 2^16
	rng := T(hi - lo)
	scale := T(rng / steps)
	inv := T(steps / rng)
	zpFromMin := T(qminF - T(lo/scale))
	var zp T
	switch {
	case zpFromMin < qminF:
		zp = qminF
	case zpFromMin > qmaxF:
		zp = qmaxF
	case zpFromMin == zpFromMin:
		zp = T(math.Round(float64(zpFromMin))) // half away from zero, as std::round
	default: // NaN: TensorFlow's integer cast is undefined
		zp = qminF
	}
	g := fqGrid[T]{scale: scale, inv: inv}
	g.nmin = T(T(qminF-zp) * scale)
	g.nmax = T(T(qmaxF-zp) * scale)
	g.qzero = fqFloor(T(T(-g.nmin*g.inv) + 0.5))
	return g
}

// ---------------------------------------------------------------------------
// Validation.

// fqShapeString formats a shape as TensorFlow does ("[2,3]", "[]").
func fqShapeString(s []int) string {
	b := make([]byte, 0, 16)
	b = append(b, '[')
	for i, d := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return string(append(b, ']'))
}

// fqBits checks num_bits and returns the integer grid bounds.
func fqBits(op string, numBits int, narrow bool) (qmin, qmax int, err error) {
	if numBits < 2 || numBits > 16 {
		return 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: num_bits must be between 2 and 16, inclusive (got %d)", op, numBits)
	}
	qmin, qmax = fqQuantRange(numBits, narrow)
	return qmin, qmax, nil
}

// fqDtypes checks that every input has the dtype of input 0.
func fqDtypes(op string, names []string, in []*tensor.Dense) error {
	for i, t := range in[1:] {
		if t.Dtype() != in[0].Dtype() {
			return registry.Errorf(registry.ErrDtype, "%s: %s has dtype %v, expected %v like %s", op, names[i+1], t.Dtype(), in[0].Dtype(), names[0])
		}
	}
	return nil
}

// fqSameShape checks that gradients (or d_backprops) and inputs have the
// same shape.
func fqSameShape(op, what string, g, x *tensor.Dense) error {
	if !tensorx.SameShape(g.Shape(), x.Shape()) {
		return registry.Errorf(registry.ErrShape, "%s: gradient and input must be the same size (%s %s, inputs %s)",
			op, what, fqShapeString(g.Shape()), fqShapeString(x.Shape()))
	}
	return nil
}

// fqScalars checks that min and max (and any further range-shaped
// tensors, e.g. d_min and d_max) are scalars.
func fqScalars(op string, names []string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if r := len(t.Shape()); r != 0 {
			return registry.Errorf(registry.ErrShape, "%s: `%s` must be rank 0 but is rank %d", op, names[i], r)
		}
	}
	return nil
}

// fqChannels checks the per-channel shapes: inputs of rank >= 1 (and at
// most maxRank if > 0), range tensors of shape [d] with d the last
// dimension of inputs. It returns d.
func fqChannels(op string, x *tensor.Dense, maxRank int, names []string, ts ...*tensor.Dense) (int, error) {
	s := x.Shape()
	if len(s) < 1 {
		return 0, registry.Errorf(registry.ErrShape, "%s: input must be at least rank 1, got shape %s", op, fqShapeString(s))
	}
	if maxRank > 0 && len(s) > maxRank {
		return 0, registry.Errorf(registry.ErrShape, "%s: inputs must be at most rank %d, got shape %s", op, maxRank, fqShapeString(s))
	}
	d := s[len(s)-1]
	for i, t := range ts {
		ts := t.Shape()
		if len(ts) != 1 {
			return 0, registry.Errorf(registry.ErrShape, "%s: `%s` must be rank 1 but is rank %d", op, names[i], len(ts))
		}
		if ts[0] != d {
			return 0, registry.Errorf(registry.ErrShape, "%s: %s has incorrect size, expected %d was %d", op, names[i], d, ts[0])
		}
	}
	return d, nil
}

// ---------------------------------------------------------------------------
// Loops. Every loop works on a flat element range [lo, hi) of a tensor
// whose channel (grid index) is the flat index modulo d; the per-tensor ops
// use d = 1. Grids are computed once per channel and call.

// fqGrainElems is the least number of elements per parallel chunk. The
// chunks (and the per-chunk partial sums of the gradients) depend only on
// the shapes, never on the thread count.
const fqGrainElems = 1 << 15

// Every element loop (forward, gradient, adjoint of every op) is one of
// package fqkern: branch-free AVX2 assembly for float32 and float64 on
// amd64, Go loops otherwise, bit-exact with the scalar rules of the grid
// (floor(((min(x, nmax) max nmin) − nmin)·inv − qzero + 0.5)·scale, or
// with /scale for Vars) and of the gradient bounds; the scalar rules
// (quantMul, quantDiv and the scalar gradient and adjoint loops of the
// tests) are their references. The loops take per-channel tables of
// fqkern.Period(d) positions, and every chunk is a whole number of table
// periods (but the last), so that calls start at the table's first
// position.

// fqGrain returns the chunk size for a table of period l.
func fqGrain(l int) int { return max(l, fqGrainElems/l*l) }

// Steady-state calls allocate nothing on one thread: the tables live in
// the kernel's frame (fqkern.Quant and Bounds values) with their rows in
// kernel scratch (registry.Scratch, recycled by the allocator), loops run
// directly when parallel.For would run them serially (a closure handed
// to it escapes: the parallel branches give theirs a copy of the table
// header, so that the caller's stays on its stack), the gradient's
// per-worker sums are scratch too, and results go through kc.Results.

// fqQuantTable lays out in q, in scratch memory of kc, the forward table
// of the ranges [mins[c], maxs[c]] (one per channel, at least one),
// nudged on the grid [qmin, qmax]: dividing by the scale if div (Vars),
// else multiplying by the inverse scale (Args, PerChannel).
func fqQuantTable[T tensorx.Float](kc *registry.KernelCtx, q *fqkern.Quant[T], div bool, mins, maxs []T, qmin, qmax int) error {
	buf, err := registry.Scratch[T](kc, fqkern.QuantSize(len(mins)), false)
	if err != nil {
		return err
	}
	q.Init(len(mins), div, buf)
	for c := range mins {
		g := fqNudge(mins[c], maxs[c], qmin, qmax)
		q.Set(c, fqkern.Grid[T]{NMin: g.nmin, NMax: g.nmax, Inv: g.inv, QZero: g.qzero, Scale: g.scale, Zero: g.zero})
	}
	return nil
}

// fqBoundsTable lays out in b, in scratch memory of kc, the gradient
// table of the ranges [mins[c], maxs[c]] (one per channel, at least one)
// nudged on the grid [qmin, qmax]: the nudged range of each channel, or
// (−Inf, +Inf) passing every gradient in the min == max == 0 case, and,
// for the adjoint (dmin not nil), each channel's d_min and d_max.
func fqBoundsTable[T tensorx.Float](kc *registry.KernelCtx, b *fqkern.Bounds[T], mins, maxs []T, qmin, qmax int, dmin, dmax []T) error {
	buf, err := registry.Scratch[T](kc, fqkern.BoundsSize(len(mins)), false)
	if err != nil {
		return err
	}
	b.Init(len(mins), buf)
	for c := range mins {
		g := fqNudge(mins[c], maxs[c], qmin, qmax)
		b.Set(c, g.nmin, g.nmax, g.zero)
		if dmin != nil {
			b.SetAdjoint(c, dmin[c], dmax[c])
		}
	}
	return nil
}

// fqForward runs the forward table q over x into y in parallel: quantDiv
// (a dividing table, Vars) or quantMul (Args, PerChannel) in every
// channel, +0 in the min == max == 0 channels (NaN inputs included).
func fqForward[T tensorx.Float](kc *registry.KernelCtx, q *fqkern.Quant[T], x, y []T) {
	grain := fqGrain(q.Period())
	if threads := kc.NumThreads(); serial(threads, len(x), grain) {
		q.Run(y, x, 0)
	} else {
		qc := *q
		parallel.For(threads, len(x), grain, func(lo, hi int) { qc.Run(y[lo:hi], x[lo:hi], lo) })
	}
}

// fqGradient is the fused gradient pass of table b: the input gradient
// (gradients inside [lo, hi] of the channel, inclusive; everything in a
// min == max == 0 channel, NaN inputs included; 0 elsewhere) and the
// per-channel sums of the gradients strictly below / above the range.
// The sums run in float64: per table position within a chunk (element
// order), folded into channels per chunk (position order), and the
// chunks combined in chunk order, into bmin and bmax (one per channel).
func fqGradient[T tensorx.Float](kc *registry.KernelCtx, b *fqkern.Bounds[T], g, x, bi, bmin, bmax []T) error {
	d, l := len(bmin), b.Period()
	grain := fqGrain(l)
	nc := parallel.Chunks(len(x), grain)
	part, err := registry.Scratch[float64](kc, 2*d*nc, true)
	if err != nil {
		return err
	}
	// Per-worker sums, the chunks taken one at a time by whichever worker
	// is free (parallel.Each).
	threads := max(1, min(kc.NumThreads(), nc))
	accs, err := registry.Scratch[float64](kc, threads*2*l, false)
	if err != nil {
		return err
	}
	if threads == 1 {
		fqGradChunks(b, g, x, bi, part, accs, d, grain, 0, nc)
	} else {
		bc := *b
		parallel.Each(threads, nc, func(w, k int) {
			fqGradChunks(&bc, g, x, bi, part, accs[2*l*w:2*l*(w+1)], d, grain, k, k+1)
		})
	}
	for c := range d {
		var lo, hi float64
		for k := range nc {
			lo += part[2*d*k+c]
			hi += part[2*d*k+d+c]
		}
		bmin[c], bmax[c] = T(lo), T(hi)
	}
	return nil
}

// fqGradChunks runs the gradient of the chunks [k0, k1) of grain
// elements, folding chunk k's per-position sums (acc, 2·Period elements)
// into part[2dk:2d(k+1)] (below, then above, for the d channels).
func fqGradChunks[T tensorx.Float](b *fqkern.Bounds[T], g, x, bi []T, part, acc []float64, d, grain, k0, k1 int) {
	for k := k0; k < k1; k++ {
		lo, hi := k*grain, min((k+1)*grain, len(x))
		clear(acc)
		b.Grad(bi[lo:hi], g[lo:hi], x[lo:hi], lo, acc)
		p := part[2*d*k : 2*d*(k+1)]
		b.Fold(acc, p[:d], p[d:])
	}
}

// fqAdjoint runs the adjoint pass of table b (with d_min and d_max) in
// parallel: d_backprops inside the range (everything in a min == max == 0
// channel), d_min[c] below it, d_max[c] above it, 0 for NaN inputs.
func fqAdjoint[T tensorx.Float](kc *registry.KernelCtx, b *fqkern.Bounds[T], dbi, x, out []T) {
	grain := fqGrain(b.Period())
	if threads := kc.NumThreads(); serial(threads, len(x), grain) {
		b.Adjoint(out, dbi, x, 0)
	} else {
		bc := *b
		parallel.For(threads, len(x), grain, func(lo, hi int) { bc.Adjoint(out[lo:hi], dbi[lo:hi], x[lo:hi], lo) })
	}
}

// ---------------------------------------------------------------------------
// Kernels.

// Input names of the error messages (package variables: a slice literal
// per call could cost an allocation).
var (
	fqNamesFwd     = []string{"inputs", "min", "max"}
	fqNamesGrad    = []string{"gradients", "inputs", "min", "max"}
	fqNamesAdj     = []string{"d_backprops", "d_min", "d_max", "inputs", "min", "max"}
	fqNamesArgs    = []string{"gradients", "inputs"}
	fqNamesMinMax  = []string{"min", "max"}
	fqNamesAdjRngs = []string{"d_min", "d_max", "min", "max"}
)

// fqArgsRange validates the Args attrs and returns the range and the
// integer grid bounds.
func fqArgsRange(op string, a FakeQuantArgsAttrs) (lo, hi float32, qmin, qmax int, err error) {
	lo, hi = -6, 6
	if a.Min != nil {
		lo = *a.Min
	}
	if a.Max != nil {
		hi = *a.Max
	}
	if !(lo < hi) {
		return 0, 0, 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: min has to be smaller than max, was: %v >= %v", op, lo, hi)
	}
	qmin, qmax, err = fqBits(op, a.NumBits, a.NarrowRange)
	return lo, hi, qmin, qmax, err
}

func fqArgsKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	lo, hi, qmin, qmax, err := fqArgsRange(fqArgs, attrs.(FakeQuantArgsAttrs))
	if err != nil {
		return nil, err
	}
	out, err := like(kc, in[0])
	if err != nil {
		return nil, err
	}
	// Args' float32 range widened to T: exact.
	mins, maxs := [1]T{T(lo)}, [1]T{T(hi)}
	var q fqkern.Quant[T]
	if err := fqQuantTable(kc, &q, false, mins[:], maxs[:], qmin, qmax); err != nil {
		return nil, err
	}
	fqForward(kc, &q, data[T](in[0]), data[T](out))
	return kc.Results(out), nil
}

func fqArgsGradKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	lo, hi, qmin, qmax, err := fqArgsRange(fqArgsGrad, attrs.(FakeQuantArgsAttrs))
	if err != nil {
		return nil, err
	}
	if err := fqDtypes(fqArgsGrad, fqNamesArgs, in); err != nil {
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
	var b fqkern.Bounds[T]
	if err := fqBoundsTable(kc, &b, mins[:], maxs[:], qmin, qmax, zero[:], zero[:]); err != nil {
		return nil, err
	}
	fqAdjoint(kc, &b, data[T](in[0]), data[T](in[1]), data[T](out))
	return kc.Results(out), nil
}

// fqRangeCheck checks num_bits (attrs are FakeQuantAttrs) and that every
// input (named by names) has the dtype of input 0, and returns the
// integer grid bounds.
func fqRangeCheck(op string, attrs any, names []string, in []*tensor.Dense) (qmin, qmax int, err error) {
	a := attrs.(FakeQuantAttrs)
	if qmin, qmax, err = fqBits(op, a.NumBits, a.NarrowRange); err != nil {
		return 0, 0, err
	}
	return qmin, qmax, fqDtypes(op, names, in)
}

// fqRanges checks the range-shaped inputs ts (named by names; their last
// two are min and max) of a Vars op (scalars) or a PerChannel op (vectors
// of the size of the last axis of x, of rank at most maxRank if > 0) and
// returns the data of min and max: one range for Vars, one per channel
// for PerChannel (none when x has no channel).
func fqRanges[T tensorx.Float](op string, perChannel bool, x *tensor.Dense, maxRank int, names []string, ts []*tensor.Dense) (mins, maxs []T, err error) {
	if !perChannel {
		err = fqScalars(op, names, ts...)
	} else {
		_, err = fqChannels(op, x, maxRank, names, ts...)
	}
	if err != nil {
		return nil, nil, err
	}
	return data[T](ts[len(ts)-2]), data[T](ts[len(ts)-1]), nil
}

func fqVarsKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fqRangeKernel[T](kc, fqVars, false, attrs, in)
}

func fqChannelKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fqRangeKernel[T](kc, fqChannel, true, attrs, in)
}

// fqRangeKernel is the kernel of the Vars (perChannel false: the
// dividing forward) and PerChannel forward ops.
func fqRangeKernel[T tensorx.Float](kc *registry.KernelCtx, op string, perChannel bool, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	qmin, qmax, err := fqRangeCheck(op, attrs, fqNamesFwd, in)
	if err != nil {
		return nil, err
	}
	mins, maxs, err := fqRanges[T](op, perChannel, in[0], 0, fqNamesMinMax, in[1:])
	if err != nil {
		return nil, err
	}
	if !perChannel && mins[0] == 0 && maxs[0] == 0 {
		out, err := kc.Zeros(in[0].Dtype(), in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		return kc.Results(out), nil
	}
	out, err := like(kc, in[0])
	if err != nil {
		return nil, err
	}
	if len(mins) == 0 || tensorx.Len(in[0]) == 0 {
		return kc.Results(out), nil
	}
	var q fqkern.Quant[T]
	if err := fqQuantTable(kc, &q, !perChannel, mins, maxs, qmin, qmax); err != nil {
		return nil, err
	}
	fqForward(kc, &q, data[T](in[0]), data[T](out))
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
	qmin, qmax, err := fqRangeCheck(op, attrs, fqNamesGrad, in)
	if err != nil {
		return nil, err
	}
	if err := fqSameShape(op, "gradients", in[0], in[1]); err != nil {
		return nil, err
	}
	mins, maxs, err := fqRanges[T](op, perChannel, in[1], 4, fqNamesMinMax, in[2:])
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
	var b fqkern.Bounds[T]
	if err := fqBoundsTable(kc, &b, mins, maxs, qmin, qmax, nil, nil); err != nil {
		return nil, err
	}
	if err := fqGradient(kc, &b, data[T](in[0]), data[T](in[1]), data[T](bi), data[T](bmin), data[T](bmax)); err != nil {
		return nil, err
	}
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
	qmin, qmax, err := fqRangeCheck(op, attrs, fqNamesAdj, in)
	if err != nil {
		return nil, err
	}
	if err := fqSameShape(op, "d_backprops", in[0], in[3]); err != nil {
		return nil, err
	}
	ranges := [4]*tensor.Dense{in[1], in[2], in[4], in[5]}
	mins, maxs, err := fqRanges[T](op, perChannel, in[3], 0, fqNamesAdjRngs, ranges[:])
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
	var b fqkern.Bounds[T]
	if err := fqBoundsTable(kc, &b, mins, maxs, qmin, qmax, data[T](in[1]), data[T](in[2])); err != nil {
		return nil, err
	}
	fqAdjoint(kc, &b, data[T](in[0]), data[T](in[3]), data[T](out))
	return kc.Results(out), nil
}
