package forward

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/bnkern"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// FusedBatchNorm family: FusedBatchNorm, FusedBatchNormV3 and their
// gradient ops FusedBatchNormGrad, FusedBatchNormGradV3, with TensorFlow's
// names, argument order, attributes, validation and CPU-kernel outputs
// (spec/fused_batch_norm.md).
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
// the inference gradient does everything in one pass. The channels-last
// row loops are package bnkern's (AVX2 assembly for float32, bit-identical
// to its Go loops). Outputs of 16 MiB and more are written with
// non-temporal stores (bnStreamBytes).

// Op names of the family.
const (
	bnOpV1     = "FusedBatchNorm"
	bnOpV3     = "FusedBatchNormV3"
	bnOpGradV1 = "FusedBatchNormGrad"
	bnOpGradV3 = "FusedBatchNormGradV3"
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

// GradAttrsValue returns GradAttrs boxed in an interface, as gradient
// functions pass attrs on: the same boxed value for every call with the
// same epsilon, data format and mode (the values are immutable), so
// that after the first call for each the backward pass allocates
// nothing for it.
func (a FusedBatchNormAttrs) GradAttrsValue() any {
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
		bnGradCache.m = map[bnGradKey]any{}
	}
	v = a.GradAttrs()
	bnGradCache.m[k] = v
	return v
}

// bnGradKey identifies the grad-op attrs of GradAttrsValue (epsilon by
// its bits, so that a NaN epsilon finds its entry).
type bnGradKey struct {
	eps      uint32
	format   string
	training bool
}

// bnGradCache holds GradAttrsValue's boxed values.
var bnGradCache struct {
	sync.RWMutex
	m map[bnGradKey]any
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
		Name: bnOpGradV1,
		Doc: "gradient of FusedBatchNorm: x_backprop, scale_backprop, offset_backprop from y_backprop, x, scale " +
			"and the forward's reserve spaces (training) or the population mean/variance (inference)",
		Inputs:  args("y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"),
		Outputs: args("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_3", "reserve_space_4"),
		Attrs:   FusedBatchNormGradAttrs{},
		Kernels: floatKernels(bnGradKernel[float32](bnOpGradV1), bnGradKernel[float64](bnOpGradV1)),
		Samples: bnGradSamples(bnOpGradV1),
	})
	registry.MustRegister(&registry.OpDef{
		Name: bnOpGradV3,
		Doc: "gradient of FusedBatchNormV3 (4-D or 5-D); reserve_space_3 is accepted and ignored, as by " +
			"TensorFlow's CPU kernel",
		Inputs:  args("y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2", "reserve_space_3"),
		Outputs: args("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_4", "reserve_space_5"),
		Attrs:   FusedBatchNormGradAttrs{},
		Kernels: floatKernels(bnGradKernel[float32](bnOpGradV3), bnGradKernel[float64](bnOpGradV3)),
		Samples: bnGradSamples(bnOpGradV3),
	})
}

// ---------------------------------------------------------------------------
// Layout and validation.

// bnLayout is x viewed as [outer, c, inner] (row-major).
type bnLayout struct {
	outer, c, inner int
}

// count returns the number of elements per channel.
func (l bnLayout) count() int { return l.outer * l.inner }

// size returns the number of elements of x.
func (l bnLayout) size() int { return l.outer * l.c * l.inner }

// bnShape formats a shape as TensorFlow's TensorShape::DebugString.
func bnShape(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// bnFormatRank returns the rank a data format needs, and whether the
// format is channels-first.
func bnFormatRank(format string) (rank int, channelsFirst bool) {
	switch format {
	case "NCHW":
		return 4, true
	case "NDHWC":
		return 5, false
	case "NCDHW":
		return 5, true
	}
	return 4, false
}

// bnCheckFormat rejects the 5-D formats for the V1 ops (their op
// definitions allow NHWC and NCHW only).
func bnCheckFormat(op, format string) error {
	if (op == bnOpV1 || op == bnOpGradV1) && (format == "NDHWC" || format == "NCDHW") {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: Invalid data format %q: %s supports NHWC and NCHW (use %sV3 for 5-D inputs)",
			op, format, op, op)
	}
	return nil
}

