package forward

import (
	"fmt"
	"math"
	randv2 "math/rand/v2"
	"strings"
	"unsafe"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Fractional pooling family (spec/fractional_avg_pool.md; Graham,
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
// gradient ops require the out_backprop (and orig_output) batch and depth
// to match the original input, FractionalMaxPoolGrad's out_backprop to
// have orig_output's shape, sequences to be int64 vectors, and the read
// entries of every sequence to satisfy 0 <= seq[0] < seq[1] < ... <=
// input size (TensorFlow skips empty cells silently). TensorFlow's own
// checks come first, with its messages. FractionalMaxPool, like
// FractionalAvgPool, refuses pooling on the batch or channel axis when
// either ratio differs from 1 (TensorFlow's max-pool kernel only refuses
// when both do, and then writes out of bounds), and FractionalMaxPoolGrad
// omits TensorFlow's heuristic "Pooling region has more elements than the
// input tensor" check, which refuses valid sequences of ratio-1 pooling.

// FractionalPoolAttrs are the attrs of FractionalAvgPool and
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

// Op names of the family.
const (
	fpAvgName         = "FractionalAvgPool"
	fpAvgGradName     = "FractionalAvgPoolGrad"
	fpAvgSeqName      = "tapegrad.FractionalAvgPoolWithSequences"
	fpMaxName         = "FractionalMaxPool"
	fpMaxGradName     = "FractionalMaxPoolGrad"
	fpMaxGradGradName = "tapegrad.FractionalMaxPoolGradGrad"
)

// fpNum is the set of element types the family supports (TensorFlow's:
// float, double, int32, int64).
type fpNum interface {
	float32 | float64 | int32 | int64
}

func fpKernels(k32, k64, ki32, ki64 registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64, tensor.Int32: ki32, tensor.Int64: ki64}
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: fpAvgName,
		Doc: "average pooling over a random grid of cells (NHWC); also returns the int64 row and column pooling sequences " +
			"(cell boundaries), drawn with TensorFlow's Philox sequence for the same seeds",
		Inputs: args("value"), Outputs: args("output", "row_pooling_sequence", "col_pooling_sequence"),
		Attrs:   FractionalPoolAttrs{},
		Kernels: fpKernels(fpAvgKernel[float32], fpAvgKernel[float64], fpAvgKernel[int32], fpAvgKernel[int64]),
		Samples: fpAvgSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpAvgGradName,
		Doc: "gradient of FractionalAvgPool: each out_backprop value spread uniformly over its cell of an input of shape " +
			"orig_input_tensor_shape (int64 [4]); accumulated in float64",
		Inputs:    args("orig_input_tensor_shape", "out_backprop", "row_pooling_sequence", "col_pooling_sequence"),
		Outputs:   args("output"),
		Attrs:     FractionalPoolGradAttrs{},
		TypeInput: 1,
		Kernels:   fpKernels(fpAvgGradKernel[float32], fpAvgGradKernel[float64], fpAvgGradKernel[int32], fpAvgGradKernel[int64]),
		Samples:   fpAvgGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpAvgSeqName,
		Doc: "average pooling (NHWC) over the cells of given int64 row and column pooling sequences; the adjoint of " +
			"FractionalAvgPoolGrad (tapegrad op, beyond TensorFlow)",
		Inputs: args("value", "row_pooling_sequence", "col_pooling_sequence"), Outputs: args("output"),
		Attrs:   FractionalPoolSeqAttrs{},
		Kernels: fpKernels(fpAvgSeqKernel[float32], fpAvgSeqKernel[float64], fpAvgSeqKernel[int32], fpAvgSeqKernel[int64]),
		Samples: fpAvgSeqSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpMaxName,
		Doc: "max pooling over a random grid of cells (NHWC); also returns the int64 row and column pooling sequences, " +
			"drawn with TensorFlow's Philox sequence for the same seeds",
		Inputs: args("value"), Outputs: args("output", "row_pooling_sequence", "col_pooling_sequence"),
		Attrs:   FractionalPoolAttrs{},
		Kernels: fpKernels(fpMaxKernel[float32], fpMaxKernel[float64], fpMaxKernel[int32], fpMaxKernel[int64]),
		Samples: fpMaxSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpMaxGradName,
		Doc: "gradient of FractionalMaxPool: each out_backprop value added to the input position of its cell's first maximum " +
			"(row-major scan); orig_output must be the max pooling of orig_input",
		Inputs:  args("orig_input", "orig_output", "out_backprop", "row_pooling_sequence", "col_pooling_sequence"),
		Outputs: args("output"),
		Attrs:   FractionalPoolGradAttrs{},
		Kernels: fpKernels(fpMaxGradKernel[float32], fpMaxGradKernel[float64], fpMaxGradKernel[int32], fpMaxGradKernel[int64]),
		Samples: fpMaxGradSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: fpMaxGradGradName,
		Doc: "grad (shaped like orig_input) gathered at each cell's first maximum, shaped like orig_output: the gradient of " +
			"FractionalMaxPoolGrad with respect to out_backprop (tapegrad op, beyond TensorFlow)",
		Inputs:  args("orig_input", "orig_output", "grad", "row_pooling_sequence", "col_pooling_sequence"),
		Outputs: args("output"),
		Attrs:   FractionalPoolGradAttrs{},
		Kernels: fpKernels(fpMaxGradGradKernel[float32], fpMaxGradGradKernel[float64], fpMaxGradGradKernel[int32], fpMaxGradGradKernel[int64]),
		Samples: fpMaxGradGradSamples,
	})
}

