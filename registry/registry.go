package registry

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"sync"

	"gorgonia.org/tensor"
)

// Arg names one input or output of an op.
type Arg struct {
	// Name is TensorFlow's name for the argument ("input", "filter", ...).
	Name string
	// Variadic marks the input that takes a list of one or more tensors:
	// the last input of AddN, the first of ConcatV2 (followed by axis). An
	// op has at most one variadic input.
	Variadic bool
}

// Sample is one generated configuration of an op for gradient sweeps
// (cmd/gradcheck and the tests share the generators). Inputs are float64
// for floating inputs.
type Sample struct {
	// Name describes the configuration ("nhwc-same-s2").
	Name string
	// Attrs is the op's attr struct (nil for ops without attrs).
	Attrs any
	// Inputs are the op's inputs.
	Inputs []*tensor.Dense
	// Wrt lists the inputs to check; nil means every floating input.
	Wrt []int
	// Outputs lists the outputs to check; nil means every floating output.
	Outputs []int
	// NoSecondOrder, when non-empty, is the reason the second-order check
	// does not apply to this sample.
	NoSecondOrder string
	// Atol and Rtol override the check's tolerances when non-zero.
	Atol, Rtol float64
}

// GradKind is the gradient state of an op.
type GradKind int

// The gradient states an op can be in.
const (
	// GradUnset: no gradient state was declared; registry.Check fails.
	GradUnset GradKind = iota
	// GradDefined: the op has a gradient function.
	GradDefined
	// GradZero: the op is not differentiable and its inputs get no
	// gradient through it (TensorFlow's NotDifferentiable).
	GradZero
	// GradNone: the op has no gradient; needing one through it is an error.
	GradNone
)

// OpDef defines an op.
type OpDef struct {
	// Name is the op type: TensorFlow's name, or "project.Name" for ops
	// TensorFlow lacks ("tapegrad.X" for tapegrad's own).
	Name string
	// Doc is a one-line description.
	Doc string
	// Inputs and Outputs name the op's arguments in TensorFlow's order.
	Inputs, Outputs []Arg
	// Attrs is the zero value of the op's attr struct type, or nil if the
	// op has no attrs. Its fields' tags give TensorFlow's names, defaults
	// and allowed values; see "Attr structs" in the package documentation
	// for the grammar and for the zero-value rule (use pointer fields
	// where zero is a legal value that differs from the default).
	Attrs any
	// TypeInput is the index of the input whose dtype selects the kernel.
	TypeInput int
	// Kernels maps each supported dtype to its forward kernel.
	Kernels map[tensor.Dtype]Kernel
	// Samples, if set, generates configurations for gradient sweeps.
	Samples func(r *rand.Rand) []Sample

	attrSpec *attrSpec
	mu       sync.RWMutex
	gradKind GradKind
	grad     GradFunc
	noGrad   string
	pkg      string // the registering package (Package)
}

// GradKind returns the op's gradient state.
func (d *OpDef) GradKind() GradKind {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.gradKind
}

// Gradient returns the op's gradient function (nil unless GradDefined).
func (d *OpDef) Gradient() GradFunc {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.grad
}

// NoGradientReason returns the reason given for GradNone.
func (d *OpDef) NoGradientReason() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.noGrad
}

