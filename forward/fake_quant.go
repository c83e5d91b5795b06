package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Fake-quantisation family, bit-exact with TensorFlow's float32 CPU
// kernels (docs/spec/fake_quant.md):
//
//   - FakeQuantWithMinMaxArgs(inputs), range from attrs;
//   - FakeQuantWithMinMaxVars(inputs, min, max), scalar range;
//   - FakeQuantWithMinMaxVarsPerChannel(inputs, min, max), one range per
//     channel (the last axis of inputs, any rank >= 1);
//
// Their gradient ops (FakeQuantWithMinMaxArgsGradient,
// FakeQuantWithMinMaxVarsGradient, FakeQuantWithMinMaxVarsPerChannelGradient)
// and the tapegrad adjoint ops of the latter two are registered in package
// backward (backward/fake_quant.go), with the same attrs, validation
// (FakeQuantCheck, FakeQuantRanges) and numerics. The loops are package
// internal/fqkern's.
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

// Op names of the family's forward ops.
const (
	fqArgs    = "FakeQuantWithMinMaxArgs"
	fqVars    = "FakeQuantWithMinMaxVars"
	fqChannel = "FakeQuantWithMinMaxVarsPerChannel"
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
		Name: fqVars,
		Doc: "outputs = inputs snapped to the num_bits grid of the scalar range [min, max] (nudged so that 0 is on the grid), " +
			"clamped; 0 if min == max == 0",
		Inputs: args("inputs", "min", "max"), Outputs: args("outputs"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqVarsKernel[float32], fqVarsKernel[float64]),
		Samples: fqVarsSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fqChannel,
		Doc: "outputs = inputs snapped, per channel c of the last axis, to the num_bits grid of [min[c], max[c]] " +
			"(nudged so that 0 is on the grid), clamped; 0 in channels with min == max == 0",
		Inputs: args("inputs", "min", "max"), Outputs: args("outputs"), Attrs: FakeQuantAttrs{},
		Kernels: floatKernels(fqChannelKernel[float32], fqChannelKernel[float64]),
		Samples: fqChannelSamples,
	})
}

// ---------------------------------------------------------------------------
// Validation.

// fqBits checks num_bits and returns the integer grid bounds.
func fqBits(op string, numBits int, narrow bool) (qmin, qmax int, err error) {
	if numBits < 2 || numBits > 16 {
		return 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: num_bits must be between 2 and 16, inclusive (got %d)", op, numBits)
	}
	qmin, qmax = fqkern.QuantRange(numBits, narrow)
	return qmin, qmax, nil
}

// FakeQuantDtypes checks that every input of op (named by names) has the
// dtype of input 0, with TensorFlow's error text: the check of every op
// of the family, gradient ops (package backward) included.
func FakeQuantDtypes(op string, names []string, in []*tensor.Dense) error {
	for i, t := range in[1:] {
		if t.Dtype() != in[0].Dtype() {
			return registry.InputErrorf(registry.ErrDtype, i+1, "%s: %s has dtype %v, expected %v like %s", op, names[i+1], t.Dtype(), in[0].Dtype(), names[0])
		}
	}
	return nil
}

// fqScalars checks that min and max (and any further range-shaped
// tensors, e.g. d_min and d_max) are scalars.
func fqScalars(op string, names []string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if r := len(t.Shape()); r != 0 {
			return registry.NamedInputErrorf(registry.ErrShape, op, names[i], "%s: `%s` must be rank 0 but is rank %d", op, names[i], r)
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
		return 0, registry.NamedInputErrorf(registry.ErrShape, op, "inputs", "%s: input must be at least rank 1, got shape %s", op, tensorx.FormatShape(s))
	}
	if maxRank > 0 && len(s) > maxRank {
		return 0, registry.NamedInputErrorf(registry.ErrShape, op, "inputs", "%s: inputs must be at most rank %d, got shape %s", op, maxRank, tensorx.FormatShape(s))
	}
	d := s[len(s)-1]
	for i, t := range ts {
		ts := t.Shape()
		if len(ts) != 1 {
			return 0, registry.NamedInputErrorf(registry.ErrShape, op, names[i], "%s: `%s` must be rank 1 but is rank %d", op, names[i], len(ts))
		}
		if ts[0] != d {
			return 0, registry.NamedInputErrorf(registry.ErrShape, op, names[i], "%s: %s has incorrect size, expected %d was %d", op, names[i], d, ts[0])
		}
	}
	return d, nil
}