// ---------------------------------------------------------------------
// Pooling sequences.

// fpOutputSize is TensorFlow's output size of an axis: floor(n / ratio)
// with n converted to float32 and the division in float32.
func fpOutputSize(n int, ratio float32) int {
	q := float32(n) / ratio
	return int(math.Floor(float64(q)))
}

// fpSequence writes the pooling sequence of an axis of in elements pooled
// to out cells into seq (out+1 entries), drawing from gen as TensorFlow's
// GeneratePoolingSequence does (spec §3): seq[0] = 0, seq[out] = in, every
// step k = in/out or k+1. It requires 1 <= out <= in.
func fpSequence(in, out int, gen *philox.Generator, pseudoRandom bool, seq []int64) {
	seq = seq[:out+1]
	k := in / out
	if pseudoRandom {
		// a_i = ceil(alpha·(i+u)), a_0 = 1, a_out = in+1; seq[i] = a_i − 1.
		alpha := float64(in) / float64(out)
		uMax1 := float64(k+2)/alpha - 1
		uMax2 := float64(in+1-k)/alpha - float64(out-1)
		s := philox.NewSingle(gen.Reserve32(2))
		// Explicit conversions: round where TensorFlow rounds (no FMA).
		u := float64(s.Double() * math.Min(uMax1, uMax2))
		seq[0] = 0
		for i := 1; i < out; i++ {
			seq[i] = int64(int32(math.Ceil(float64(alpha*(float64(i)+u))))) - 1
		}
		seq[out] = int64(in)
		return
	}
	// Random: the steps (in mod out of them k+1, long ones first) shuffled
	// by TensorFlow's Fisher–Yates variant with u32 mod (n − i), then
	// summed.
	r := in % out
	diff := seq[1:]
	for i := range diff {
		diff[i] = int64(k)
		if i < r {
			diff[i]++
		}
	}
	s := philox.NewSingle(gen.Reserve32(uint64(out)))
	for i := 0; i < out-1; i++ {
		j := i + int(s.Uint32()%uint32(out-i))
		diff[i], diff[j] = diff[j], diff[i]
	}
	seq[0] = 0
	for i := 1; i <= out; i++ {
		seq[i] += seq[i-1]
	}
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
// Cells and validation.

// fpCell returns the inclusive input range of cell i of a sequence over an
// axis of size n.
func fpCell(seq []int64, i, n int, overlapping bool) (lo, hi int64) {
	lo, hi = seq[i], seq[i+1]
	if !overlapping {
		hi--
	}
	return lo, min(hi, int64(n)-1)
}

// fpFmtSeq formats a sequence for an error message (at most 10 entries).
func fpFmtSeq(seq []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range seq {
		if i == 10 {
			b.WriteString(" ...")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, v)
	}
	b.WriteByte(']')
	return b.String()
}

// fpSeqVector returns the int64 data of a pooling-sequence input, which
// must be an int64 vector.
func fpSeqVector(op, name string, d *tensor.Dense) ([]int64, error) {
	if d.Dtype() != tensor.Int64 {
		return nil, registry.Errorf(registry.ErrDtype, "%s: %s must be int64, got %v", op, name, d.Dtype())
	}
	if d.Dims() != 1 {
		return nil, registry.Errorf(registry.ErrShape, "%s: %s must be a vector, got shape %v", op, name, d.Shape())
	}
	return data[int64](d), nil
}

// fpSeqInput returns the first need entries of a pooling-sequence input,
// which must be an int64 vector of at least need entries. context gives
// the error message's context (a function: formatting it on every call
// would allocate).
func fpSeqInput(op, name string, d *tensor.Dense, need int, context func() string) ([]int64, error) {
	s, err := fpSeqVector(op, name, d)
	if err != nil {
		return nil, err
	}
	if len(s) < need {
		short := "row_seq_tensor"
		if strings.HasPrefix(name, "col") {
			short = "col_seq_tensor"
		}
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %s, %s must have at least %d elements, but got %d",
			op, context(), short, need, len(s))
	}
	return s[:need], nil
}

// fpCheckSeqs validates the read entries of the row and column sequences
// (oh+1 and ow+1 of them) for an input of h rows and w columns:
// TensorFlow's check (fpCheckSeqsTF), then tapegrad's (fpCheckSeqsStrict).
func fpCheckSeqs(op string, rows, cols []int64, h, w int, overlapping bool) error {
	if err := fpCheckSeqsTF(op, rows, cols, h, w, overlapping); err != nil {
		return err
	}
	return fpCheckSeqsStrict(op, rows, cols, h, w)
}

