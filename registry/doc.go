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
package registry