// ---------------------------------------------------------------------------
// Kernels. The loops are package fqkern's (fqkern.Forward over a table
// of the channels' nudged grids). Steady-state calls allocate nothing on
// one thread: the table lives in the kernel's frame (an fqkern.Quant
// value) with its rows in kernel scratch (registry.Scratch, recycled by
// the allocator), and results go through kc.Results.

// Input names of the error messages (package variables: a slice literal
// per call could cost an allocation).
var (
	fqNamesFwd    = []string{"inputs", "min", "max"}
	fqNamesMinMax = []string{"min", "max"}
)

// Range validates the attrs for op (FakeQuantWithMinMaxArgs or its
// gradient op; the errors name op) and returns the range [lo, hi] (nil
// Min or Max meaning TensorFlow's -6 or 6) and the integer grid bounds
// quant_min, quant_max.
func (a FakeQuantArgsAttrs) Range(op string) (lo, hi float32, qmin, qmax int, err error) {
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
	lo, hi, qmin, qmax, err := attrs.(FakeQuantArgsAttrs).Range(fqArgs)
	if err != nil {
		return nil, err
	}
	out, err := like(kc, in[0])
	if err != nil {
		return nil, err
	}
	// Args' float32 range widened to T: exact.
	mins, maxs := [1]T{T(lo)}, [1]T{T(hi)}
	buf, err := registry.Scratch[T](kc, fqkern.QuantSize(1), false)
	if err != nil {
		return nil, err
	}
	var q fqkern.Quant[T]
	q.InitRanges(buf, false, mins[:], maxs[:], qmin, qmax)
	fqkern.Forward(data[T](out), data[T](in[0]), &q, kc.NumThreads())
	return kc.Results(out), nil
}

// FakeQuantCheck checks num_bits (attrs are FakeQuantAttrs) and that
// every input of op (named by names) has the dtype of input 0, and returns
// the integer grid bounds quant_min, quant_max: the first checks of the
// Vars and PerChannel ops and of their gradient and adjoint ops (package
// backward).
func FakeQuantCheck(op string, attrs any, names []string, in []*tensor.Dense) (qmin, qmax int, err error) {
	a := attrs.(FakeQuantAttrs)
	if qmin, qmax, err = fqBits(op, a.NumBits, a.NarrowRange); err != nil {
		return 0, 0, err
	}
	return qmin, qmax, FakeQuantDtypes(op, names, in)
}

// FakeQuantRanges checks the range-shaped inputs ts of op (named by
// names; their last two are min and max) of a Vars op (scalars) or a
// PerChannel op (vectors of the size of the last axis of x, of rank at
// most maxRank if > 0), with TensorFlow's error texts, and returns the
// data of min and max: one range for Vars, one per channel for PerChannel
// (none when x has no channel). The gradient and adjoint ops of package
// backward check theirs with it too.
func FakeQuantRanges[T tensorx.Float](op string, perChannel bool, x *tensor.Dense, maxRank int, names []string, ts []*tensor.Dense) (mins, maxs []T, err error) {
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
	qmin, qmax, err := FakeQuantCheck(op, attrs, fqNamesFwd, in)
	if err != nil {
		return nil, err
	}
	mins, maxs, err := FakeQuantRanges[T](op, perChannel, in[0], 0, fqNamesMinMax, in[1:])
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
	buf, err := registry.Scratch[T](kc, fqkern.QuantSize(len(mins)), false)
	if err != nil {
		return nil, err
	}
	var q fqkern.Quant[T]
	q.InitRanges(buf, !perChannel, mins, maxs, qmin, qmax)
	fqkern.Forward(data[T](out), data[T](in[0]), &q, kc.NumThreads())
	return kc.Results(out), nil
}