// fpCheckSeqsTF is TensorFlow's sequence check: no cell starts or, after
// clamping, ends below 0, reported in the order TensorFlow's loops meet
// the cells (row cell 0, every column cell, row cell 1, ...).
func fpCheckSeqsTF(op string, rows, cols []int64, h, w int, overlapping bool) error {
	oh, ow := len(rows)-1, len(cols)-1
	for a := 0; a < oh; a++ {
		if lo, hi := fpCell(rows, a, h, overlapping); lo < 0 || hi < 0 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: Row sequence tensor values must not be negative, got %s", op, fpFmtSeq(rows))
		}
		if a > 0 {
			continue
		}
		for b := 0; b < ow; b++ {
			if lo, hi := fpCell(cols, b, w, overlapping); lo < 0 || hi < 0 {
				return registry.Errorf(registry.ErrInvalidArgument, "%s: Column sequence tensor values must not be negative, got %s", op, fpFmtSeq(cols))
			}
		}
	}
	return nil
}

// fpCheckSeqsStrict is tapegrad's sequence check, where TensorFlow has
// undefined behaviour or silently skips cells: 0 <= seq[0] < seq[1] < ...
// <= size, so that no cell is empty or beyond the input.
func fpCheckSeqsStrict(op string, rows, cols []int64, h, w int) error {
	for _, s := range []struct {
		name string
		seq  []int64
		n    int
	}{{"row_pooling_sequence", rows, h}, {"col_pooling_sequence", cols, w}} {
		for i, v := range s.seq {
			if v < 0 {
				return registry.Errorf(registry.ErrInvalidArgument, "%s: %s entry %d is negative (got %s)", op, s.name, i, fpFmtSeq(s.seq))
			}
			if v > int64(s.n) {
				return registry.Errorf(registry.ErrInvalidArgument, "%s: %s entry %d is %d, beyond the input size %d (got %s)",
					op, s.name, i, v, s.n, fpFmtSeq(s.seq))
			}
			if i > 0 && v <= s.seq[i-1] {
				return registry.Errorf(registry.ErrInvalidArgument, "%s: %s must be strictly increasing (every cell non-empty), got %s",
					op, s.name, fpFmtSeq(s.seq))
			}
		}
	}
	return nil
}

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
		return 0, 0, registry.Errorf(registry.ErrShape, "%s: tensor_in must be 4-dimensional, got shape %v", op, x.Shape())
	}
	for i, n := range x.Shape() {
		if !(float32(n) >= r[i]) {
			return 0, 0, registry.Errorf(registry.ErrInvalidArgument,
				"%s: Pooling ratio is higher than input dimension size for dimension %d. Input dim size: %d pooling ratio: %v", op, i, n, r[i])
		}
	}
	_, h, w, _ := fpDims4(x)
	return fpOutputSize(h, r[1]), fpOutputSize(w, r[2]), nil
}

// fpGrain returns a parallel grain (items per chunk) for items of the
// given cost in elements.
func fpGrain(cost int) int {
	return max(1, 1<<15/max(1, cost))
}

// ---------------------------------------------------------------------
// Average pooling.

// fpAvgPool pools x [n,h,w,c] over the cells of rows/cols (oh+1 and ow+1
// entries) into out [n,oh,ow,c]: per cell, a sum in T in row-major order
// starting from 0, divided by the element count in T.
func fpAvgPool[T fpNum](threads int, x []T, n, h, w, c int, rows, cols []int64, overlapping bool, out []T) {
	fpPool(threads, x, n, h, w, c, rows, cols, overlapping, false, out)
}

// fpPool runs the average (isMax false) or the max pooling of x [n,h,w,c]
// over the cells of rows/cols into out [n,oh,ow,c], rows of cells in
// parallel. Cells of at most fpMaxFused pixels are combined in one pass
// over the channels.
func fpPool[T fpNum](threads int, x []T, n, h, w, c int, rows, cols []int64, overlapping, isMax bool, out []T) {
	oh := len(rows) - 1
	if grain := fpGrain(h*w*c/oh + 1); serial(threads, n*oh, grain) {
		fpPoolRows(x, h, w, c, rows, cols, overlapping, isMax, out, 0, n*oh)
	} else {
		parallel.For(threads, n*oh, grain, func(lo, hi int) {
			fpPoolRows(x, h, w, c, rows, cols, overlapping, isMax, out, lo, hi)
		})
	}
}

// fpPoolRows does fpPool's rows of cells [lo, hi) (row i of image i/oh).
func fpPoolRows[T fpNum](x []T, h, w, c int, rows, cols []int64, overlapping, isMax bool, out []T, lo, hi int) {
	oh, ow := len(rows)-1, len(cols)-1
	var offs [fpMaxFused]int
	for i := lo; i < hi; i++ {
		b, a := i/oh, i%oh
		r0, r1 := fpCell(rows, a, h, overlapping)
		for j := 0; j < ow; j++ {
			c0, c1 := fpCell(cols, j, w, overlapping)
			dst := out[(i*ow+j)*c:][:c]
			cnt := max(0, int(r1-r0+1)*int(c1-c0+1))
			fused := cnt <= fpMaxFused
			if fused {
				fpCellOffsets(offs[:cnt], b, h, w, c, r0, r1, c0, c1)
			}
			switch {
			case isMax && fused:
				fpMaxCell(dst, x, offs[:cnt])
			case isMax:
				fpMaxCellLarge(dst, x, b, h, w, c, r0, r1, c0, c1)
			case fused:
				fpSumCell(dst, x, offs[:cnt])
				fpDivide(dst, cnt)
			default:
				fpSumCellLarge(dst, x, b, h, w, c, r0, r1, c0, c1)
				fpDivide(dst, cnt)
			}
		}
	}
}

