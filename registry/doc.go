// Package registry holds tapegrad's op definitions: every op type, under
// TensorFlow's own name, with its named inputs and outputs, its typed
// attributes (TensorFlow defaults and allowed values in struct tags), its
// forward kernels keyed by dtype, and exactly one gradient state: a gradient
// function built from registered ops, a zero gradient (TensorFlow's
// NotDifferentiable), or no gradient with a reason.
//
// Registration has two phases, as in TensorFlow: package forward registers
// ops and kernels, package backward attaches gradients. Users register their
// own ops through the same API; their op names carry a dot
// ("myproject.Swish") so they never collide with TensorFlow's names.
//
// The registry knows nothing of tapes. Gradient functions see the op's
// inputs and outputs as Values (shape and dtype, never data) and build the
// gradient by applying registered ops through an Emitter, which is what
// makes gradients of gradients work.
//
// # Attr structs
//
// An op's attributes are a Go struct (OpDef.Attrs holds its zero value),
// one exported field per attribute, described by struct tags:
//
//	tf:"name"        TensorFlow's attribute name (required on every
//	                 exported field; unexported fields are ignored)
//	default:"value"  TensorFlow's default, used when the field holds Go's
//	                 zero value; lists and numbers are written as JSON
//	                 ("[1,1,1,1]", "0.0001"), strings and dtypes bare
//	                 ("SAME", "float32")
//	allowed:"A,B,C"  the values a string field may take; anything else is
//	                 an ErrInvalidArgument error naming the op and the attr
//
// Field types: string, bool, int, int64, float32, float64, []int,
// []float32, []float64, []string, tensor.Dtype, and the pointers *bool,
// *int, *float32, *float64. For example:
//
//	type SwishAttrs struct {
//		Beta *float64 `tf:"beta" default:"1"` // nil: 1
//		Mode string   `tf:"mode" default:"exact" allowed:"exact,fast"`
//	}
//
// Attrs are normalised (NormalizeAttrs, NewAttrs) before a kernel or a
// gradient function sees them: every field with a default that holds Go's
// zero value is replaced by the default, and allowed values are checked.
// So a kernel always sees complete attrs, and a struct literal only names
// what differs from TensorFlow's defaults.
//
// The trap: a field with a default cannot be set to Go's zero value. With
// Beta float64 `default:"1"`, the value 0 means "unset" and becomes 1; a
// bool defaulting to true cannot be false; an int defaulting to 8 cannot be
// 0. Wherever zero is a legal value that differs from the default, make the
// field a pointer: nil means the default, and a pointer to any value, zero
// included, sets it (Ptr makes one: SwishAttrs{Beta: registry.Ptr(0.0)}).
// FusedBatchNormV3's epsilon and is_training are such fields. Fields whose
// zero value is never legal (a stride, a non-empty padding) can stay plain.
// Attrs parsed from TensorFlow's names (ParseAttrsExact, used for golden
// cases) keep an explicit zero even in a plain field.
//
// # Kernels
//
// A kernel receives contiguous inputs of the dtype it was registered for,
// allocates its outputs with KernelCtx.Output or Zeros, reads and writes
// elements through Elems, and returns kc.Results(outs...), which costs no
// allocation. Bad input is an error (Errorf, or InputErrorf naming the
// input), never a panic.
//
// # Registered ops
//
// The list of the ops tapegrad registers, with their inputs, outputs,
// attr types and gradients, follows (generated from the registry by
// cmd/genops into ops_doc_gen.go).
package registry
