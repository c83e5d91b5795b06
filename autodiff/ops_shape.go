package autodiff

import (
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the shape, reduction and linear-algebra ops
// (TensorFlow's Reshape, Transpose, Fill, Sum, Mean, MatMul and BiasAdd).
// Integer arguments (shapes, permutations, axes) become int32 constants on
// the tape. Each op runs on the tape of its first Value argument that has
// one; a zero Value or values of two tapes are an error on that tape.

// shpInts puts ints on t as an int32 vector for input at of op, or
// records an error for a value that does not fit in int32.
func shpInts(t *Tape, op string, at int, ints []int) (Value, bool) {
	for _, v := range ints {
		if v < math.MinInt32 || v > math.MaxInt32 {
			t.fail(op, at, "forward", registry.Errorf(registry.ErrInvalidArgument,
				"%s: %d does not fit the int32 %s input", op, v, inputName(op, at)))
			return t.poison(), false
		}
	}
	return t.Ints(ints...), true
}

// shpApply applies a builder taking x and an int32 vector made of ints.
func shpApply(op string, b binaryBuilder, x Value, ints []int) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	iv, ok := shpInts(t, op, 1, ints)
	if !ok {
		return iv
	}
	return ValueOf(b(t.Emitter(), t.box(x), t.box(iv)))
}

// shpReduce applies Sum or Mean.
func shpReduce(op string, b func(registry.Emitter, registry.Attrs[forward.SumAttrs], registry.Value, registry.Value) registry.Value, x Value, axes []int, keepDims bool) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	iv, ok := shpInts(t, op, 1, shpAxes(x, axes))
	if !ok {
		return iv
	}
	attrs := shpDrop
	if keepDims {
		attrs = shpKeep
	}
	return ValueOf(b(t.Emitter(), attrs, t.box(x), t.box(iv)))
}

// Sum's and Mean's attrs, made once.
var (
	shpKeep = registry.NewAttrs(forward.SumAttrs{KeepDims: true})
	shpDrop = registry.NewAttrs(forward.SumAttrs{})
)

// Reshape returns a copy of x with the given shape; one entry may be -1,
// and is then inferred from x's element count (TensorFlow's Reshape).
// Without a shape the result is a scalar (x must have one element).
func Reshape(x Value, shape ...int) Value {
	if shape == nil {
		shape = []int{} // a scalar
	}
	return shpApply(forward.OpReshape, forward.Reshape, x, shape)
}

// Transpose permutes the dimensions of x: the result's dimension i is x's
// dimension perm[i]. Without perm the dimensions are reversed, as
// tf.transpose does.
func Transpose(x Value, perm ...int) Value {
	if len(perm) == 0 {
		r := len(x.Shape())
		perm = make([]int, r)
		for i := range perm {
			perm[i] = r - 1 - i
		}
	}
	return shpApply(forward.OpTranspose, forward.Transpose, x, perm)
}

// Fill puts on t a tensor of dtype dt and the given shape with every
// element equal to v (TensorFlow's Fill with a constant value). The result
// is a constant: no gradient flows from it.
func Fill(t *Tape, dt tensor.Dtype, shape []int, v float64) Value {
	if t == nil {
		return Value{}
	}
	if shape == nil {
		shape = []int{}
	}
	dims, ok := shpInts(t, forward.OpFill, 0, shape)
	if !ok {
		return dims
	}
	return ValueOf(forward.Fill(t.Emitter(), t.box(dims), t.box(t.Scalar(dt, v))))
}

// shpAxes returns the axes of a reduction: every axis of x for nil.
func shpAxes(x Value, axes []int) []int {
	if axes != nil {
		return axes
	}
	all := make([]int, len(x.Shape()))
	for i := range all {
		all[i] = i
	}
	return all
}

// Sum returns the sum of x over axes (negative axes count from the end;
// duplicates are an error). nil axes reduce every axis, as
// tf.reduce_sum(axis=None); an empty, non-nil list reduces none. With
// keepDims the reduced axes stay, with length 1.
func Sum(x Value, axes []int, keepDims bool) Value {
	return shpReduce(forward.OpSum, forward.Sum, x, axes, keepDims)
}

// Mean returns the mean of x over axes, with the conventions of Sum. The
// mean over an empty axis is NaN.
func Mean(x Value, axes []int, keepDims bool) Value {
	return shpReduce(forward.OpMean, forward.Mean, x, axes, keepDims)
}

// MatMul returns the matrix product op(a)·op(b) of rank-2 a and b, op
// transposing when attrs.TransposeA or attrs.TransposeB is set.
func MatMul(a, b Value, attrs forward.MatMulAttrs) Value {
	t := tapeOf(a, b)
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.MatMul(t.Emitter(), registry.NewAttrs(attrs), t.box(a), t.box(b)))
}

// BiasAdd returns x + b with the rank-1 bias b added along the channel
// dimension of x: the last one for dataFormat "NHWC" (or ""), dimension 1
// for "NCHW".
func BiasAdd(x, b Value, dataFormat string) Value {
	t := tapeOf(x, b)
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.BiasAdd(t.Emitter(), registry.NewAttrs(forward.BiasAddAttrs{DataFormat: dataFormat}), t.box(x), t.box(b)))
}