// fpMaxFused is the largest cell whose elements are combined in one pass
// over the channels (their offsets in a stack array).
const fpMaxFused = 16

// fpCellOffsets writes the flat offsets of the cell's pixels (channel 0)
// in row-major order into offs, which has exactly the cell's size.
func fpCellOffsets(offs []int, b, h, w, c int, r0, r1, c0, c1 int64) {
	k := 0
	for r := int(r0); r <= int(r1); r++ {
		base := (b*h + r) * w
		for cc := int(c0); cc <= int(c1); cc++ {
			offs[k] = (base + cc) * c
			k++
		}
	}
}

// fpSumCell sets dst to 0 + x[offs[0]:] + x[offs[1]:] + ... elementwise,
// adding in the order of offs. The leading 0 + turns −0 into +0, as
// TensorFlow's zero-initialised accumulator does. An empty cell gives 0.
func fpSumCell[T fpNum](dst, x []T, offs []int) {
	var zero T
	switch len(offs) {
	case 0:
		clear(dst)
	case 1:
		s0 := x[offs[0]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k]
		}
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k] + s1[k]
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k] + s1[k] + s2[k]
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k] + s1[k] + s2[k] + s3[k]
		}
		for rest := offs[4:]; len(rest) > 0; {
			m := min(len(rest), 4)
			fpAddCell(dst, x, rest[:m])
			rest = rest[m:]
		}
	}
}

// fpAddCell adds x[offs[0]:], x[offs[1]:], ... (1 to 4 of them) into dst
// elementwise, in the order of offs.
func fpAddCell[T fpNum](dst, x []T, offs []int) {
	switch len(offs) {
	case 1:
		fpAddTo(dst, x[offs[0]:][:len(dst)])
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = dst[k] + s0[k] + s1[k]
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = dst[k] + s0[k] + s1[k] + s2[k]
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = dst[k] + s0[k] + s1[k] + s2[k] + s3[k]
		}
	}
}

// fpSumCellLarge is fpSumCell for cells of more than fpMaxFused pixels.
func fpSumCellLarge[T fpNum](dst, x []T, b, h, w, c int, r0, r1, c0, c1 int64) {
	var zero T
	first := true
	for r := int(r0); r <= int(r1); r++ {
		base := (b*h + r) * w
		for cc := int(c0); cc <= int(c1); cc++ {
			src := x[(base+cc)*c:][:len(dst)]
			if first {
				for k, v := range src {
					dst[k] = zero + v
				}
				first = false
				continue
			}
			fpAddTo(dst, src)
		}
	}
}

