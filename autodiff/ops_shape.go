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

var (
	shpOpReshape   = ref("Reshape")
	shpOpTranspose = ref("Transpose")
	shpOpFill      = ref("Fill")
	shpOpSum       = ref("Sum")
	shpOpMean      = ref("Mean")
	shpOpMatMul    = ref("MatMul")
	shpOpBiasAdd   = ref("BiasAdd")
)

// shpTapeOf returns the tape of the first argument that has one, or nil.
func shpTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// shpInts puts ints on t as an int32 vector for input at of op r, or
// records an error for a value that does not fit in int32.
func shpInts(t *Tape, r *opRef, at int, ints []int) (Value, bool) {
	for _, v := range ints {
		if v < math.MinInt32 || v > math.MaxInt32 {
			t.fail(r.name, at, "forward", registry.Errorf(registry.ErrInvalidArgument,
				"%s: %d does not fit the int32 %s input", r.name, v, r.def().Inputs[at].Name))
			return t.poison(), false
		}
	}
	return t.Ints(ints...), true
}

// shpApply applies the single-output op r to x and, if ints is non-nil,
// an int32 vector made of ints as the second input.
func shpApply(r *opRef, attrs any, x Value, ints []int) Value {
	t := shpTapeOf(x)
	if t == nil {
		return Value{}
	}
	var buf [2]Value
	in := append(buf[:0], x)
	if ints != nil {
		iv, ok := shpInts(t, r, 1, ints)
		if !ok {
			return iv
		}
		in = append(in, iv)
	}
	return t.applyDef(r.def(), attrs, in, !t.noGrad, "forward", nil)[0]
}

// Reshape returns a copy of x with the given shape; one entry may be -1,
// and is then inferred from x's element count (TensorFlow's Reshape).
// Without a shape the result is a scalar (x must have one element).
func Reshape(x Value, shape ...int) Value {
	if shape == nil {
		shape = []int{} // a scalar
	}
	return shpApply(shpOpReshape, nil, x, shape)
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
	return shpApply(shpOpTranspose, nil, x, perm)
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
	dims, ok := shpInts(t, shpOpFill, 0, shape)
	if !ok {
		return dims
	}
	return t.applyDef(shpOpFill.def(), nil, []Value{dims, t.Scalar(dt, v)}, !t.noGrad, "forward", nil)[0]
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
	return shpApply(shpOpSum, forward.SumAttrs{KeepDims: keepDims}, x, shpAxes(x, axes))
}

// Mean returns the mean of x over axes, with the conventions of Sum. The
// mean over an empty axis is NaN.
func Mean(x Value, axes []int, keepDims bool) Value {
	return shpApply(shpOpMean, forward.SumAttrs{KeepDims: keepDims}, x, shpAxes(x, axes))
}

// MatMul returns the matrix product op(a)·op(b) of rank-2 a and b, op
// transposing when attrs.TransposeA or attrs.TransposeB is set.
func MatMul(a, b Value, attrs forward.MatMulAttrs) Value {
	t := shpTapeOf(a, b)
	if t == nil {
		return Value{}
	}
	return t.applyDef(shpOpMatMul.def(), attrs, []Value{a, b}, !t.noGrad, "forward", nil)[0]
}

// BiasAdd returns x + b with the rank-1 bias b added along the channel
// dimension of x: the last one for dataFormat "NHWC" (or ""), dimension 1
// for "NCHW".
func BiasAdd(x, b Value, dataFormat string) Value {
	t := shpTapeOf(x, b)
	if t == nil {
		return Value{}
	}
	return t.applyDef(shpOpBiasAdd.def(), forward.BiasAddAttrs{DataFormat: dataFormat}, []Value{x, b}, !t.noGrad, "forward", nil)[0]
}
