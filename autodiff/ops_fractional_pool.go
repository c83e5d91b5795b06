package autodiff

import (
	"github.com/tapegrad/tapegrad/backward"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the fractional pooling family (TensorFlow's
// FractionalAvgPool, FractionalAvgPoolGrad, FractionalMaxPool and
// FractionalMaxPoolGrad, and tapegrad's FractionalAvgPoolWithSequences;
// see forward.FractionalPoolAttrs and docs/spec/fractional_avg_pool.md). Each
// op runs on the tape of its first Value argument that has one; a zero
// Value or values of two tapes are an error on that tape. The pooling
// sequences are int64 vectors of cell boundaries.
//
// Random sequences: with attrs.Seed and attrs.Seed2 both 0 (and
// attrs.Deterministic false) every call draws fresh sequences from the
// tape's random source, so a tape created with Seed(s) replays the same
// sequences; non-zero seeds (attrs.Deterministic true) give TensorFlow's
// sequences for those seeds on every call.

// The attrs of the gradient and sequence ops, made once for each value
// of overlapping.
var (
	fpGrad        = registry.NewAttrs(forward.FractionalPoolGradAttrs{})
	fpGradOverlap = registry.NewAttrs(forward.FractionalPoolGradAttrs{Overlapping: true})
	fpSeq         = registry.NewAttrs(forward.FractionalPoolSeqAttrs{})
	fpSeqOverlap  = registry.NewAttrs(forward.FractionalPoolSeqAttrs{Overlapping: true})
)

// fpGradAttrs returns the attrs of FractionalAvgPoolGrad and
// FractionalMaxPoolGrad.
func fpGradAttrs(overlapping bool) registry.Attrs[forward.FractionalPoolGradAttrs] {
	if overlapping {
		return fpGradOverlap
	}
	return fpGrad
}

// fpPool applies FractionalAvgPool or FractionalMaxPool.
func fpPool(b func(registry.Emitter, registry.Attrs[forward.FractionalPoolAttrs], registry.Value) []registry.Value,
	x Value, attrs forward.FractionalPoolAttrs) (out, rowSeq, colSeq Value) {
	t := x.t
	if t == nil {
		return Value{}, Value{}, Value{}
	}
	o := b(t.Emitter(), registry.NewAttrs(attrs), t.box(x))
	return ValueOf(o[0]), ValueOf(o[1]), ValueOf(o[2])
}

// fpShape puts a shape on tape t as an int64 vector constant.
func fpShape(t *Tape, shape []int) Value {
	s := make([]int64, len(shape))
	for i, d := range shape {
		s[i] = int64(d)
	}
	d, err := tensorx.New([]int{len(s)}, s)
	if err != nil {
		t.fail(backward.OpFractionalAvgPoolGrad, 0, "forward", registry.Errorf(registry.ErrInvalidArgument, "%s: %v", backward.OpFractionalAvgPoolGrad, err))
		return t.poison()
	}
	return t.Constant(d)
}

// FractionalAvgPool applies TensorFlow's FractionalAvgPool to x [N,H,W,C]
// (float32, float64, int32 or int64; integer averages truncate): the
// average over a random grid of OH×OW cells, OH = floor(H/ratio[1]),
// OW = floor(W/ratio[2]). It returns the pooled output and the int64 row
// and column pooling sequences ([OH+1] and [OW+1] cell boundaries). The
// output is differentiable with respect to x (floating dtypes); the
// gradient uses the returned sequences.
func FractionalAvgPool(x Value, attrs forward.FractionalPoolAttrs) (out, rowSeq, colSeq Value) {
	return fpPool(forward.FractionalAvgPool, x, attrs)
}

// FractionalAvgPoolGrad applies TensorFlow's FractionalAvgPoolGrad: the
// gradient of FractionalAvgPool with respect to an input of shape
// origShape (4 values), given dy, the gradient of its output, and the
// pooling sequences the forward returned. Each dy value is spread
// uniformly over its cell. It is differentiable with respect to dy (beyond
// TensorFlow, which registers no gradient for it).
func FractionalAvgPoolGrad(origShape []int, dy, rowSeq, colSeq Value, overlapping bool) Value {
	t := tapeOf(dy, rowSeq, colSeq)
	if t == nil {
		return Value{}
	}
	if t.err != nil {
		return t.poison()
	}
	s := fpShape(t, origShape)
	return ValueOf(backward.FractionalAvgPoolGrad(t.Emitter(), fpGradAttrs(overlapping), t.box(s), t.box(dy), t.box(rowSeq), t.box(colSeq)))
}

// FractionalAvgPoolWithSequences averages x [N,H,W,C] over the cells of
// the given int64 pooling sequences (tapegrad's
// FractionalAvgPoolWithSequences op, beyond TensorFlow): the output is
// [N, len(rowSeq)−1, len(colSeq)−1, C]. With the sequences a
// FractionalAvgPool returned, it pools another tensor over the same grid.
// It is differentiable with respect to x.
func FractionalAvgPoolWithSequences(x, rowSeq, colSeq Value, overlapping bool) Value {
	t := tapeOf(x, rowSeq, colSeq)
	if t == nil {
		return Value{}
	}
	attrs := fpSeq
	if overlapping {
		attrs = fpSeqOverlap
	}
	return ValueOf(backward.FractionalAvgPoolWithSequences(t.Emitter(), attrs, t.box(x), t.box(rowSeq), t.box(colSeq)))
}

// FractionalMaxPool applies TensorFlow's FractionalMaxPool to x
// [N,H,W,C]: the maximum over a random grid of cells, with the same
// attributes and sequence generation as FractionalAvgPool. It returns the
// pooled output and the int64 row and column pooling sequences. The
// gradient goes to the first maximum of each cell in row-major order.
func FractionalMaxPool(x Value, attrs forward.FractionalPoolAttrs) (out, rowSeq, colSeq Value) {
	return fpPool(forward.FractionalMaxPool, x, attrs)
}

// FractionalMaxPoolGrad applies TensorFlow's FractionalMaxPoolGrad: the
// gradient of FractionalMaxPool with respect to its input origInput,
// given its output origOutput, dy (the gradient of the output) and the
// pooling sequences. Each dy value goes to its cell's first maximum. It is
// differentiable with respect to dy; origInput and origOutput get zero
// gradient.
func FractionalMaxPoolGrad(origInput, origOutput, dy, rowSeq, colSeq Value, overlapping bool) Value {
	t := tapeOf(origInput, origOutput, dy, rowSeq, colSeq)
	if t == nil {
		return Value{}
	}
	return ValueOf(backward.FractionalMaxPoolGrad(t.Emitter(), fpGradAttrs(overlapping),
		t.box(origInput), t.box(origOutput), t.box(dy), t.box(rowSeq), t.box(colSeq)))
}