// fpAddTo adds src into dst elementwise.
func fpAddTo[T fpNum](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := src[i : i+4 : i+4]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// fpDivide divides dst by the cell count cnt in T (float division, or
// integer division truncating toward zero). A power-of-two count is
// applied as an exact multiplication by its reciprocal, which rounds
// identically.
func fpDivide[T fpNum](dst []T, cnt int) {
	switch d := any(dst).(type) {
	case []float32:
		fpDivideFloat(d, cnt)
		return
	case []float64:
		fpDivideFloat(d, cnt)
		return
	}
	if cnt <= 0 {
		clear(dst) // an empty cell (impossible for validated sequences)
		return
	}
	if cnt == 1 {
		return
	}
	ct := T(cnt)
	for i := range dst {
		dst[i] /= ct
	}
}

func fpDivideFloat[F float32 | float64](d []F, cnt int) {
	switch {
	case cnt == 1:
	case cnt > 0 && cnt&(cnt-1) == 0:
		rc := 1 / F(cnt)
		for i := range d {
			d[i] *= rc
		}
	default:
		ct := F(cnt)
		for i := range d {
			d[i] /= ct
		}
	}
}

func fpAvgKernel[T fpNum](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fpForwardKernel[T](kc, fpAvgName, "average", false, attrs, in)
}

// fpForwardKernel is the kernel of FractionalAvgPool (isMax false) and
// FractionalMaxPool (kind names the pooling in errors): it draws the
// sequences and pools.
func fpForwardKernel[T fpNum](kc *registry.KernelCtx, op, kind string, isMax bool, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
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
	fpPool(kc.NumThreads(), data[T](x), n, h, w, c, data[int64](rows), data[int64](cols), a.Overlapping, isMax, data[T](out))
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
	fpSequence(h, oh, &gen, a.PseudoRandom, data[int64](rows))
	fpSequence(w, ow, &gen, a.PseudoRandom, data[int64](cols))
	return out, rows, cols, nil
}

func fpAvgSeqKernel[T fpNum](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = fpAvgSeqName
	a := attrs.(FractionalPoolSeqAttrs)
	x := in[0]
	if x.Dims() != 4 {
		return nil, registry.Errorf(registry.ErrShape, "%s: value must be 4-dimensional, got shape %v", op, x.Shape())
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
	fpAvgPool(kc.NumThreads(), data[T](x), n, h, w, c, rows, cols, a.Overlapping, data[T](out))
	return kc.Results(out), nil
}

// ---------------------------------------------------------------------
// FractionalAvgPoolGrad.

// fpAvgGradCheck validates FractionalAvgPoolGrad's inputs in TensorFlow's
// order and returns the original input shape and the read sequence
// entries.
func fpAvgGradCheck(in []*tensor.Dense, overlapping bool) (shape [4]int, rows, cols []int64, err error) {
	const op = fpAvgGradName
	st, dy := in[0], in[1]
	if st.Dtype() != tensor.Int64 {
		return shape, nil, nil, registry.Errorf(registry.ErrDtype, "%s: orig_input_tensor_shape must be int64, got %v", op, st.Dtype())
	}
	if st.Dims() != 1 || st.Shape().TotalSize() != 4 {
		return shape, nil, nil, registry.Errorf(registry.ErrShape, "%s: original input tensor shape must be1-dimensional and 4 elements, got shape %v", op, st.Shape())
	}
	if dy.Dims() != 4 {
		return shape, nil, nil, registry.Errorf(registry.ErrShape, "%s: out_backprop must be 4-dimensional, got shape %v", op, dy.Shape())
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
	sv := data[int64](st)
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

// fpCover fills lo[i], hi[i] with the range of cells of seq covering
// position i of an axis of size n (lo = −1 if none). For strictly
// increasing sequences the covering cells of a position are consecutive.
func fpCover(seq []int64, n int, overlapping bool, lo, hi []int64) {
	for i := range lo {
		lo[i] = -1
	}
	for a := 0; a < len(seq)-1; a++ {
		c0, c1 := fpCell(seq, a, n, overlapping)
		for i := c0; i <= c1; i++ {
			if lo[i] < 0 {
				lo[i] = int64(a)
			}
			hi[i] = int64(a)
		}
	}
}

func fpAvgGradKernel[T fpNum](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(FractionalPoolGradAttrs)
	shape, rows, cols, err := fpAvgGradCheck(in, a.Overlapping)
	if err != nil {
		return nil, err
	}
	n, h, w, c := shape[0], shape[1], shape[2], shape[3]
	dyT := in[1]
	nd := dyT.Shape()[0] // nd <= n: images nd.. get zeros
	dy := data[T](dyT)
	out, err := kc.Output(dyT.Dtype(), n, h, w, c)
	if err != nil {
		return nil, err
	}
	o := data[T](out)
	clear(o[nd*h*w*c:])
	if !a.Overlapping {
		fpAvgGradDisjoint(kc.NumThreads(), dy, o, nd, h, w, c, rows, cols)
		return kc.Results(out), nil
	}
	if err := fpAvgGradOverlap(kc, dy, o, nd, h, w, c, rows, cols); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// fpAvgGradDisjoint is FractionalAvgPoolGrad without overlapping: the
// cells (validated, strictly increasing sequences) are disjoint, so every
// input position receives at most one contribution, 0 + double(dy)/count
// converted to T, and is written once; positions outside every cell get 0.
// Rows of cells are independent and run in parallel.
func fpAvgGradDisjoint[T fpNum](threads int, dy, o []T, nd, h, w, c int, rows, cols []int64) {
	oh := len(rows) - 1
	if grain := fpGrain(h*w*c/oh + 1); serial(threads, nd*oh, grain) {
		fpAvgGradDisjointRows(dy, o, h, w, c, rows, cols, 0, nd*oh)
	} else {
		parallel.For(threads, nd*oh, grain, func(lo, hi int) {
			fpAvgGradDisjointRows(dy, o, h, w, c, rows, cols, lo, hi)
		})
	}
}

// fpAvgGradDisjointRows does fpAvgGradDisjoint's rows of cells [lo, hi).
func fpAvgGradDisjointRows[T fpNum](dy, o []T, h, w, c int, rows, cols []int64, lo, hi int) {
	oh, ow := len(rows)-1, len(cols)-1
	cFirst, _ := fpCell(cols, 0, w, false)
	_, cLast := fpCell(cols, ow-1, w, false)
	for i := lo; i < hi; i++ {
		b, a := i/oh, i%oh
		img := o[b*h*w*c : (b+1)*h*w*c]
		r0, r1 := fpCell(rows, a, h, false)
		if a == 0 {
			clear(img[:int(r0)*w*c])
		}
		if a == oh-1 {
			clear(img[int(r1+1)*w*c:])
		}
		for r := int(r0); r <= int(r1); r++ {
			row := img[r*w*c : (r+1)*w*c]
			clear(row[:int(cFirst)*c])
			clear(row[int(cLast+1)*c:])
			for j := 0; j < ow; j++ {
				c0, c1 := fpCell(cols, j, w, false)
				cnt := int(r1-r0+1) * int(c1-c0+1)
				src := dy[(i*ow+j)*c:][:c]
				for cc := int(c0); cc <= int(c1); cc++ {
					fpSpreadTo(row[cc*c:][:c], src, cnt)
				}
			}
		}
	}
}

// fpAvgGradOverlap is FractionalAvgPoolGrad with overlapping cells: every
// input position sums its contributions double(dy)/count in float64 in
// TensorFlow's order (cells by output row, then column), starting from 0,
// and is converted to T once. The contributions are computed once per
// output element (v, float64 scratch); input rows then run in parallel,
// each chunk of rows with its own float64 accumulator of one pixel's
// channels for positions covered by more than four cells.
func fpAvgGradOverlap[T fpNum](kc *registry.KernelCtx, dy, o []T, nd, h, w, c int, rows, cols []int64) error {
	oh, ow := len(rows)-1, len(cols)-1
	threads := kc.NumThreads()
	v, err := registry.Scratch[float64](kc, nd*oh*ow*c, false)
	if err != nil {
		return err
	}
	if grain := fpGrain(ow * c); serial(threads, nd*oh, grain) {
		fpOverlapContribs(dy, v, h, w, c, rows, cols, 0, nd*oh)
	} else {
		parallel.For(threads, nd*oh, grain, func(lo, hi int) { fpOverlapContribs(dy, v, h, w, c, rows, cols, lo, hi) })
	}
	cover, err := registry.Scratch[int64](kc, 2*(h+w), false)
	if err != nil {
		return err
	}
	rlo, rhi, clo, chi := cover[:h], cover[h:2*h], cover[2*h:2*h+w], cover[2*h+w:]
	fpCover(rows, h, true, rlo, rhi)
	fpCover(cols, w, true, clo, chi)
	grain := fpGrain(w * c)
	nch := parallel.Chunks(nd*h, grain)
	accs, err := registry.Scratch[float64](kc, nch*c, false)
	if err != nil {
		return err
	}
	cv := fpCoverage{rlo: rlo, rhi: rhi, clo: clo, chi: chi}
	if serial(threads, nch, 1) {
		for ci := range nch {
			fpOverlapGather(o, v, accs, cv, h, w, c, oh, ow, ci, ci*grain, min((ci+1)*grain, nd*h))
		}
	} else {
		parallel.ForChunks(threads, nd*h, grain, func(ci, lo, hi int) { fpOverlapGather(o, v, accs, cv, h, w, c, oh, ow, ci, lo, hi) })
	}
	return nil
}

// fpOverlapContribs computes fpAvgGradOverlap's contributions v of the
// rows of cells [lo, hi) (row i of image i/oh).
func fpOverlapContribs[T fpNum](dy []T, v []float64, h, w, c int, rows, cols []int64, lo, hi int) {
	oh, ow := len(rows)-1, len(cols)-1
	for i := lo; i < hi; i++ {
		r0, r1 := fpCell(rows, i%oh, h, true)
		for j := 0; j < ow; j++ {
			c0, c1 := fpCell(cols, j, w, true)
			p := (i*ow + j) * c
			fpContrib(v[p:p+c], dy[p:p+c], int(r1-r0+1)*int(c1-c0+1))
		}
	}
}

// fpCoverage holds the ranges of cells covering each input row (rlo,
// rhi) and column (clo, chi), lo = −1 for none (fpCover).
type fpCoverage struct {
	rlo, rhi, clo, chi []int64
}

// fpOverlapGather sums fpAvgGradOverlap's contributions into the input
// rows [lo, hi) (row i of image i/h) of chunk ci, whose accumulator is
// accs[ci·c:(ci+1)·c].
func fpOverlapGather[T fpNum](o []T, v, accs []float64, cv fpCoverage, h, w, c, oh, ow, ci, lo, hi int) {
	rlo, rhi, clo, chi := cv.rlo, cv.rhi, cv.clo, cv.chi
	acc := accs[ci*c : (ci+1)*c]
	var offs [4]int
	for i := lo; i < hi; i++ {
		b, r := i/h, i%h
		a0, a1 := int(rlo[r]), int(rhi[r])
		if a0 < 0 {
			clear(o[i*w*c : (i+1)*w*c])
			continue
		}
		for cc := 0; cc < w; cc++ {
			dst := o[(i*w+cc)*c:][:c]
			b0, b1 := int(clo[cc]), int(chi[cc])
			if b0 < 0 {
				clear(dst)
				continue
			}
			if (a1-a0+1)*(b1-b0+1) <= len(offs) {
				k := 0
				for aa := a0; aa <= a1; aa++ {
					for bb := b0; bb <= b1; bb++ {
						offs[k] = ((b*oh+aa)*ow + bb) * c
						k++
					}
				}
				fpGatherCell(dst, v, offs[:k])
				continue
			}
			clear(acc)
			for aa := a0; aa <= a1; aa++ {
				for bb := b0; bb <= b1; bb++ {
					src := v[((b*oh+aa)*ow+bb)*c:][:c]
					for k, x := range src {
						acc[k] += x
					}
				}
			}
			for k, x := range acc {
				dst[k] = T(x)
			}
		}
	}
}

// fpContrib sets v = double(dy)/cnt elementwise (a power-of-two count as
// an exact multiplication by its reciprocal).
func fpContrib[T fpNum](v []float64, dy []T, cnt int) {
	dy = dy[:len(v)]
	if cnt > 0 && cnt&(cnt-1) == 0 {
		rc := 1 / float64(cnt)
		for k, x := range dy {
			v[k] = float64(float64(x) * rc)
		}
		return
	}
	ct := float64(cnt)
	for k, x := range dy {
		v[k] = float64(x) / ct
	}
}

// fpGatherCell sets dst = T(0 + v[offs[0]:] + v[offs[1]:] + ...)
// elementwise, adding in float64 in the order of offs (1 to 4 of them).
func fpGatherCell[T fpNum](dst []T, v []float64, offs []int) {
	var zero float64
	switch len(offs) {
	case 1:
		s0 := v[offs[0]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k])
		}
	case 2:
		s0, s1 := v[offs[0]:][:len(dst)], v[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k] + s1[k])
		}
	case 3:
		s0, s1, s2 := v[offs[0]:][:len(dst)], v[offs[1]:][:len(dst)], v[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k] + s1[k] + s2[k])
		}
	default:
		s0, s1, s2, s3 := v[offs[0]:][:len(dst)], v[offs[1]:][:len(dst)], v[offs[2]:][:len(dst)], v[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k] + s1[k] + s2[k] + s3[k])
		}
	}
}

