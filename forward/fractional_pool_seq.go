package forward

import (
	randv2 "math/rand/v2"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/registry"
)

// Fractional pooling family (docs/spec/fractional_avg_pool.md; Graham,
// "Fractional Max-Pooling", arXiv:1412.6071), NHWC only:
//
//   - FractionalAvgPool(value) -> (output, row_pooling_sequence,
//     col_pooling_sequence): averages over a random grid of cells whose
//     boundaries are the two int64 pooling sequences;
//   - FractionalAvgPoolGrad(orig_input_tensor_shape, out_backprop,
//     row_pooling_sequence, col_pooling_sequence): spreads each
//     out_backprop value uniformly over its cell;
//   - FractionalMaxPool(value) -> (output, row_pooling_sequence,
//     col_pooling_sequence) and FractionalMaxPoolGrad(orig_input,
//     orig_output, out_backprop, row_pooling_sequence,
//     col_pooling_sequence): the same grid with the maximum, the gradient
//     going to the first maximum of each cell in row-major order;
//   - two ops TensorFlow lacks, so that the gradient ops have gradients of
//     their own and every order of differentiation works:
//     tapegrad.FractionalAvgPoolWithSequences(value, row_pooling_sequence,
//     col_pooling_sequence), average pooling with given sequences (the
//     adjoint of FractionalAvgPoolGrad), and
//     tapegrad.FractionalMaxPoolGradGrad(orig_input, orig_output, grad,
//     row_pooling_sequence, col_pooling_sequence), which gathers grad at
//     each cell's maximum (the adjoint of FractionalMaxPoolGrad in its
//     out_backprop argument, as TensorFlow's MaxPoolGradGrad is for
//     MaxPoolGrad).
//
// Layout. FractionalAvgPool and FractionalMaxPool are registered in
// fractional_avg_pool.go and fractional_max_pool.go, over the sequence
// drawing, attrs and checks of this file; the four other ops are gradient
// ops, registered with the gradient functions in package backward
// (backward/fractional_avg_pool.go, backward/fractional_max_pool.go). The
// attrs of every op of the family are declared here. The loops of all six
// live in internal/fracpool.
//
// Cells. Output cell (a, b) covers input rows rseq[a]..r1 and columns
// cseq[b]..c1 (inclusive), where r1 = rseq[a+1] if overlapping and
// rseq[a+1]−1 otherwise, clamped to H−1 (likewise c1).
//
// Sequences. The forward ops draw them with Philox4x32-10 structured as
// TensorFlow's kernels (internal/philox, spec §3 and §6): rows first, then
// columns, from one generator seeded with (seed, seed2), so the same seeds
// give TensorFlow's sequences, on every call and for any thread count. With
// seed = seed2 = 0 the seeds are drawn afresh on every call from the
// kernel context's random source (the tape's, so a tape created with
// autodiff.Seed is reproducible) — also when deterministic is true, where
// TensorFlow draws them once per kernel instance: tapegrad has no kernel
// instances, so pass non-zero seeds for sequences that never change.
//
// Numerics. FractionalAvgPool sums each cell in row-major order in T and
// divides by the cell's element count in T (integer types truncate toward
// zero), exactly as TensorFlow's CPU kernel, so results are bit-identical
// to TensorFlow's. FractionalAvgPoolGrad accumulates in float64 in
// TensorFlow's order and converts to T once. FractionalMaxPool keeps the
// first element of a cell and replaces it by every later element that is
// greater (the scan TensorFlow's gradient kernel uses): NaNs after the
// first element are skipped, a NaN first element is the result.
// TensorFlow's forward kernel instead starts from the lowest finite value,
// so it differs for cells of NaNs or −Inf only.
//
// Validation beyond TensorFlow (which has undefined behaviour there): the
// gradient ops check their inputs further (see package backward).
// FractionalMaxPool, like FractionalAvgPool, refuses pooling on the batch or channel axis when
// either ratio differs from 1 (TensorFlow's max-pool kernel only refuses
// when both do, and then writes out of bounds).

// FractionalMaxPool.
type FractionalPoolAttrs struct {
	// PoolingRatio gives the ratio per axis of the NHWC input, e.g.
	// [1, 1.44, 1.73, 1]; the batch and channel entries must be 1 and the
	// others >= 1. The output size of an axis of size n is
	// floor(float32(n)/ratio), computed in float32 as TensorFlow does.
	PoolingRatio []float32 `tf:"pooling_ratio"`
	// PseudoRandom selects the pseudo-random sequence generator
	// (a_i = ceil(alpha·(i+u))) instead of a random shuffle of the steps.
	PseudoRandom bool `tf:"pseudo_random"`
	// Overlapping makes each cell include the next cell's first row and
	// column.
	Overlapping bool `tf:"overlapping"`
	// Deterministic allows non-zero seeds. With deterministic false, Seed
	// and Seed2 must both be 0 and every call draws fresh sequences.
	Deterministic bool `tf:"deterministic"`
	// Seed and Seed2 seed the Philox generator (both 0: fresh seeds from
	// the kernel context's random source on every call).
	Seed  int64 `tf:"seed"`
	Seed2 int64 `tf:"seed2"`
}

// FractionalPoolGradAttrs are the attrs of FractionalAvgPoolGrad,
// FractionalMaxPoolGrad and tapegrad.FractionalMaxPoolGradGrad.
type FractionalPoolGradAttrs struct {
	// Overlapping must be the forward op's value.
	Overlapping bool `tf:"overlapping"`
}

