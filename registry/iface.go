package registry

import (
	"math/rand"

	"gorgonia.org/tensor"
)

// Value is what gradient code sees of a tensor on a tape: its shape and
// dtype, never its data, so a gradient cannot bypass the tape.
type Value interface {
	Shape() tensor.Shape
	Dtype() tensor.Dtype
}

// Node is one recorded op application, as seen by a gradient function.
type Node interface {
	// Op returns the op's definition.
	Op() *OpDef
	// Attrs returns the op's normalised attributes (defaults filled in).
	Attrs() any
	// Inputs returns the op's inputs in TensorFlow's declared order.
	Inputs() []Value
	// Outputs returns the op's outputs in TensorFlow's declared order.
	Outputs() []Value
	// NeedsGrad reports whether the gradient with respect to input i is
	// needed by the current backward pass; a gradient function may return
	// nil for inputs that are not.
	NeedsGrad(i int) bool
}

// Emitter applies ops on behalf of gradient functions. The tape implements
// it: when the backward pass is recorded (create-graph), the applied ops go
// on the tape, so their own gradients can be taken.
//
// Errors are sticky: after the first failure Apply does no work and returns
// placeholder values with the right count; the error is reported by Err and
// by the backward pass.
type Emitter interface {
	// Apply runs the registered op named op on in and returns its outputs.
	Apply(op string, attrs any, in ...Value) []Value
	// Const makes a constant (no gradient) holding a copy of t.
	Const(t *tensor.Dense) Value
	// Scalar makes a constant scalar (shape []) of dtype dt.
	Scalar(dt tensor.Dtype, v float64) Value
	// Ints makes a constant int32 vector, as used for shape and axis inputs.
	Ints(v ...int) Value
	// Values returns a slice of n nil Values for a gradient function's
	// result or an op's argument list, without a heap allocation of its
	// own (the tape hands out parts of larger blocks). The slice is the
	// caller's: the emitter never writes to it again.
	Values(n int) []Value
	// Err returns the first error of the emitter, or nil.
	Err() error
}

// GradFunc computes the gradients of an op's inputs from the upstream
// gradients dy (one per output; dy[i] == nil means no gradient flows into
// output i, i.e. zeros). It returns one gradient per input, nil where the
// input gets none (integer inputs, or inputs for which NeedsGrad is false).
type GradFunc func(e Emitter, n Node, dy []Value) ([]Value, error)

// Kernel is an op's forward computation for one dtype. It receives the
// normalised attrs (the op's attr struct type, defaults filled in) and
// contiguous inputs, and returns freshly allocated outputs that never alias
// the inputs. It reports bad input as an error, never a panic.
type Kernel func(kc *KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error)

// Allocator hands out tensor buffers. The tape's allocator recycles them;
// buffers are not zeroed unless asked. Alloc must not retain shape: the
// KernelCtx passes a buffer it reuses, so kernels' shape arguments never
// escape to the heap.
type Allocator interface {
	Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error)
	// Release returns a scratch buffer the kernel no longer needs.
	Release(d *tensor.Dense)
}

// KernelCtx is what a kernel gets from its caller: an allocator for outputs
// and scratch, a thread count, and a seeded random source.
type KernelCtx struct {
	// Alloc provides buffers; nil means fresh heap memory.
	Alloc Allocator
	// Threads is the number of goroutines a kernel may use (at least 1).
	Threads int
	// Rand is the caller's seeded random source, or nil if it has none.
	Rand    *rand.Rand
	scratch []*tensor.Dense
	shape   []int           // the shape passed to Alloc, reused
	results []*tensor.Dense // Results' slice, reused
}

// Output returns an uninitialised tensor for a kernel's output.
func (c *KernelCtx) Output(dt tensor.Dtype, shape ...int) (*tensor.Dense, error) {
	return c.alloc(dt, shape, false)
}

// Zeros returns a zero-filled tensor for a kernel's output.
func (c *KernelCtx) Zeros(dt tensor.Dtype, shape ...int) (*tensor.Dense, error) {
	return c.alloc(dt, shape, true)
}

func (c *KernelCtx) alloc(dt tensor.Dtype, shape []int, zero bool) (*tensor.Dense, error) {
	if c == nil || c.Alloc == nil {
		return zeros(dt, shape)
	}
	// A copy: shape itself, often a kernel's variadic argument list, would
	// escape through the interface call and cost an allocation per output.
	c.shape = append(c.shape[:0], shape...)
	return c.Alloc.Alloc(dt, c.shape, zero)
}

// Results returns outs as a kernel's result slice. With an allocator the
// slice is c's own, reused by the next kernel that runs on c: callers of
// RunNormalized (the tape) take the outputs out at once, and Run returns a
// copy. Kernels return kc.Results(out) rather than a slice literal, which
// would cost an allocation per op.
func (c *KernelCtx) Results(outs ...*tensor.Dense) []*tensor.Dense {
	if c == nil || c.Alloc == nil {
		return append([]*tensor.Dense(nil), outs...)
	}
	clear(c.results)
	c.results = append(c.results[:0], outs...)
	return c.results
}

// NumThreads returns the kernel's thread budget, at least 1.
func (c *KernelCtx) NumThreads() int {
	if c == nil || c.Threads < 1 {
		return 1
	}
	return c.Threads
}

// Scratch returns a scratch slice of n elements of type T, valid until the
// kernel returns; its contents are unspecified unless zeroed is true.
func Scratch[T Elem](c *KernelCtx, n int, zeroed bool) ([]T, error) {
	d, err := c.alloc(dtypeOf[T](), []int{n}, zeroed) // the shape stays on the stack
	if err != nil {
		return nil, err
	}
	if c != nil && c.Alloc != nil {
		c.scratch = append(c.scratch, d)
	}
	return sliceOf[T](d)
}

// releaseScratch gives the kernel's scratch buffers back to the allocator.
func (c *KernelCtx) releaseScratch() {
	if c == nil {
		return
	}
	for i, d := range c.scratch {
		c.Alloc.Release(d)
		c.scratch[i] = nil
	}
	c.scratch = c.scratch[:0]
}