// fpSpreadTo sets dst = T(0 + double(src)/cnt) elementwise (a
// power-of-two count as an exact multiplication by its reciprocal; the
// explicit conversions keep the rounding points TensorFlow has).
func fpSpreadTo[T fpNum](dst, src []T, cnt int) {
	var zero float64
	src = src[:len(dst)]
	if cnt > 0 && cnt&(cnt-1) == 0 {
		rc := 1 / float64(cnt)
		for k, x := range src {
			dst[k] = T(zero + float64(float64(x)*rc))
		}
		return
	}
	ct := float64(cnt)
	for k, x := range src {
		dst[k] = T(zero + float64(x)/ct)
	}
}

// ---------------------------------------------------------------------
// Max pooling.

// fpLowest returns the lowest finite value of T.
func fpLowest[T fpNum]() T {
	var z T
	switch p := any(&z).(type) {
	case *float32:
		*p = -math.MaxFloat32
	case *float64:
		*p = -math.MaxFloat64
	case *int32:
		*p = math.MinInt32
	case *int64:
		*p = math.MinInt64
	}
	return z
}

// fpMaxPool pools x [n,h,w,c] over the cells of rows/cols into out
// [n,oh,ow,c]: the cell's first element, replaced by every later greater
// one in row-major order.
func fpMaxPool[T fpNum](threads int, x []T, n, h, w, c int, rows, cols []int64, overlapping bool, out []T) {
	fpPool(threads, x, n, h, w, c, rows, cols, overlapping, true, out)
}

