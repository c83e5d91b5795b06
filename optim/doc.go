// Package optim holds tapegrad's optimizers, learning-rate schedules and
// gradient clipping.
//
// Optimizers (SGD, Adam, AdamW, RMSProp) follow PyTorch's semantics,
// written out in each type's documentation: the same defaults, the same
// update formulas (weight decay, momentum and dampening, Nesterov, bias
// correction and eps placement, decoupled decay, centered RMSProp,
// AMSGrad) and the same per-parameter step counts. They work on float32
// and float64 parameters, in the parameter's dtype, on the backing slices,
// and allocate nothing per Step.
//
// A training step:
//
//	opt, err := optim.NewAdam(params, optim.AdamSettings{LR: 1e-3})
//	...
//	tape.Reset()
//	loss := model(tape)
//	if err := tape.Backward(loss); err != nil { ... }
//	if _, err := optim.ClipGradNorm(params, 1.0); err != nil { ... } // optional
//	if err := opt.Step(); err != nil { ... } // updates, MarkModified, zeroes the gradients
//
// Step skips parameters whose Trainable flag is false or whose Grad is nil.
// A NaN or infinite gradient (a loss that became NaN) is an error of
// ClipGradNorm and Step, ErrNonFinite, naming the parameter, and changes
// nothing: the weights do not become NaN. Skip the step with ZeroGrad,
// or find the op that made the NaN with autodiff.DetectAnomaly. A Step
// when no trainable parameter has a gradient is an error too
// (autodiff.ErrNoGradient): Backward was not called, or its loss reached
// other parameters.
//
// Learning rates come from a fixed value or a Schedule (Constant,
// StepDecay, Cosine, Warmup wrapping another schedule), evaluated at the
// optimizer's step count.
//
// State and LoadState save and restore an optimizer completely as named
// tensors and scalars (see State), which a checkpoint stores; training N
// steps equals training k, restoring, and training N−k, bit for bit.
package optim