// bnLayoutOf checks that x's rank fits the data format and returns its
// layout. The rank itself (4 or 5) has been checked by the caller.
func bnLayoutOf(op, name string, shape []int, format string) (bnLayout, error) {
	rank, first := bnFormatRank(format)
	if len(shape) != rank {
		return bnLayout{}, registry.Errorf(registry.ErrShape, "%s: %s must be %d-dimensional for data_format %s, got shape %s",
			op, name, rank, format, bnShape(shape))
	}
	if first {
		inner := 1
		for _, d := range shape[2:] {
			inner *= d
		}
		return bnLayout{outer: shape[0], c: shape[1], inner: inner}, nil
	}
	outer := 1
	for _, d := range shape[:rank-1] {
		outer *= d
	}
	return bnLayout{outer: outer, c: shape[rank-1], inner: 1}, nil
}

// bnCheckOp returns op's attrs (of type A) and data format after checking
// the attrs' type, the format (bnCheckFormat) and the inputs' dtypes
// (bnCheckDtypes).
func bnCheckOp[A interface{ Format() string }](op string, attrs any, xi int, names []string, in []*tensor.Dense) (a A, format string, err error) {
	a, ok := attrs.(A)
	if !ok {
		return a, "", registry.Errorf(registry.ErrInvalidArgument, "%s: attrs must be %T, got %T", op, a, attrs)
	}
	format = a.Format()
	if err := bnCheckFormat(op, format); err != nil {
		return a, "", err
	}
	return a, format, bnCheckDtypes(op, xi, names, in)
}

// bnCheckDtypes checks that every input has x's dtype (input xi).
func bnCheckDtypes(op string, xi int, names []string, in []*tensor.Dense) error {
	dt := in[xi].Dtype()
	for i, t := range in {
		if t.Dtype() != dt {
			return registry.Errorf(registry.ErrDtype, "%s: input %d (%s) has dtype %v, expected %v like %s",
				op, i, names[i], t.Dtype(), dt, names[xi])
		}
	}
	return nil
}

// bnCheckAll1D returns TensorFlow's "<what> must be 1-dimensional" error
// for the first of ts (named by whats) that is not a vector.
func bnCheckAll1D(op string, whats []string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if len(t.Shape()) != 1 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: %s must be 1-dimensional, got shape %s", op, whats[i], bnShape(t.Shape()))
		}
	}
	return nil
}

// bnCheckRank45 returns TensorFlow's "input must be 4 or 5-dimensional"
// error.
func bnCheckRank45(op, name string, t *tensor.Dense) error {
	if r := len(t.Shape()); r != 4 && r != 5 {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: input must be 4 or 5-dimensional, got %s of shape %s",
			op, name, bnShape(t.Shape()))
	}
	return nil
}