// fpMaxCellLarge is fpMaxCell for cells of more than fpMaxFused pixels.
func fpMaxCellLarge[T fpNum](dst, x []T, b, h, w, c int, r0, r1, c0, c1 int64) {
	first := true
	for r := int(r0); r <= int(r1); r++ {
		base := (b*h + r) * w
		for cc := int(c0); cc <= int(c1); cc++ {
			src := x[(base+cc)*c:][:len(dst)]
			if first {
				copy(dst, src)
				first = false
				continue
			}
			for k, v := range src {
				dst[k] = fpGreater(v, dst[k])
			}
		}
	}
}

// fpGreater returns v if v > m, else m: the max-pooling scan's step
// (equal values and NaNs keep m). It selects the bits without a branch
// (a compare and a conditional move), because max pooling random data
// mispredicts about every other branch.
func fpGreater[T fpNum](v, m T) T {
	var mask uint64
	if v > m {
		mask = ^uint64(0)
	}
	if unsafe.Sizeof(v) == 4 {
		vb, mb := *(*uint32)(unsafe.Pointer(&v)), *(*uint32)(unsafe.Pointer(&m))
		r := mb ^ (mb^vb)&uint32(mask)
		return *(*T)(unsafe.Pointer(&r))
	}
	vb, mb := *(*uint64)(unsafe.Pointer(&v)), *(*uint64)(unsafe.Pointer(&m))
	r := mb ^ (mb^vb)&mask
	return *(*T)(unsafe.Pointer(&r))
}

// fpMaxCell sets dst to the max-pooling scan over x[offs[0]:],
// x[offs[1]:], ... elementwise (first element, then every greater one).
// An empty cell gives T's lowest value, as TensorFlow's initialisation.
// It and fpMaxInto unroll like fpSumCell and fpAddCell with another
// operation: near-copies on purpose, the operation inlined in the inner
// loops (a function value there would cost a call per element).
func fpMaxCell[T fpNum](dst, x []T, offs []int) {
	switch len(offs) {
	case 0:
		low := fpLowest[T]()
		for k := range dst {
			dst[k] = low
		}
	case 1:
		copy(dst, x[offs[0]:][:len(dst)])
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s1[k], s0[k])
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s2[k], fpGreater(s1[k], s0[k]))
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s3[k], fpGreater(s2[k], fpGreater(s1[k], s0[k])))
		}
		for rest := offs[4:]; len(rest) > 0; {
			m := min(len(rest), 4)
			fpMaxInto(dst, x, rest[:m])
			rest = rest[m:]
		}
	}
}

// fpMaxInto continues the max-pooling scan of dst over x[offs[0]:],
// x[offs[1]:], ... (1 to 4 of them), in the order of offs.
func fpMaxInto[T fpNum](dst, x []T, offs []int) {
	switch len(offs) {
	case 1:
		s0 := x[offs[0]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s0[k], dst[k])
		}
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s1[k], fpGreater(s0[k], dst[k]))
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s2[k], fpGreater(s1[k], fpGreater(s0[k], dst[k])))
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = fpGreater(s3[k], fpGreater(s2[k], fpGreater(s1[k], fpGreater(s0[k], dst[k]))))
		}
	}
}

