package backward

import (
	"fmt"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradient ops of the fractional pooling family (docs/spec/fractional_avg_pool.md;
// the forward ops, their attrs and the family's conventions are in
// forward/fractional_pool_seq.go, the loops in internal/fracpool):
// FractionalAvgPoolGrad and tapegrad.FractionalAvgPoolWithSequences in
// fractional_avg_pool.go, FractionalMaxPoolGrad and
// tapegrad.FractionalMaxPoolGradGrad in fractional_max_pool.go, with the
// gradient functions of all six ops. This file holds what they share: the
// checks of pooling-sequence inputs.
//
// Validation beyond TensorFlow (which has undefined behaviour there): the
// gradient ops require the out_backprop (and orig_output) batch and depth
// to match the original input, FractionalMaxPoolGrad's out_backprop to
// have orig_output's shape, sequences to be int64 vectors, and the read
// entries of every sequence to satisfy 0 <= seq[0] < seq[1] < ... <=
// input size (TensorFlow skips empty cells silently). TensorFlow's own
// checks come first, with its messages. FractionalMaxPoolGrad omits
// TensorFlow's heuristic "Pooling region has more elements than the input
// tensor" check, which refuses valid sequences of ratio-1 pooling.

// Short names of the family's gradient ops.
const (
	fpAvgGradName     = OpFractionalAvgPoolGrad
	fpAvgSeqName      = OpFractionalAvgPoolWithSequences
	fpMaxGradName     = OpFractionalMaxPoolGrad
	fpMaxGradGradName = OpFractionalMaxPoolGradGrad
)

// fpKernels returns the kernel map of a fractional pooling op, one kernel
// per element type (TensorFlow's: float, double, int32, int64).
func fpKernels(k32, k64, ki32, ki64 registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64, tensor.Int32: ki32, tensor.Int64: ki64}
}

// fpDims4 returns the 4 dims of a rank-4 tensor.
func fpDims4(d *tensor.Dense) (n, h, w, c int) {
	s := d.Shape()
	return s[0], s[1], s[2], s[3]
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
		return nil, registry.NamedInputErrorf(registry.ErrDtype, op, name, "%s: %s must be int64, got %v", op, name, d.Dtype())
	}
	if d.Dims() != 1 {
		return nil, registry.NamedInputErrorf(registry.ErrShape, op, name, "%s: %s must be a vector, got shape %v", op, name, d.Shape())
	}
	return tensorx.MustSlice[int64](d), nil
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
		if lo, hi := fracpool.Cell(rows, a, h, overlapping); lo < 0 || hi < 0 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: Row sequence tensor values must not be negative, got %s", op, fpFmtSeq(rows))
		}
		if a > 0 {
			continue
		}
		for b := 0; b < ow; b++ {
			if lo, hi := fracpool.Cell(cols, b, w, overlapping); lo < 0 || hi < 0 {
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

// fpGradAttrs[b2i(overlapping)] are the grad ops' attrs, made once.
var fpGradAttrs = [2]registry.Attrs[forward.FractionalPoolGradAttrs]{
	registry.NewAttrs(forward.FractionalPoolGradAttrs{}),
	registry.NewAttrs(forward.FractionalPoolGradAttrs{Overlapping: true}),
}
