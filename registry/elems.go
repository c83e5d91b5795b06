package registry

import (
	"strconv"

	"gorgonia.org/tensor"
)

// Elems returns the elements of d, a contiguous tensor of dtype T (every
// kernel input and output is), as its backing slice in row-major order:
// what a kernel reads its inputs from and writes its outputs into. It
// works for every shape, scalars and empty tensors included (unlike
// gorgonia's Dense.Data, which returns a bare value for a scalar).
//
// A kernel is only given inputs of the dtype it was registered for, so a
// mismatch is a bug in the kernel: Elems panics, and Run turns the panic
// into an ErrInternal error naming the op.
func Elems[T Elem](d *tensor.Dense) []T {
	s, err := sliceOf[T](d)
	if err != nil {
		panic(err)
	}
	return s
}

// Ptr returns a pointer to v, for the pointer fields of attr structs where
// nil means TensorFlow's default and a pointer sets any value, zero
// included (see "Attr structs" in the package documentation):
// forward.FusedBatchNormAttrs{IsTraining: registry.Ptr(false)}.
func Ptr[T any](v T) *T { return &v }

// String returns the gradient state's name ("GradDefined").
func (k GradKind) String() string {
	switch k {
	case GradUnset:
		return "GradUnset"
	case GradDefined:
		return "GradDefined"
	case GradZero:
		return "GradZero"
	case GradNone:
		return "GradNone"
	}
	return "GradKind(" + strconv.Itoa(int(k)) + ")"
}

// String returns the op's one-line signature (Describe).
func (d *OpDef) String() string { return d.Describe() }
