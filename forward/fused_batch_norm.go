package forward

import (
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/bnkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// FusedBatchNorm family: FusedBatchNorm and FusedBatchNormV3, with
// TensorFlow's names, argument order, attributes, validation and
// CPU-kernel outputs (docs/spec/fused_batch_norm.md). Their gradient ops,
// FusedBatchNormGrad and FusedBatchNormGradV3, are registered in package
// backward, which shares the attrs and input checks of this file.
//
// Dtypes: TensorFlow has float32 kernels only; tapegrad adds float64 (for
// gradient checks). Every input has x's dtype (for float32 this is
// TensorFlow's rule: T = U = float).
//
// Layouts: x is viewed as [outer, C, inner]. Channels-last formats (NHWC,
// NDHWC) have inner = 1 and outer = N·H·W (N·D·H·W); channels-first
// formats (NCHW, NCDHW) have outer = N and inner = H·W (D·H·W). Every
// per-channel statistic reduces over outer and inner. The 5-D formats are
// accepted by the V3 ops only, as in TensorFlow.
//
// Numerics: per-channel sums are accumulated in float64 for both dtypes
// (statistics of a float32 tensor do not drift with the batch size); only
// groups of four terms are added in the element type first. The training
// statistics take one pass with sums shifted by the channel's first
// element (Σ(x−k), Σ(x−k)²), which is as accurate as TensorFlow's two-pass
// float32 formula for any data whose mean is not many orders of magnitude
// away from its spread. Reductions are cut into chunks whose
// bounds depend only on the shape, and the chunks' partial sums are
// combined in chunk order, so results are bit-identical for any thread
// count. Per-channel coefficients are formed in float64 and rounded once;
// the elementwise passes run in the element type.
//
// Passes over the data: the training forward reads x twice (statistics,
// then normalisation); the inference forward once. The training gradient
// reads (dy, x) once for its two channel sums and once more to write dx;
// the inference gradient does everything in one pass. The loops are
// package bnkern's (AVX2 assembly for float32 channels-last data,
// bit-identical to its Go loops). Outputs of 16 MiB and more are written
// with non-temporal stores (bnkern.StreamBytes).

// Op names of the forward ops.
const (
	bnOpV1 = "FusedBatchNorm"
	bnOpV3 = "FusedBatchNormV3"
	bnOpEx = "_FusedBatchNormEx"
)

// Default attribute values, as TensorFlow's op definitions give them.
const (
	bnDefaultEpsilon   = float32(0.0001)
	bnDefaultAvgFactor = float32(1)
)

// FusedBatchNormAttrs are the attributes of FusedBatchNorm and
// FusedBatchNormV3. The pointer fields are nil for TensorFlow's default.
type FusedBatchNormAttrs struct {
	// Epsilon is added to the variance before the inverse square root
	// (default 0.0001). TensorFlow's attr is a 32-bit float; the raw op
	// uses it as given (the Python wrapper raises it to 1.001e-5).
	Epsilon *float32 `tf:"epsilon" default:"0.0001"`
	// ExponentialAvgFactor f (default 1) blends the batch statistics into
	// the running ones in training: batch_mean = (1−f)·mean + f·μ,
	// batch_variance = (1−f)·variance + f·unbiased variance. With f == 1
	// (exactly) the mean and variance inputs are not read.
	ExponentialAvgFactor *float32 `tf:"exponential_avg_factor" default:"1"`
	// DataFormat is "NHWC" (default) or "NCHW" for a 4-D x, "NDHWC" or
	// "NCDHW" for a 5-D x (FusedBatchNormV3 only).
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW,NDHWC,NCDHW"`
	// IsTraining (default true) normalises with the batch statistics;
	// false normalises with the given mean and variance (inference).
	IsTraining *bool `tf:"is_training" default:"true"`
}

// FusedBatchNormExAttrs are the attributes of _FusedBatchNormEx:
// FusedBatchNormV3's, and the activation applied to y. The pointer fields
// are nil for TensorFlow's default.
//
// TensorFlow creates _FusedBatchNormEx in its graph optimizer (grappler's
// remapper) from FusedBatchNormV3 followed by Relu; its kernels are
// oneDNN's on CPU and cuDNN's on GPU, whose training mode with an
// activation takes half-precision NHWC data only (a cuDNN restriction).
// tapegrad follows the op definition on every layout and dtype:
// y = activation(FusedBatchNormV3's y), with the same other outputs.
// Side inputs (added before the activation) are not supported:
// num_side_inputs must be 0, the value the CPU fusion always uses.
type FusedBatchNormExAttrs struct {
	// Epsilon is as FusedBatchNormAttrs.Epsilon (default 0.0001).
	Epsilon *float32 `tf:"epsilon" default:"0.0001"`
	// ExponentialAvgFactor is as FusedBatchNormAttrs' (default 1).
	ExponentialAvgFactor *float32 `tf:"exponential_avg_factor" default:"1"`
	// DataFormat is as FusedBatchNormAttrs.DataFormat (default "NHWC").
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW,NDHWC,NCDHW"`
	// NumSideInputs is the number of side inputs (default 0); it must be 0.
	NumSideInputs int `tf:"num_side_inputs"`
	// ActivationMode is "Identity" (default: y as FusedBatchNormV3's) or
	// "Relu" (y = max(y, 0), as Relu computes it: NaN and −0 stay).
	ActivationMode string `tf:"activation_mode" default:"Identity" allowed:"Identity,Relu"`
	// IsTraining is as FusedBatchNormAttrs.IsTraining (default true).
	IsTraining *bool `tf:"is_training" default:"true"`
}

// BatchNorm returns the attributes of the FusedBatchNormV3 that a
// computes before its activation.
func (a FusedBatchNormExAttrs) BatchNorm() FusedBatchNormAttrs {
	return FusedBatchNormAttrs{Epsilon: a.Epsilon, ExponentialAvgFactor: a.ExponentialAvgFactor, DataFormat: a.DataFormat, IsTraining: a.IsTraining}
}

// Relu reports whether the activation is Relu.
func (a FusedBatchNormExAttrs) Relu() bool { return a.ActivationMode == "Relu" }

// Format returns the data_format attribute, or its default ("NHWC") when
// unset.
func (a FusedBatchNormExAttrs) Format() string { return bnFormatOr(a.DataFormat) }

// Eps returns the epsilon attribute, or its default when unset.
func (a FusedBatchNormAttrs) Eps() float32 { return bnOr(a.Epsilon, bnDefaultEpsilon) }

// AvgFactor returns the exponential_avg_factor attribute, or its default
// when unset.
func (a FusedBatchNormAttrs) AvgFactor() float32 {
	return bnOr(a.ExponentialAvgFactor, bnDefaultAvgFactor)
}

// Training returns the is_training attribute, or its default (true) when
// unset.
func (a FusedBatchNormAttrs) Training() bool { return bnOr(a.IsTraining, true) }

// Format returns the data_format attribute, or its default ("NHWC") when
// unset.
func (a FusedBatchNormAttrs) Format() string { return bnFormatOr(a.DataFormat) }

// GradAttrs returns the attributes of the matching gradient op (same
// epsilon, data format and mode), as TensorFlow's gradient passes them.
func (a FusedBatchNormAttrs) GradAttrs() FusedBatchNormGradAttrs {
	eps, tr := a.Eps(), a.Training()
	return FusedBatchNormGradAttrs{Epsilon: &eps, DataFormat: a.Format(), IsTraining: &tr}
}

// FusedBatchNormGradAttrs are the attributes of FusedBatchNormGrad and
// FusedBatchNormGradV3. The pointer fields are nil for TensorFlow's
// default.
type FusedBatchNormGradAttrs struct {
	// Epsilon is the forward op's epsilon (default 0.0001).
	Epsilon *float32 `tf:"epsilon" default:"0.0001"`
	// DataFormat is "NHWC" (default) or "NCHW" for 4-D tensors, "NDHWC"
	// or "NCDHW" for 5-D ones (FusedBatchNormGradV3 only). Unlike
	// TensorFlow's kernels, the channels-first formats are accepted with
	// IsTraining false too (the maths is the same).
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW,NDHWC,NCDHW"`
	// IsTraining (default true) selects the gradient of the training-mode
	// forward (reserve_space_1/2 hold the batch mean and biased variance)
	// or of the inference-mode forward (they hold the population mean and
	// variance).
	IsTraining *bool `tf:"is_training" default:"true"`
}

// Eps returns the epsilon attribute, or its default when unset.
func (a FusedBatchNormGradAttrs) Eps() float32 { return bnOr(a.Epsilon, bnDefaultEpsilon) }

// Training returns the is_training attribute, or its default (true) when
// unset.
func (a FusedBatchNormGradAttrs) Training() bool { return bnOr(a.IsTraining, true) }

// Format returns the data_format attribute, or its default ("NHWC") when
// unset.
func (a FusedBatchNormGradAttrs) Format() string { return bnFormatOr(a.DataFormat) }

// bnOr returns *p, or def when p is nil (an unset pointer attr).
func bnOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// bnFormatOr returns the data format f, or the default "NHWC" when unset.
func bnFormatOr(f string) string {
	if f == "" {
		return "NHWC"
	}
	return f
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: bnOpV1,
		Doc: "batch normalisation of a 4-D x (NHWC/NCHW) per channel: training normalises with the batch " +
			"statistics and returns them (running averages with exponential_avg_factor), inference uses mean/variance",
		Inputs:  args("x", "scale", "offset", "mean", "variance"),
		Outputs: args("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
		Attrs:   FusedBatchNormAttrs{},
		Kernels: floatKernels(bnKernel[float32](bnOpV1), bnKernel[float64](bnOpV1)),
		Samples: bnSamples(bnOpV1),
	})
	registry.MustRegister(&registry.OpDef{
		Name: bnOpV3,
		Doc: "FusedBatchNorm for 4-D or 5-D x (NHWC, NCHW, NDHWC, NCDHW), with a sixth output reserve_space_3 " +
			"(a scalar 0 on CPU)",
		Inputs:  args("x", "scale", "offset", "mean", "variance"),
		Outputs: args("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"),
		Attrs:   FusedBatchNormAttrs{},
		Kernels: floatKernels(bnKernel[float32](bnOpV3), bnKernel[float64](bnOpV3)),
		Samples: bnSamples(bnOpV3),
	})
	registry.MustRegister(&registry.OpDef{
		Name: bnOpEx,
		Doc: "FusedBatchNormV3 followed by its activation_mode (Identity or Relu) in the same pass over y, " +
			"as TensorFlow's graph optimizer fuses them; num_side_inputs must be 0",
		Inputs:  args("x", "scale", "offset", "mean", "variance"),
		Outputs: args("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"),
		Attrs:   FusedBatchNormExAttrs{},
		Kernels: floatKernels(bnKernel[float32](bnOpEx), bnKernel[float64](bnOpEx)),
		Samples: bnExSamples,
	})
}

