// Package gradcheck checks gradients numerically, in the spirit of
// PyTorch's gradcheck and gradgradcheck. Use it in your own `go test` to
// verify the gradient of a custom op or of any function built from ops:
//
//	f := func(t *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
//		return []autodiff.Value{myproject.Swish(in[0], 1)} // see examples/customop
//	}
//	if err := gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{}); err != nil {
//		t.Fatal(err)
//	}
//
// # What is compared
//
// Check draws a random upstream gradient u_i for every checked output i
// (seeded, normally distributed, never all ones, so a gradient that
// ignores or mishandles its upstream gradient is caught) and compares, for
// every pair (output i, input j), the vector-Jacobian product u_iᵀ·J_ij
// computed by the tape (Tape.Grad with upstream u_i) with the same product
// of the numerical Jacobian, obtained by central differences in float64
// (f(x+eps·e_k) − f(x−eps·e_k)) / 2eps for every element k of input j.
// An element passes if
//
//	|analytical − numerical| <= Atol + Rtol·|numerical|
//
// When more than one output is checked, the gradient of all of them
// together (one backward pass with every upstream gradient) is compared
// with the sum of the per-output products too, which exercises gradient
// functions receiving several upstream gradients at once.
//
// The full mode costs two evaluations of f per input element. For large
// inputs set Options.Fast: every input j is then perturbed along one
// random unit direction v_j, and the scalars u_iᵀ·J_ij·v_j are compared
// (two evaluations per input).
//
// Before comparing, f is evaluated twice at the same point and the tape's
// gradients are computed twice; results that differ by more than
// Options.NondetTol (0: they must be identical) are reported as
// nondeterminism.
//
// CheckSecondOrder (gradgradcheck) applies Check to the function
// (inputs, u) ↦ ∂(Σ_i u_i·f_i)/∂inputs, computed with
// GradOpts{CreateGraph: true}, with respect to both the inputs and the
// upstream gradients u, exactly as PyTorch's gradgradcheck does. It
// catches wrong gradients of gradients that a first-order check cannot see.
//
// CheckSurrogate compares the tape's gradients with a user-supplied rule
// instead of finite differences, for straight-through estimators and
// other surrogate gradients that differ from the function's true
// derivative by design. CheckSurrogateFunc compares them with the finite
// differences of another function (the clip function whose derivative a
// fake-quantisation straight-through gradient is).
//
// Op, CheckSample and OpSamples connect the checks to the op registry:
// every op's Samples generator feeds the sweep of cmd/gradcheck and of
// `go test ./backward`.
//
// # Dtypes
//
// Inputs and outputs of integer or bool dtype are not differentiable: they
// are passed through unchanged and skipped. Finite differences need
// float64; checking float32 inputs or outputs is an error unless
// Options.AllowFloat32 is set, in which case the defaults are looser (see
// Float32Eps, Float32Atol, Float32Rtol).
//
// # Failures
//
// Every function returns an error rather than panicking: tape errors (an
// unregistered op, a bad shape, a gradient that fails) are returned as
// they are, and a failed comparison is a *Failure naming the order, the
// output and input, the worst element's multi-index, the numerical and
// analytical values and the tolerance.
package gradcheck
