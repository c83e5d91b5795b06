package forward

import (
	"math"
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Shared helpers of the convolution families (Conv2D and its backprops,
// and the depthwise ops): attr validation, TensorFlow's padding and
// output-size rules (docs/spec/README.md, "Padding conventions"), and layout
// conversion between NCHW and NHWC.

// convMaxDim is the largest dimension, stride, dilation or padding the conv
// kernels accept: TensorFlow keeps these in 32-bit ints and rejects larger
// values as "too large".
const convMaxDim = math.MaxInt32

// convLayout gives the positions of the N, H, W and C axes of a 4-D image
// tensor (and of the per-axis attr lists) in a data format.
type convLayout struct{ n, h, w, c int }

var (
	convNHWC = convLayout{n: 0, h: 1, w: 2, c: 3}
	convNCHW = convLayout{n: 0, c: 1, h: 2, w: 3}
)

// convLayoutOf returns the layout of data_format ("NHWC" or "NCHW"; the
// attr parser has already rejected anything else).
func convLayoutOf(format string) convLayout {
	if format == "NCHW" {
		return convNCHW
	}
	return convNHWC
}

// nchw reports whether the layout is NCHW.
func (l convLayout) nchw() bool { return l.c == 1 }

// shape builds a 4-D shape in this layout from its N, H, W, C sizes.
func (l convLayout) shape(n, h, w, c int) []int {
	s := l.dims(n, h, w, c)
	return s[:]
}

// dims is shape as an array, which stays on the caller's stack.
func (l convLayout) dims(n, h, w, c int) [4]int {
	var s [4]int
	s[l.n], s[l.h], s[l.w], s[l.c] = n, h, w, c
	return s
}

// convWindow holds the validated window attrs of a 2-D convolution: the
// layout, the H/W strides and dilations, the padding mode and, for
// EXPLICIT padding, the H/W paddings.
type convWindow struct {
	layout         convLayout
	sh, sw, dh, dw int
	padding        string
	// Explicit paddings (top, bottom, left, right); used only for EXPLICIT.
	pt, pb, pl, pr int
}

// convParseWindow validates the window attrs shared by the conv ops, with
// TensorFlow's checks and messages, in the order of its kernels:
// strides and dilations must have 4 entries, the N and C entries must be 1
// (an error of kind batchDepthKind: ErrUnimplemented for Conv2D and
// Conv2DBackpropInput, ErrInvalidArgument for Conv2DBackpropFilter), the H
// and W entries positive; then the explicit_paddings rules. A nil strides
// list is a missing required attr.
func convParseWindow(op string, strides, dilations []int, padding string, explicit []int, format string, batchDepthKind error) (convWindow, error) {
	l := convLayoutOf(format)
	w := convWindow{layout: l, padding: padding}
	if strides == nil {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: missing required attr strides (Sliding window strides field must specify 4 dimensions)", op)
	}
	if len(strides) != 4 {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: Sliding window strides field must specify 4 dimensions, got %d (strides=%v)", op, len(strides), strides)
	}
	if len(dilations) != 4 {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: Sliding window dilations field must specify 4 dimensions, got %d (dilations=%v)", op, len(dilations), dilations)
	}
	if strides[l.n] != 1 || strides[l.c] != 1 {
		return w, registry.Errorf(batchDepthKind, "%s: Current implementation does not yet support strides in the batch and depth dimensions (strides=%v, data_format=%s)", op, strides, format)
	}
	w.sh, w.sw = strides[l.h], strides[l.w]
	if w.sh <= 0 || w.sw <= 0 {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: Row and column strides should be larger than 0 (strides=%v)", op, strides)
	}
	if dilations[l.n] != 1 || dilations[l.c] != 1 {
		return w, registry.Errorf(batchDepthKind, "%s: Current implementation does not yet support dilations in the batch and depth dimensions (dilations=%v, data_format=%s)", op, dilations, format)
	}
	w.dh, w.dw = dilations[l.h], dilations[l.w]
	if w.dh <= 0 || w.dw <= 0 {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: Dilated rates should be larger than 0 (dilations=%v)", op, dilations)
	}
	if w.sh > convMaxDim || w.sw > convMaxDim {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: stride too large (strides=%v)", op, strides)
	}
	if w.dh > convMaxDim || w.dw > convMaxDim {
		return w, registry.Errorf(registry.ErrInvalidArgument, "%s: dilation too large (dilations=%v)", op, dilations)
	}
	if err := convCheckPadding(op, padding, explicit, l); err != nil {
		return w, err
	}
	if padding == "EXPLICIT" {
		w.pt, w.pb = explicit[2*l.h], explicit[2*l.h+1]
		w.pl, w.pr = explicit[2*l.w], explicit[2*l.w+1]
	}
	return w, nil
}

// convCheckPadding applies the explicit_paddings rules (TensorFlow's
// CheckValidPadding for 4-D tensors).
func convCheckPadding(op, padding string, explicit []int, l convLayout) error {
	if padding != "EXPLICIT" {
		if len(explicit) != 0 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT (padding=%s, explicit_paddings=%v)", op, padding, explicit)
		}
		return nil
	}
	if len(explicit) != 8 {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: explicit_paddings attribute must contain 8 values, but got: %d", op, len(explicit))
	}
	for _, p := range explicit {
		if p < 0 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: All elements of explicit_paddings must be nonnegative, got %v", op, explicit)
		}
	}
	if explicit[2*l.n] != 0 || explicit[2*l.n+1] != 0 || explicit[2*l.c] != 0 || explicit[2*l.c+1] != 0 {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: Nonzero explicit padding in the batch or depth dimensions is not supported (explicit_paddings=%v)", op, explicit)
	}
	for _, p := range explicit {
		if p > convMaxDim {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: explicit padding too large (explicit_paddings=%v)", op, explicit)
		}
	}
	return nil
}