// bnKernelAttrs returns the FusedBatchNorm attrs of op's attrs, whether y gets
// a Relu (_FusedBatchNormEx), and the data format, after the checks of
// CheckFusedBatchNormOp.
func bnKernelAttrs(op string, attrs any, names []string, in []*tensor.Dense) (a FusedBatchNormAttrs, relu bool, format string, err error) {
	if op != bnOpEx {
		a, format, err = CheckFusedBatchNormOp[FusedBatchNormAttrs](op, attrs, 0, names, in)
		return a, false, format, err
	}
	ax, format, err := CheckFusedBatchNormOp[FusedBatchNormExAttrs](op, attrs, 0, names, in)
	if err != nil {
		return a, false, "", err
	}
	switch n := ax.NumSideInputs; {
	case n < 0 || n > 1:
		return a, false, "", registry.Errorf(registry.ErrInvalidArgument, "%s: FusedBatchNorm accepts at most one side input (num_side_inputs = %d)", op, n)
	case n == 1:
		return a, false, "", registry.Errorf(registry.ErrUnimplemented, "%s: num_side_inputs = 1: side inputs are not supported, only 0", op)
	}
	return ax.BatchNorm(), ax.Relu(), format, nil
}

// ---------------------------------------------------------------------------
// Forward.

// bnKernel is the kernel of FusedBatchNorm (op bnOpV1), FusedBatchNormV3
// or _FusedBatchNormEx (FusedBatchNormV3's, with the Relu applied to each
// piece of y as the normalisation writes it).
func bnKernel[T tensorx.Float](op string) registry.Kernel {
	v3 := op != bnOpV1 // six outputs, 5-D formats
	names := []string{"x", "scale", "offset", "mean", "variance"}
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, relu, format, err := bnKernelAttrs(op, attrs, names, in)
		if err != nil {
			return nil, err
		}
		x, scale, offset, mean, variance := in[0], in[1], in[2], in[3], in[4]
		if err := CheckFusedBatchNormRank(op, "x", x); err != nil {
			return nil, err
		}
		if err := CheckFusedBatchNormVectors(op, []string{"scale", "offset", "estimated_mean", "estimated_variance"}, in[1:5]...); err != nil {
			return nil, err
		}
		l, err := FusedBatchNormLayout(op, "x", x.Shape(), format)
		if err != nil {
			return nil, err
		}
		C := l.C
		if err := CheckFusedBatchNormChannels(op, "", C, []string{"scale", "offset"}, scale, offset); err != nil {
			return nil, err
		}
		training, factor := a.Training(), a.AvgFactor()
		if !training || factor != 1 {
			prefix := "When is_training=false, "
			if training {
				prefix = "When exponential_avg_factor != 1, "
			}
			if err := CheckFusedBatchNormChannels(op, prefix, C, []string{"mean", "variance"}, mean, variance); err != nil {
				return nil, err
			}
		}

		dt := x.Dtype()
		nout := 5
		if v3 {
			nout = 6
		}
		var outs [6]*tensor.Dense
		out := outs[:nout]
		if out[0], err = like(kc, x); err != nil {
			return nil, err
		}
		for i := 1; i < 5; i++ {
			if out[i], err = kc.Output(dt, C); err != nil {
				return nil, err
			}
		}
		if v3 {
			// TensorFlow's CPU kernel writes a scalar 0.
			if out[5], err = kc.Zeros(dt); err != nil {
				return nil, err
			}
		}
		bm, bv, rs1, rs2 := data[T](out[1]), data[T](out[2]), data[T](out[3]), data[T](out[4])
		if l.Size() == 0 {
			// TensorFlow fills the statistics with NaN; the reserve spaces
			// are unspecified there, NaN here.
			nan := T(math.NaN())
			for _, s := range [][]T{bm, bv, rs1, rs2} {
				for i := range s {
					s[i] = nan
				}
			}
			return kc.Results(out...), nil
		}
		eps := float64(a.Eps())
		xs, ys := data[T](x), data[T](out[0])
		gamma, beta := data[T](scale), data[T](offset)
		coef, err := registry.Scratch[T](kc, 3*C, false)
		if err != nil {
			return nil, err
		}
		mu, k, shift := coef[:C], coef[C:2*C], coef[2*C:]
		if !training {
			m, v := data[T](mean), data[T](variance)
			for c := 0; c < C; c++ {
				mu[c] = m[c]
				k[c] = T(float64(gamma[c]) / math.Sqrt(float64(v[c])+eps))
			}
			bnkern.Normalize(ys, xs, l, mu, k, beta, relu, kc.NumThreads())
			copy(bm, m)
			copy(bv, v)
			copy(rs1, m)
			copy(rs2, v)
			return kc.Results(out...), nil
		}
		st, err := registry.Scratch[float64](kc, 2*C, false)
		if err != nil {
			return nil, err
		}
		s1, s2 := st[:C], st[C:]
		part, err := registry.Scratch[float64](kc, bnkern.PartialsLen(l), false)
		if err != nil {
			return nil, err
		}
		bnkern.Stats(shift, s1, s2, xs, l, part, kc.NumThreads())
		n := float64(l.Count())
		bessel := n / max(n-1, 1)
		f := float64(factor)
		var m, v []T
		if factor != 1 {
			m, v = data[T](mean), data[T](variance)
		}
		for c := 0; c < C; c++ {
			d := s1[c] / n
			bmean := float64(shift[c]) + d
			bvar := max(s2[c]/n-d*d, 0)
			mu[c] = T(bmean)
			k[c] = T(float64(gamma[c]) / math.Sqrt(bvar+eps))
			rs1[c], rs2[c] = T(bmean), T(bvar)
			if factor == 1 {
				bm[c], bv[c] = T(bmean), T(bvar*bessel)
			} else {
				bm[c] = T((1-f)*float64(m[c]) + f*bmean)
				bv[c] = T((1-f)*float64(v[c]) + (f*bessel)*bvar)
			}
		}
		bnkern.Normalize(ys, xs, l, mu, k, beta, relu, kc.NumThreads())
		return kc.Results(out...), nil
	}
}