func fpMaxKernel[T fpNum](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fpForwardKernel[T](kc, fpMaxName, "max", true, attrs, in)
}

// fpMaxGradCheck validates the inputs of FractionalMaxPoolGrad and
// tapegrad.FractionalMaxPoolGradGrad (in[2] is out_backprop, shaped like
// orig_output, or grad, shaped like orig_input) and returns the read
// sequence entries.
func fpMaxGradCheck(op string, in []*tensor.Dense, overlapping bool) (rows, cols []int64, err error) {
	x, y, g := in[0], in[1], in[2]
	if x.Dims() != 4 {
		return nil, nil, registry.Errorf(registry.ErrShape, "%s: orig_input should be a tensor of rank 4, got shape %v", op, x.Shape())
	}
	if x.Shape().TotalSize() == 0 {
		return nil, nil, registry.Errorf(registry.ErrInvalidArgument, "%s: orig_input must not be empty, got shape %v", op, x.Shape())
	}
	if y.Dims() != 4 {
		return nil, nil, registry.Errorf(registry.ErrShape, "%s: orig_output should be a tensor of rank 4, got shape %v", op, y.Shape())
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
		return nil, nil, registry.Errorf(registry.ErrShape, "%s: %s must have shape %v, got %v", op, gname, want, g.Shape())
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

// fpArgmax runs the max-pooling scan of batch b and calls visit for every
// cell with the cell's output offset and, per channel, the flat input
// index of the cell's first maximum. It returns false if the maxima differ
// from y (two NaNs compare equal).
func fpArgmax[T fpNum](x, y []T, b, h, w, c int, rows, cols []int64, overlapping bool, am []int64, m []T, visit func(o int, am []int64)) bool {
	oh, ow := len(rows)-1, len(cols)-1
	for a := 0; a < oh; a++ {
		r0, r1 := fpCell(rows, a, h, overlapping)
		for j := 0; j < ow; j++ {
			c0, c1 := fpCell(cols, j, w, overlapping)
			first := true
			for r := int(r0); r <= int(r1); r++ {
				base := (b*h + r) * w
				for cc := int(c0); cc <= int(c1); cc++ {
					p := (base + cc) * c
					src := x[p:][:c]
					if first {
						copy(m, src)
						for k := range am {
							am[k] = int64(p + k)
						}
						first = false
						continue
					}
					for k, v := range src {
						if m[k] < v {
							m[k] = v
							am[k] = int64(p + k)
						}
					}
				}
			}
			o := ((b*oh+a)*ow + j) * c
			for k, v := range y[o:][:c] {
				if m[k] != v && (m[k] == m[k] || v == v) {
					return false
				}
			}
			visit(o, am)
		}
	}
	return true
}

// fpMaxScan runs fpArgmax over every batch in parallel (one scratch slot
// per batch) and reports a mismatch of orig_output as TensorFlow does.
func fpMaxScan[T fpNum](kc *registry.KernelCtx, op string, in []*tensor.Dense, rows, cols []int64, overlapping bool,
	visit func(b, o int, am []int64)) error {
	x, y := data[T](in[0]), data[T](in[1])
	n, h, w, c := fpDims4(in[0])
	am, err := registry.Scratch[int64](kc, n*c, false)
	if err != nil {
		return err
	}
	m, err := registry.Scratch[T](kc, n*c, false)
	if err != nil {
		return err
	}
	bad, err := registry.Scratch[bool](kc, n, true)
	if err != nil {
		return err
	}
	parallel.For(kc.NumThreads(), n, fpGrain(h*w*c), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			ok := fpArgmax(x, y, b, h, w, c, rows, cols, overlapping, am[b*c:(b+1)*c], m[b*c:(b+1)*c],
				func(o int, idx []int64) { visit(b, o, idx) })
			bad[b] = !ok
		}
	})
	for _, v := range bad {
		if v {
			return registry.Errorf(registry.ErrInvalidArgument,
				"%s: tensor_out_dup is not the same as tensor_out (orig_output is not the max pooling of orig_input with these sequences)", op)
		}
	}
	return nil
}

func fpMaxGradKernel[T fpNum](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(FractionalPoolGradAttrs)
	rows, cols, err := fpMaxGradCheck(fpMaxGradName, in, a.Overlapping)
	if err != nil {
		return nil, err
	}
	out, err := kc.Zeros(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	dst, dy := data[T](out), data[T](in[2])
	err = fpMaxScan[T](kc, fpMaxGradName, in, rows, cols, a.Overlapping, func(_, o int, am []int64) {
		for k, v := range dy[o:][:len(am)] {
			dst[am[k]] += v
		}
	})
	if err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

func fpMaxGradGradKernel[T fpNum](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(FractionalPoolGradAttrs)
	rows, cols, err := fpMaxGradCheck(fpMaxGradGradName, in, a.Overlapping)
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(in[1].Dtype(), in[1].Shape()...)
	if err != nil {
		return nil, err
	}
	dst, g := data[T](out), data[T](in[2])
	err = fpMaxScan[T](kc, fpMaxGradGradName, in, rows, cols, a.Overlapping, func(_, o int, am []int64) {
		for k, idx := range am {
			dst[o+k] = g[idx]
		}
	})
	if err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}