// bnCheckAllChannels returns TensorFlow's "<what> must have the same
// number of elements as the channels of x" error for the first of ts
// (named by whats) that does not have c elements.
func bnCheckAllChannels(op, prefix string, c int, whats []string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if n := tensorx.Len(t); n != c {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: %s%s must have the same number of elements as the channels of x, got %d and %d",
				op, prefix, whats[i], n, c)
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Chunked, deterministic per-channel reductions.

const (
	// bnMaxChunks bounds the number of chunks a reduction is cut into
	// (and so the partial-sum scratch, bnMaxChunks·2·C float64).
	bnMaxChunks = 64
	// bnMinChunk is the smallest number of elements of a chunk worth a
	// task of its own.
	bnMinChunk = 1 << 14
)

// bnSplit cuts the outer dimension into chunks of per units (a unit holds
// unitElems elements) and returns per and the chunk count. It depends only
// on the shape.
func bnSplit(outer, unitElems int) (per, chunks int) {
	per = max(1, (outer+bnMaxChunks-1)/bnMaxChunks, (bnMinChunk+unitElems-1)/max(1, unitElems))
	per = min(per, max(1, outer))
	return per, (outer + per - 1) / per
}

// bnRed is the split of a per-channel reduction over a layout l: the
// outer dimension cut into chunks of per units, chunk k accumulating its
// two partial sums per channel in p1[k·C:(k+1)·C] and p2[k·C:(k+1)·C].
type bnRed struct {
	l           bnLayout
	per, chunks int
	p1, p2      []float64
}

// bnNewRed splits a reduction over l (bnSplit) and takes its partial sums
// from kc's scratch, zeroed.
func bnNewRed(kc *registry.KernelCtx, l bnLayout) (bnRed, error) {
	C := l.c
	per, chunks := bnSplit(l.outer, C*l.inner)
	part, err := registry.Scratch[float64](kc, 2*chunks*C, true)
	if err != nil {
		return bnRed{}, err
	}
	return bnRed{l: l, per: per, chunks: chunks, p1: part[:chunks*C], p2: part[chunks*C:]}, nil
}

// bounds returns the outer units [o0, o1) of chunk k.
func (r bnRed) bounds(k int) (o0, o1 int) {
	return k * r.per, min((k+1)*r.per, r.l.outer)
}

// segGrain is the number of (chunk, channel) items of a channels-first
// reduction per scheduling block.
func (r bnRed) segGrain() int { return max(1, bnMinChunk/max(1, r.per*r.l.inner)) }

// combine adds the chunks' partial sums in chunk order into s1, s2, so
// the sums do not depend on the thread count.
func (r bnRed) combine(s1, s2 []float64) {
	C := r.l.c
	for c := range s1[:C] {
		s1[c], s2[c] = 0, 0
	}
	for k := 0; k < r.chunks; k++ {
		a, b := r.p1[k*C:(k+1)*C], r.p2[k*C:(k+1)*C]
		for c := range a {
			s1[c] += a[c]
			s2[c] += b[c]
		}
	}
}

// bnUnitGrains returns the scheduling grains of an elementwise pass over
// l: rows of a channels-last layout, (outer, channel) segments of a
// channels-first one.
func bnUnitGrains(l bnLayout) (rows, segs int) {
	return max(1, bnMinChunk/max(1, l.c)), max(1, bnMinChunk/max(1, l.inner))
}

// The passes below run their loops through parallel.Blocks, which hands
// blocks out in ascending order from a shared counter: a worker that
// starts late (waking an idle CPU) or runs on a busy CPU takes fewer
// blocks. Blocks are independent (reductions write per-chunk partials),
// so results do not depend on the thread count. A pass that fits one
// block, or runs on one thread, calls its loop directly, so that no
// closure is built (a closure handed to parallel escapes to the heap).
//
// Blocks are handed out in ascending order on purpose: walking a tensor
// larger than the caches backwards by blocks (to start on the data the
// previous pass left in the L3 cache) defeated the hardware prefetchers
// and made W7 slower, without measurable L3 reuse.

// bnStreamBytes is the output size from which the elementwise passes of
// float32 channels-last tensors write with non-temporal stores: half the
// 32 MiB L3 cache of the project's machine, so that the output and its
// input do not fit it together. Streaming such an output saves reading
// every line of it before writing it (1.3–1.5× faster on W7's forward)
// and keeps the inputs cached for the next pass; a smaller output is
// better left in the cache for the op that reads it next. A variable so
// that tests can lower it.
var bnStreamBytes = 16 << 20

// ---------------------------------------------------------------------------
// Forward.

// bnKernel is the kernel of FusedBatchNorm (op bnOpV1) or FusedBatchNormV3.
func bnKernel[T tensorx.Float](op string) registry.Kernel {
	v3 := op == bnOpV3
	names := []string{"x", "scale", "offset", "mean", "variance"}
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, format, err := bnCheckOp[FusedBatchNormAttrs](op, attrs, 0, names, in)
		if err != nil {
			return nil, err
		}
		x, scale, offset, mean, variance := in[0], in[1], in[2], in[3], in[4]
		if err := bnCheckRank45(op, "x", x); err != nil {
			return nil, err
		}
		if err := bnCheckAll1D(op, []string{"scale", "offset", "estimated_mean", "estimated_variance"}, in[1:5]...); err != nil {
			return nil, err
		}
		l, err := bnLayoutOf(op, "x", x.Shape(), format)
		if err != nil {
			return nil, err
		}
		C := l.c
		if err := bnCheckAllChannels(op, "", C, []string{"scale", "offset"}, scale, offset); err != nil {
			return nil, err
		}
		training, factor := a.Training(), a.AvgFactor()
		if !training || factor != 1 {
			prefix := "When is_training=false, "
			if training {
				prefix = "When exponential_avg_factor != 1, "
			}
			if err := bnCheckAllChannels(op, prefix, C, []string{"mean", "variance"}, mean, variance); err != nil {
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
		if l.size() == 0 {
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
			bnNormalize(kc, l, xs, ys, mu, k, beta)
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
		if err := bnStats(kc, l, xs, shift, s1, s2); err != nil {
			return nil, err
		}
		n := float64(l.count())
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
		bnNormalize(kc, l, xs, ys, mu, k, beta)
		return kc.Results(out...), nil
	}
}

// bnStats computes, per channel, shift = the channel's first element (0
// if it is not finite, so that an infinite element gives an infinite mean
// as in TensorFlow) and the sums s1 = Σ(x − shift), s2 = Σ(x − shift)².
// Groups of four terms are added in the element type (where x − shift is
// exact or nearly so) and the group sums accumulated in float64.
func bnStats[T tensorx.Float](kc *registry.KernelCtx, l bnLayout, x, shift []T, s1, s2 []float64) error {
	C, S := l.c, l.inner
	for c := 0; c < C; c++ {
		shift[c] = x[c*S]
		if v := float64(shift[c]); math.IsInf(v, 0) || math.IsNaN(v) {
			shift[c] = 0
		}
	}
	r, err := bnNewRed(kc, l)
	if err != nil {
		return err
	}
	threads := kc.NumThreads()
	if S == 1 {
		if serial(threads, r.chunks, 1) {
			bnStatsRows(r, x, shift, 0, r.chunks)
		} else {
			parallel.Blocks(threads, r.chunks, 1, func(k0, k1 int) { bnStatsRows(r, x, shift, k0, k1) })
		}
	} else {
		if items, grain := r.chunks*C, r.segGrain(); serial(threads, items, grain) {
			bnStatsSegs(r, x, shift, 0, items)
		} else {
			parallel.Blocks(threads, items, grain, func(i0, i1 int) { bnStatsSegs(r, x, shift, i0, i1) })
		}
	}
	r.combine(s1, s2)
	return nil
}

// bnStatsRows accumulates bnStats' partial sums of the chunks [k0, k1) of
// a channels-last layout.
func bnStatsRows[T tensorx.Float](r bnRed, x, shift []T, k0, k1 int) {
	C := r.l.c
	for k := k0; k < k1; k++ {
		o0, o1 := r.bounds(k)
		bnkern.Stats(x[o0*C:o1*C], C, shift, r.p1[k*C:(k+1)*C], r.p2[k*C:(k+1)*C])
	}
}

// bnStatsSegs computes bnStats' partial sums of the (chunk, channel) items
// [i0, i1) of a channels-first layout.
func bnStatsSegs[T tensorx.Float](r bnRed, x, shift []T, i0, i1 int) {
	C, S := r.l.c, r.l.inner
	for i := i0; i < i1; i++ {
		k, c := i/C, i%C
		o0, o1 := r.bounds(k)
		sh := shift[c]
		var a, b float64
		for o := o0; o < o1; o++ {
			s := x[(o*C+c)*S : (o*C+c+1)*S]
			j := 0
			for ; j+4 <= len(s); j += 4 {
				q := s[j : j+4 : j+4]
				d0, d1, d2, d3 := q[0]-sh, q[1]-sh, q[2]-sh, q[3]-sh
				a += float64((d0 + d1) + (d2 + d3))
				b += float64((d0*d0 + d1*d1) + (d2*d2 + d3*d3))
			}
			for ; j < len(s); j++ {
				d := s[j] - sh
				a += float64(d)
				b += float64(d * d)
			}
		}
		r.p1[i], r.p2[i] = a, b
	}
}

// bnStream reports whether an elementwise pass should write out with
// non-temporal stores (bnStreamBytes).
func bnStream[T tensorx.Float](out []T) bool {
	var z T
	return len(out)*int(unsafe.Sizeof(z)) >= bnStreamBytes
}

// bnNormalize writes y = (x − mu)·k + beta per channel, in the element
// type (TensorFlow's order: the factor k = γ·rsqrt(var+ε) is formed
// first).
func bnNormalize[T tensorx.Float](kc *registry.KernelCtx, l bnLayout, x, y, mu, k, beta []T) {
	stream := bnStream(y)
	threads := kc.NumThreads()
	rg, sg := bnUnitGrains(l)
	if l.inner == 1 {
		if serial(threads, l.outer, rg) {
			bnNormRows(l, x, y, mu, k, beta, stream, 0, l.outer)
		} else {
			parallel.Blocks(threads, l.outer, rg, func(o0, o1 int) { bnNormRows(l, x, y, mu, k, beta, stream, o0, o1) })
		}
		return
	}
	if n := l.outer * l.c; serial(threads, n, sg) {
		bnNormSegs(l, x, y, mu, k, beta, 0, n)
	} else {
		parallel.Blocks(threads, n, sg, func(s0, s1 int) { bnNormSegs(l, x, y, mu, k, beta, s0, s1) })
	}
}

// bnNormRows is bnNormalize on the rows [o0, o1) of a channels-last
// layout.
func bnNormRows[T tensorx.Float](l bnLayout, x, y, mu, k, beta []T, stream bool, o0, o1 int) {
	C := l.c
	bnkern.Norm(x[o0*C:o1*C], y[o0*C:o1*C], C, mu, k, beta, stream)
}

// bnNormSegs is bnNormalize on the (outer, channel) segments [s0, s1) of
// a channels-first layout.
func bnNormSegs[T tensorx.Float](l bnLayout, x, y, mu, k, beta []T, s0, s1 int) {
	C, S := l.c, l.inner
	for s := s0; s < s1; s++ {
		c := s % C
		m, kk, b := mu[c], k[c], beta[c]
		xr, yr := x[s*S:(s+1)*S], y[s*S:(s+1)*S]
		for i, v := range xr {
			yr[i] = (v-m)*kk + b
		}
	}
}

// ---------------------------------------------------------------------------
// Gradient ops.

// bnGradKernel is the kernel of FusedBatchNormGrad (op bnOpGradV1) or
// FusedBatchNormGradV3.
func bnGradKernel[T tensorx.Float](op string) registry.Kernel {
	names := []string{"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2", "reserve_space_3"}
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, format, err := bnCheckOp[FusedBatchNormGradAttrs](op, attrs, 1, names, in)
		if err != nil {
			return nil, err
		}
		dy, x, scale, m, v := in[0], in[1], in[2], in[3], in[4]
		if err := bnCheckRank45(op, "y_backprop", dy); err != nil {
			return nil, err
		}
		if err := bnCheckRank45(op, "x", x); err != nil {
			return nil, err
		}
		if err := bnCheckAll1D(op, []string{"scale", "saved mean", "saved variance"}, scale, m, v); err != nil {
			return nil, err
		}
		if !tensorx.SameShape(x.Shape(), dy.Shape()) {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: x and y_backprop must have same shape, but x has shape %s and y_backprop has shape %s",
				op, bnShape(x.Shape()), bnShape(dy.Shape()))
		}
		l, err := bnLayoutOf(op, "x", x.Shape(), format)
		if err != nil {
			return nil, err
		}
		C := l.c
		if err := bnCheckAllChannels(op, "", C, []string{"scale", "reserve_space_1", "reserve_space_2"}, scale, m, v); err != nil {
			return nil, err
		}

		dt := x.Dtype()
		var outs [5]*tensor.Dense
		out := outs[:]
		if out[0], err = like(kc, x); err != nil {
			return nil, err
		}
		for i, n := range []int{C, C, 0, 0} { // scale, offset backprops; empty reserve spaces
			if out[i+1], err = kc.Output(dt, n); err != nil {
				return nil, err
			}
		}
		dscale, doffset := data[T](out[1]), data[T](out[2])
		if l.size() == 0 {
			clear(dscale)
			clear(doffset)
			return kc.Results(out...), nil
		}
		st, err := registry.Scratch[float64](kc, 2*C, false)
		if err != nil {
			return nil, err
		}
		s1, s2 := st[:C], st[C:]
		ms, vs, gamma := data[T](m), data[T](v), data[T](scale)
		coef, err := registry.Scratch[T](kc, 3*C, false)
		if err != nil {
			return nil, err
		}
		eps := float64(a.Eps())
		dys, xs, dxs := data[T](dy), data[T](x), data[T](out[0])
		if !a.Training() {
			// dx = dy·(γ·r) needs no statistics: one pass writes it and
			// sums Σdy, Σdy·(x − m).
			k := coef[:C]
			for c := range k {
				k[c] = T(float64(gamma[c]) / math.Sqrt(float64(vs[c])+eps))
			}
			if err := bnGradSums(kc, l, dys, xs, ms, s1, s2, dxs, k); err != nil {
				return nil, err
			}
			for c := 0; c < C; c++ {
				r := 1 / math.Sqrt(float64(vs[c])+eps)
				dscale[c] = T(s2[c] * r)
				doffset[c] = T(s1[c])
			}
			return kc.Results(out...), nil
		}
		if err := bnGradSums(kc, l, dys, xs, ms, s1, s2, nil, nil); err != nil {
			return nil, err
		}
		// dx = γr·(dy − M[dy] − (x − m)·r²·M[dy·(x − m)])
		//    = A·(dy − M[dy]) − B·(x − m).
		n := float64(l.count())
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
		bnGradDx(kc, l, dys, xs, dxs, A, mdy, B, ms)
		return kc.Results(out...), nil
	}
}

// bnGradSums computes s1 = Σdy and s2 = Σdy·(x − mean) per channel, with
// groups of four terms added in the element type and the group sums
// accumulated in float64. If dx is not nil it also writes dx = dy·k (the
// inference gradient) in the same pass.
func bnGradSums[T tensorx.Float](kc *registry.KernelCtx, l bnLayout, dy, x, mean []T, s1, s2 []float64, dx, k []T) error {
	r, err := bnNewRed(kc, l)
	if err != nil {
		return err
	}
	threads := kc.NumThreads()
	if l.inner == 1 {
		if serial(threads, r.chunks, 1) {
			bnGradSumsRows(r, dy, x, mean, dx, k, 0, r.chunks)
		} else {
			parallel.Blocks(threads, r.chunks, 1, func(k0, k1 int) { bnGradSumsRows(r, dy, x, mean, dx, k, k0, k1) })
		}
	} else {
		if items, grain := r.chunks*l.c, r.segGrain(); serial(threads, items, grain) {
			bnGradSumsSegs(r, dy, x, mean, dx, k, 0, items)
		} else {
			parallel.Blocks(threads, items, grain, func(i0, i1 int) { bnGradSumsSegs(r, dy, x, mean, dx, k, i0, i1) })
		}
	}
	r.combine(s1, s2)
	return nil
}

// bnGradSumsRows accumulates bnGradSums' partial sums of the chunks
// [k0, k1) of a channels-last layout (and writes their dx).
func bnGradSumsRows[T tensorx.Float](r bnRed, dy, x, mean, dx, k []T, k0, k1 int) {
	C := r.l.c
	for q := k0; q < k1; q++ {
		o0, o1 := r.bounds(q)
		bnkern.GradSums(dy[o0*C:o1*C], x[o0*C:o1*C], C, mean, r.p1[q*C:(q+1)*C], r.p2[q*C:(q+1)*C])
		if dx != nil {
			bnkern.Scale(dy[o0*C:o1*C], dx[o0*C:o1*C], C, k)
		}
	}
}

// bnGradSumsSegs computes bnGradSums' partial sums of the (chunk,
// channel) items [i0, i1) of a channels-first layout (and writes their
// dx).
func bnGradSumsSegs[T tensorx.Float](r bnRed, dy, x, mean, dx, k []T, i0, i1 int) {
	C, S := r.l.c, r.l.inner
	for it := i0; it < i1; it++ {
		q, c := it/C, it%C
		o0, o1 := r.bounds(q)
		mc := mean[c]
		var a, b float64
		for o := o0; o < o1; o++ {
			lo, hi := (o*C+c)*S, (o*C+c+1)*S
			gs, xr := dy[lo:hi], x[lo:hi]
			xr = xr[:len(gs)]
			i := 0
			for ; i+4 <= len(gs); i += 4 {
				g := gs[i : i+4 : i+4]
				xq := xr[i : i+4 : i+4]
				a += float64((g[0] + g[1]) + (g[2] + g[3]))
				b += float64((g[0]*(xq[0]-mc) + g[1]*(xq[1]-mc)) + (g[2]*(xq[2]-mc) + g[3]*(xq[3]-mc)))
			}
			for ; i < len(gs); i++ {
				a += float64(gs[i])
				b += float64(gs[i] * (xr[i] - mc))
			}
			if dx != nil {
				kv, dr := k[c], dx[lo:hi]
				dr = dr[:len(gs)]
				for i, g := range gs {
					dr[i] = g * kv
				}
			}
		}
		r.p1[it], r.p2[it] = a, b
	}
}

// bnGradDx writes the training gradient dx = A·(dy − mdy) − B·(x − m) per
// channel, in the element type.
func bnGradDx[T tensorx.Float](kc *registry.KernelCtx, l bnLayout, dy, x, dx, A, mdy, B, m []T) {
	stream := bnStream(dx)
	threads := kc.NumThreads()
	rg, sg := bnUnitGrains(l)
	if l.inner == 1 {
		if serial(threads, l.outer, rg) {
			bnGradDxRows(l, dy, x, dx, A, mdy, B, m, stream, 0, l.outer)
		} else {
			parallel.Blocks(threads, l.outer, rg, func(o0, o1 int) { bnGradDxRows(l, dy, x, dx, A, mdy, B, m, stream, o0, o1) })
		}
		return
	}
	if n := l.outer * l.c; serial(threads, n, sg) {
		bnGradDxSegs(l, dy, x, dx, A, mdy, B, m, 0, n)
	} else {
		parallel.Blocks(threads, n, sg, func(s0, s1 int) { bnGradDxSegs(l, dy, x, dx, A, mdy, B, m, s0, s1) })
	}
}

// bnGradDxRows is bnGradDx on the rows [o0, o1) of a channels-last
// layout.
func bnGradDxRows[T tensorx.Float](l bnLayout, dy, x, dx, A, mdy, B, m []T, stream bool, o0, o1 int) {
	C := l.c
	bnkern.GradDx(dy[o0*C:o1*C], x[o0*C:o1*C], dx[o0*C:o1*C], C, A, mdy, B, m, stream)
}

// bnGradDxSegs is bnGradDx on the (outer, channel) segments [s0, s1) of a
// channels-first layout.
func bnGradDxSegs[T tensorx.Float](l bnLayout, dy, x, dx, A, mdy, B, m []T, s0, s1 int) {
	C, S := l.c, l.inner
	for s := s0; s < s1; s++ {
		c := s % C
		a, md, b, mm := A[c], mdy[c], B[c], m[c]
		gr, xr, dr := dy[s*S:(s+1)*S], x[s*S:(s+1)*S], dx[s*S:(s+1)*S]
		for i, g := range gr {
			dr[i] = a*(g-md) - b*(xr[i]-mm)
		}
	}
}