// convOutputSize applies TensorFlow's windowed-output-size rule to one
// spatial axis: input length in, filter length k, dilation d, stride s. For
// EXPLICIT padding p0/p1 are the given paddings; for SAME and VALID they are
// ignored and computed. It returns the output length and the paddings
// before/after, or an error when the output length would be negative (the
// kernel rule: VALID with in < the effective filter length may still give 0).
func convOutputSize(op string, in, k, d, s int, padding string, p0, p1 int) (out, before, after int, err error) {
	eff := (k-1)*d + 1
	switch padding {
	case "VALID":
		out, before, after = (in-eff+s)/s, 0, 0
	case "EXPLICIT":
		out, before, after = (in+p0+p1-eff+s)/s, p0, p1
	case "SAME":
		out = (in + s - 1) / s
		need := max(0, (out-1)*s+eff-in)
		before = need / 2
		after = need - before
	default:
		return 0, 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: unknown padding %q", op, padding)
	}
	if out < 0 {
		return 0, 0, 0, registry.Errorf(registry.ErrInvalidArgument, "%s: Computed output size would be negative: %d [input_size: %d, effective_filter_size: %d, stride: %d]", op, out, in, eff, s)
	}
	return out, before, after, nil
}

// convCheckFits rejects a dimension that TensorFlow cannot index with a
// 32-bit int ("Input rows too large", "filter too large", ...).
func convCheckFits(op, what string, v int) error {
	if v > convMaxDim {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: %s too large (%d)", op, what, v)
	}
	return nil
}

// convShapeArg reads a 1-D int32/int64 shape argument (input_sizes,
// filter_sizes) as []int, with TensorFlow's message for a non-vector.
func convShapeArg(op, name string, t *tensor.Dense) ([]int, error) {
	return convAppendShapeArg(nil, op, name, t)
}

// convAppendShapeArg is convShapeArg appending to dst: with a dst of
// enough capacity (a stack array) it does not allocate.
func convAppendShapeArg(dst []int, op, name string, t *tensor.Dense) ([]int, error) {
	if len(t.Shape()) != 1 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %s input must be 1-dim, not %d", op, name, len(t.Shape()))
	}
	v, err := tensorx.AppendInts(dst, t)
	if err != nil {
		return nil, registry.NamedInputErrorf(registry.ErrDtype, op, name, "%s: %s must be an int32 or int64 vector, got dtype %v", op, name, t.Dtype())
	}
	return v, nil
}

// convNumel returns the element count of shape, or an ErrShape error naming
// the op when the shape is too large to allocate. shape does not escape
// (the message holds a copy), so callers may pass a stack array.
func convNumel(op string, shape []int) (int, error) {
	n, err := tensorx.Numel(shape)
	if err != nil {
		return 0, registry.Errorf(registry.ErrShape, "%s: output shape %v: %v", op, slices.Clone(shape), err)
	}
	return n, nil
}