// Dtypes returns the dtypes the op has kernels for, sorted by name.
func (d *OpDef) Dtypes() []tensor.Dtype {
	out := make([]tensor.Dtype, 0, len(d.Kernels))
	for dt := range d.Kernels {
		out = append(out, dt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Variadic reports whether one of the op's inputs takes a list of tensors.
func (d *OpDef) Variadic() bool { return d.VariadicIndex() >= 0 }

// VariadicIndex returns the index in Inputs of the op's variadic input, or
// -1 if it has none. Applied to n tensors, the op's variadic input takes
// n-len(Inputs)+1 of them, starting at that index.
func (d *OpDef) VariadicIndex() int {
	for i, a := range d.Inputs {
		if a.Variadic {
			return i
		}
	}
	return -1
}

var (
	regMu sync.RWMutex
	ops   = map[string]*OpDef{}
)

// Register adds an op definition. It fails for an empty or duplicate name,
// an op without kernels, a TypeInput out of range, or a malformed attr
// struct.
func Register(d *OpDef) error {
	if d == nil || d.Name == "" {
		return Errorf(ErrInvalidArgument, "registry: op definition without a name")
	}
	if strings.ContainsAny(d.Name, " \t\n/") {
		return Errorf(ErrInvalidArgument, "registry: op name %q contains white space or '/'", d.Name)
	}
	if len(d.Kernels) == 0 {
		return Errorf(ErrInvalidArgument, "registry: op %s has no kernels", d.Name)
	}
	for dt, k := range d.Kernels {
		if k == nil {
			return Errorf(ErrInvalidArgument, "registry: op %s has a nil kernel for %v", d.Name, dt)
		}
	}
	if len(d.Inputs) > 0 && (d.TypeInput < 0 || d.TypeInput >= len(d.Inputs)) {
		return Errorf(ErrInvalidArgument, "registry: op %s: TypeInput %d out of range", d.Name, d.TypeInput)
	}
	if len(d.Outputs) == 0 {
		return Errorf(ErrInvalidArgument, "registry: op %s has no outputs", d.Name)
	}
	if v := d.VariadicIndex(); v >= 0 {
		for _, a := range d.Inputs[v+1:] {
			if a.Variadic {
				return Errorf(ErrInvalidArgument, "registry: op %s: only one input may be variadic", d.Name)
			}
		}
	}
	if d.Attrs != nil {
		spec, err := specFor(reflect.TypeOf(d.Attrs))
		if err != nil {
			return Errorf(ErrInvalidArgument, "registry: op %s: %v", d.Name, err)
		}
		d.attrSpec = spec
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := ops[d.Name]; dup {
		return Errorf(ErrInvalidArgument, "registry: op %s is already registered", d.Name)
	}
	d.pkg = callerPackage()
	ops[d.Name] = d
	return nil
}

// MustRegister is Register for package initialisation: it panics on error,
// which is a programming error in the registering package.
func MustRegister(d *OpDef) {
	if err := Register(d); err != nil {
		panic(err)
	}
}

// Lookup returns the definition of the op named name.
func Lookup(name string) (*OpDef, error) {
	regMu.RLock()
	d, ok := ops[name]
	regMu.RUnlock()
	if !ok {
		return nil, Errorf(ErrNotFound, "op %q is not registered", name)
	}
	return d, nil
}

// List returns every registered op, sorted by name.
func List() []*OpDef {
	regMu.RLock()
	out := make([]*OpDef, 0, len(ops))
	for _, d := range ops {
		out = append(out, d)
	}
	regMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func setGrad(name string, kind GradKind, fn GradFunc, reason string) error {
	d, err := Lookup(name)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gradKind != GradUnset {
		return Errorf(ErrInvalidArgument, "registry: op %s already has a gradient state", name)
	}
	d.gradKind, d.grad, d.noGrad = kind, fn, reason
	return nil
}

// SetGradient attaches the gradient function of a registered op.
func SetGradient(name string, fn GradFunc) error {
	if fn == nil {
		return Errorf(ErrInvalidArgument, "registry: nil gradient function for %s", name)
	}
	return setGrad(name, GradDefined, fn, "")
}

// NotDifferentiable declares that the op passes no gradient to its inputs
// (TensorFlow's ops.NotDifferentiable): its inputs get zero gradient.
func NotDifferentiable(name string) error {
	return setGrad(name, GradZero, nil, "")
}

// NoGradient declares that the op has no gradient: a backward pass that
// needs one through it fails with ErrNoGradient and the reason.
func NoGradient(name, reason string) error {
	if reason == "" {
		return Errorf(ErrInvalidArgument, "registry: NoGradient(%s) needs a reason", name)
	}
	return setGrad(name, GradNone, nil, reason)
}

// MustSetGradient, MustNotDifferentiable and MustNoGradient are the
// panicking forms for package initialisation.
func MustSetGradient(name string, fn GradFunc) {
	if err := SetGradient(name, fn); err != nil {
		panic(err)
	}
}

// MustNotDifferentiable is NotDifferentiable that panics on error.
func MustNotDifferentiable(name string) {
	if err := NotDifferentiable(name); err != nil {
		panic(err)
	}
}

// MustNoGradient is NoGradient that panics on error.
func MustNoGradient(name, reason string) {
	if err := NoGradient(name, reason); err != nil {
		panic(err)
	}
}

// Check reports every registered op that has no gradient state.
func Check() error {
	var missing []string
	for _, d := range List() {
		if d.GradKind() == GradUnset {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return Errorf(ErrInvalidArgument, "registry: ops without a gradient state: %s", strings.Join(missing, ", "))
	}
	return nil
}

// Run checks the inputs and attrs against the op's definition, runs the
// kernel for the inputs' dtype and checks its outputs. An input that is a
// gorgonia view (sliced, lazily transposed: IsMaterializable or
// RequiresIterator) is first copied into a contiguous tensor, so kernels
// always see row-major data; the caller's tensors are not changed. A
// masked input is refused with an ErrInvalidArgument error naming the op
// and the input. A kernel panic is turned into an ErrInternal error. The
// returned slice is the caller's.
func Run(d *OpDef, kc *KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a, err := d.NormalizeAttrs(attrs)
	if err != nil {
		return nil, err
	}
	out, err := run(d, kc, a, in)
	if err != nil {
		return nil, err
	}
	return append([]*tensor.Dense(nil), out...), nil
}

func run(d *OpDef, kc *KernelCtx, a any, in []*tensor.Dense) (out []*tensor.Dense, err error) {
	if d.Variadic() {
		if len(in) < len(d.Inputs) {
			return nil, Errorf(ErrInvalidArgument, "%s: expected at least %d inputs, got %d", d.Name, len(d.Inputs), len(in))
		}
	} else if len(in) != len(d.Inputs) {
		return nil, Errorf(ErrInvalidArgument, "%s: expected %d inputs, got %d", d.Name, len(d.Inputs), len(in))
	}
	for i, t := range in {
		if t == nil {
			return nil, Errorf(ErrInvalidArgument, "%s: input %d is nil", d.Name, i)
		}
	}
	in, err = contiguousInputs(d, in)
	if err != nil {
		return nil, err
	}
	var dt tensor.Dtype
	if len(in) > 0 {
		dt = in[d.TypeInput].Dtype()
	}
	k, ok := d.Kernels[dt]
	if !ok {
		if len(in) == 0 && len(d.Kernels) == 1 {
			for _, only := range d.Kernels {
				k = only
			}
		} else {
			return nil, InputErrorf(ErrDtype, d.TypeInput, "%s: no kernel for dtype %v (supported: %v)", d.Name, dt, d.Dtypes())
		}
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, Errorf(ErrInternal, "%s: kernel panicked: %v", d.Name, r)
		}
		kc.releaseScratch()
	}()
	out, err = k(kc, a, in)
	if err != nil {
		return nil, err
	}
	if len(out) != len(d.Outputs) {
		return nil, Errorf(ErrInternal, "%s: kernel returned %d outputs, want %d", d.Name, len(out), len(d.Outputs))
	}
	for i, t := range out {
		if t == nil {
			return nil, Errorf(ErrInternal, "%s: kernel returned nil output %d", d.Name, i)
		}
	}
	return out, nil
}

// Describe returns a one-line signature of the op, for tools.
func (d *OpDef) Describe() string {
	var b strings.Builder
	b.WriteString(d.Name)
	b.WriteByte('(')
	for i, a := range d.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Name)
		if a.Variadic {
			b.WriteString("...")
		}
	}
	b.WriteString(") -> (")
	for i, a := range d.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Name)
	}
	b.WriteByte(')')
	if d.attrSpec != nil {
		fmt.Fprintf(&b, " attrs %s", d.attrSpec.names())
	}
	return b.String()
}

// RunNormalized is Run for attrs already normalised by NormalizeAttrs,
// without Run's copy of the result: the returned slice may be kc's (see
// KernelCtx.Results), valid until the next kernel runs on kc.
func RunNormalized(d *OpDef, kc *KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return run(d, kc, attrs, in)
}

// contiguousInputs returns in itself when every input is laid out row-major
// in its own backing array, as kernels require, and otherwise a new slice
// in which each view (sliced or lazily transposed *tensor.Dense) is
// replaced by a contiguous copy. Masked inputs are refused: kernels ignore
// masks. (The tape copies outside tensors when they enter it, so on the
// tape's path this is a check only; registry may not import
// internal/tensorx, hence this small copy of its Contiguous.)
func contiguousInputs(d *OpDef, in []*tensor.Dense) ([]*tensor.Dense, error) {
	var cp []*tensor.Dense
	for i, t := range in {
		if !needsCopy(t) {
			continue
		}
		if len(t.Mask()) > 0 {
			return nil, Errorf(ErrInvalidArgument, "%s: input %d (%s) is a masked tensor; masks are not supported", d.Name, i, d.inputName(i, len(in)))
		}
		c, err := materialize(t)
		if err != nil {
			return nil, Errorf(ErrInvalidArgument, "%s: input %d (%s) is a non-contiguous view that cannot be copied: %v", d.Name, i, d.inputName(i, len(in)), err)
		}
		if cp == nil {
			cp = append([]*tensor.Dense(nil), in...)
		}
		cp[i] = c
	}
	if cp == nil {
		return in, nil
	}
	return cp, nil
}

// needsCopy reports whether kernels cannot read t's backing array as its
// row-major data: a view (sliced or lazily transposed), a masked tensor or
// a non-contiguous data order. (gorgonia's RequiresIterator also holds for
// every tensor with an empty backing array, which has nothing to read.)
func needsCopy(t *tensor.Dense) bool {
	if t.IsMaterializable() || len(t.Mask()) > 0 {
		return true
	}
	return t.DataSize() > 0 && t.RequiresIterator()
}

// materialize copies the view t into a new contiguous *tensor.Dense,
// turning a gorgonia panic into an error.
func materialize(t *tensor.Dense) (c *tensor.Dense, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("%v", r)
		}
	}()
	m, ok := t.Materialize().(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("materialised as %T", t.Materialize())
	}
	if needsCopy(m) {
		return nil, fmt.Errorf("still a view after copying")
	}
	return m, nil
}

// inputName returns the name of input i of n (a variadic input names all
// the tensors of its list).
func (d *OpDef) inputName(i, n int) string {
	if len(d.Inputs) == 0 {
		return "?"
	}
	if v := d.VariadicIndex(); v >= 0 && i >= v {
		extra := n - len(d.Inputs)
		if i <= v+extra {
			return d.Inputs[v].Name
		}
		i -= extra
	}
	return d.Inputs[min(i, len(d.Inputs)-1)].Name
}