// FractionalPoolSeqAttrs are the attrs of
// tapegrad.FractionalAvgPoolWithSequences.
type FractionalPoolSeqAttrs struct {
	// Overlapping makes each cell include the next cell's first row and
	// column.
	Overlapping bool `tf:"overlapping"`
	// OutputRows and OutputCols are the output's height and width; 0 means
	// one less than the length of the row (column) sequence. Only the first
	// OutputRows+1 (OutputCols+1) sequence entries are read, as
	// FractionalAvgPoolGrad reads only as many as its out_backprop needs.
	OutputRows int `tf:"output_rows"`
	OutputCols int `tf:"output_cols"`
	// OutputBatch is the number of leading images of value that are pooled
	// (0: all), matching a FractionalAvgPoolGrad whose out_backprop has a
	// smaller batch than its original input.
	OutputBatch int `tf:"output_batch"`
}

// fpKernels returns the kernel map of a fractional pooling op, one kernel
// per element type.
func fpKernels(k32, k64, ki32, ki64 registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64, tensor.Int32: ki32, tensor.Int64: ki64}
}

// fpGenerator returns the Philox generator of one call: seeded with the
// attrs' seeds, or with two fresh 64-bit seeds from the kernel context's
// random source when both are 0.
func fpGenerator(kc *registry.KernelCtx, a FractionalPoolAttrs) philox.Generator {
	seed, seed2 := uint64(a.Seed), uint64(a.Seed2)
	if seed == 0 && seed2 == 0 {
		if kc != nil && kc.Rand != nil {
			seed, seed2 = kc.Rand.Uint64(), kc.Rand.Uint64()
		} else {
			seed, seed2 = randv2.Uint64(), randv2.Uint64()
		}
	}
	return philox.New(seed, seed2)
}

// ---------------------------------------------------------------------

// fpDims4 returns the 4 dims of a rank-4 tensor.
func fpDims4(d *tensor.Dense) (n, h, w, c int) {
	s := d.Shape()
	return s[0], s[1], s[2], s[3]
}

// fpCheckForward validates FractionalAvgPool/FractionalMaxPool attrs and
// input in TensorFlow's order and returns the output height and width.
func fpCheckForward(op, kind string, a FractionalPoolAttrs, x *tensor.Dense) (oh, ow int, err error) {
	r := a.PoolingRatio
	if len(r) != 4 {
		return 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: pooling_ratio field must specify 4 dimensions, got %d", op, len(r))
	}
	for _, v := range r {
		if !(v >= 1) {
			return 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: pooling_ratio cannot be smaller than 1, got: %v", op, v)
		}
	}
	if r[0] != 1 || r[3] != 1 {
		return 0, 0, registry.Errorf(registry.ErrUnimplemented, "%s: Fractional %s pooling is not yet supported on the batch nor channel dimension.", op, kind)
	}
	if !a.Deterministic && (a.Seed != 0 || a.Seed2 != 0) {
		return 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: Both seed and seed2 should be 0 if deterministic is false.", op)
	}
	if x.Dims() != 4 {
		return 0, 0, registry.NamedInputErrorf(registry.ErrShape, op, "value", "%s: tensor_in must be 4-dimensional, got shape %v", op, x.Shape())
	}
	for i, n := range x.Shape() {
		if !(float32(n) >= r[i]) {
			return 0, 0, registry.Errorf(registry.ErrInvalidArgument,
				"%s: Pooling ratio is higher than input dimension size for dimension %d. Input dim size: %d pooling ratio: %v", op, i, n, r[i])
		}
	}
	_, h, w, _ := fpDims4(x)
	return fracpool.OutputSize(h, r[1]), fracpool.OutputSize(w, r[2]), nil
}

// fpForwardKernel is the kernel of FractionalAvgPool (isMax false) and
// FractionalMaxPool (kind names the pooling in errors): it draws the
// sequences and pools.
func fpForwardKernel[T fracpool.Num](kc *registry.KernelCtx, op, kind string, isMax bool, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(FractionalPoolAttrs)
	x := in[0]
	oh, ow, err := fpCheckForward(op, kind, a, x)
	if err != nil {
		return nil, err
	}
	n, h, w, c := fpDims4(x)
	out, rows, cols, err := fpForwardOutputs(kc, a, x.Dtype(), n, h, w, c, oh, ow)
	if err != nil {
		return nil, err
	}
	dst, src, rs, cs := data[T](out), data[T](x), data[int64](rows), data[int64](cols)
	if isMax {
		fracpool.MaxPool(dst, src, n, h, w, c, rs, cs, a.Overlapping, kc.NumThreads())
	} else {
		fracpool.AvgPool(dst, src, n, h, w, c, rs, cs, a.Overlapping, kc.NumThreads())
	}
	return kc.Results(out, rows, cols), nil
}

// fpForwardOutputs allocates the outputs of FractionalAvgPool or
// FractionalMaxPool and draws the pooling sequences (rows, then columns).
func fpForwardOutputs(kc *registry.KernelCtx, a FractionalPoolAttrs, dt tensor.Dtype, n, h, w, c, oh, ow int) (out, rows, cols *tensor.Dense, err error) {
	if out, err = kc.Output(dt, n, oh, ow, c); err != nil {
		return nil, nil, nil, err
	}
	if rows, err = kc.Output(tensor.Int64, oh+1); err != nil {
		return nil, nil, nil, err
	}
	if cols, err = kc.Output(tensor.Int64, ow+1); err != nil {
		return nil, nil, nil, err
	}
	gen := fpGenerator(kc, a)
	fracpool.Sequence(data[int64](rows), h, oh, &gen, a.PseudoRandom)
	fracpool.Sequence(data[int64](cols), w, ow, &gen, a.PseudoRandom)
	return out, rows, cols, nil
}
