package forward

import (
	"fmt"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/bnkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Input checks of the FusedBatchNorm family, with TensorFlow's error
// texts: the forward ops of fused_batch_norm.go and the gradient ops
// (FusedBatchNormGrad, FusedBatchNormGradV3) registered in package
// backward share them. op is the name of the op being checked, used as
// the errors' prefix.

// FusedBatchNormShape formats a shape as TensorFlow's
// TensorShape::DebugString ("[2,3]").
func FusedBatchNormShape(s []int) string {
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

// bnCheckFormat rejects the 5-D formats for the V1 ops, FusedBatchNorm
// and FusedBatchNormGrad (their op definitions allow NHWC and NCHW only).
func bnCheckFormat(op, format string) error {
	if (op == bnOpV1 || op == "FusedBatchNormGrad") && (format == "NDHWC" || format == "NCDHW") {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: Invalid data format %q: %s supports NHWC and NCHW (use %sV3 for 5-D inputs)",
			op, format, op, op)
	}
	return nil
}

// FusedBatchNormLayout checks that a shape (of the input called name) has
// the rank its data format needs and returns it viewed as [outer, C,
// inner]. The rank itself (4 or 5) has been checked by the caller
// (CheckFusedBatchNormRank).
func FusedBatchNormLayout(op, name string, shape []int, format string) (bnkern.Layout, error) {
	rank, first := bnFormatRank(format)
	if len(shape) != rank {
		return bnkern.Layout{}, registry.NamedInputErrorf(registry.ErrShape, op, name, "%s: %s must be %d-dimensional for data_format %s, got shape %s",
			op, name, rank, format, FusedBatchNormShape(shape))
	}
	if first {
		inner := 1
		for _, d := range shape[2:] {
			inner *= d
		}
		return bnkern.Layout{Outer: shape[0], C: shape[1], Inner: inner}, nil
	}
	outer := 1
	for _, d := range shape[:rank-1] {
		outer *= d
	}
	return bnkern.Layout{Outer: outer, C: shape[rank-1], Inner: 1}, nil
}

// CheckFusedBatchNormOp returns op's attrs (of type A) and data format
// after checking the attrs' type, that the V1 ops get no 5-D format, and
// that every input (named by names) has the dtype of input xi.
func CheckFusedBatchNormOp[A interface{ Format() string }](op string, attrs any, xi int, names []string, in []*tensor.Dense) (a A, format string, err error) {
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
			return registry.InputErrorf(registry.ErrDtype, i, "%s: input %d (%s) has dtype %v, expected %v like %s",
				op, i, names[i], t.Dtype(), dt, names[xi])
		}
	}
	return nil
}

// CheckFusedBatchNormVectors returns TensorFlow's "<what> must be
// 1-dimensional" error for the first of ts (named by whats) that is not a
// vector.
func CheckFusedBatchNormVectors(op string, whats []string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if len(t.Shape()) != 1 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: %s must be 1-dimensional, got shape %s", op, whats[i], FusedBatchNormShape(t.Shape()))
		}
	}
	return nil
}

// CheckFusedBatchNormRank returns TensorFlow's "input must be 4 or
// 5-dimensional" error for t (named name).
func CheckFusedBatchNormRank(op, name string, t *tensor.Dense) error {
	if r := len(t.Shape()); r != 4 && r != 5 {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: input must be 4 or 5-dimensional, got %s of shape %s",
			op, name, FusedBatchNormShape(t.Shape()))
	}
	return nil
}

// CheckFusedBatchNormChannels returns TensorFlow's "<what> must have the
// same number of elements as the channels of x" error, after prefix, for
// the first of ts (named by whats) that does not have c elements.
func CheckFusedBatchNormChannels(op, prefix string, c int, whats []string, ts ...*tensor.Dense) error {
	for i, t := range ts {
		if n := tensorx.Len(t); n != c {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: %s%s must have the same number of elements as the channels of x, got %d and %d",
				op, prefix, whats[i], n, c)
		}
	}
	return nil
}
