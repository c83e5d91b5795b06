package optim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Optimizer updates parameters from their accumulated gradients.
type Optimizer interface {
	// Step applies one update to every trainable parameter that has a
	// gradient (Trainable true, Grad non-nil), calls its MarkModified, then
	// zeroes the gradients of all the optimizer's parameters. It validates
	// everything before changing anything: on error no parameter, gradient
	// or state has changed. A gradient holding NaN or ±Inf is an error
	// (ErrNonFinite), and so is a Step when no trainable parameter has a
	// gradient (autodiff.ErrNoGradient: Backward was not called, or its
	// loss reached none of these parameters).
	Step() error
	// ZeroGrad zeroes the gradients of all the optimizer's parameters.
	ZeroGrad()
	// Params returns the optimized parameters, in the order given.
	Params() []*autodiff.Param
	// Steps returns the number of successful Step calls (restored by
	// LoadState); the schedule is evaluated at this count.
	Steps() int
	// LR returns the learning rate the next Step will use.
	LR() float64
	// State returns a deep copy of the optimizer's state.
	State() (*State, error)
	// LoadState replaces the optimizer's state by a copy of s, after
	// checking it completely (see State).
	LoadState(s *State) error
	// StateDict is State as its maps (the tensors and the scalars), the
	// form nn.SaveCheckpoint stores (nn.OptimizerState).
	StateDict() (tensors map[string]*tensor.Dense, scalars map[string]float64, err error)
	// LoadStateDict is LoadState of the state with these maps.
	LoadStateDict(tensors map[string]*tensor.Dense, scalars map[string]float64) error
}

// stateDict returns the maps of o's State.
func stateDict(o interface{ State() (*State, error) }) (map[string]*tensor.Dense, map[string]float64, error) {
	s, err := o.State()
	if err != nil {
		return nil, nil, err
	}
	return s.Tensors, s.Scalars, nil
}

// StateDict returns the maps of State (see Optimizer).
func (o *Adam) StateDict() (map[string]*tensor.Dense, map[string]float64, error) {
	return stateDict(o)
}

// LoadStateDict is LoadState of the state with these maps (see Optimizer).
func (o *Adam) LoadStateDict(tensors map[string]*tensor.Dense, scalars map[string]float64) error {
	return o.LoadState(&State{Tensors: tensors, Scalars: scalars})
}

// StateDict returns the maps of State (see Optimizer).
func (o *RMSProp) StateDict() (map[string]*tensor.Dense, map[string]float64, error) {
	return stateDict(o)
}

// LoadStateDict is LoadState of the state with these maps (see Optimizer).
func (o *RMSProp) LoadStateDict(tensors map[string]*tensor.Dense, scalars map[string]float64) error {
	return o.LoadState(&State{Tensors: tensors, Scalars: scalars})
}

// StateDict returns the maps of State (see Optimizer).
func (o *SGD) StateDict() (map[string]*tensor.Dense, map[string]float64, error) {
	return stateDict(o)
}

// LoadStateDict is LoadState of the state with these maps (see Optimizer).
func (o *SGD) LoadStateDict(tensors map[string]*tensor.Dense, scalars map[string]float64) error {
	return o.LoadState(&State{Tensors: tensors, Scalars: scalars})
}

// State is an optimizer's complete state as named tensors and scalars, the
// form a checkpoint stores. For an optimizer of kind K ("sgd", "adam",
// "adamw", "rmsprop") and parameters named N:
//
//   - Tensors["K.BUF/N"]: the per-parameter buffers, of the parameter's
//     shape and dtype (BUF is PyTorch's name: momentum_buffer, exp_avg,
//     exp_avg_sq, max_exp_avg_sq, square_avg, grad_avg);
//   - Scalars["K.step/N"]: the number of updates parameter N received (it
//     drives Adam's bias correction; PyTorch's per-parameter "step");
//   - Scalars["K.steps"]: the optimizer's Step count (the schedule's step);
//   - Scalars["K.lr"] and the other hyperparameters ("K.momentum",
//     "K.beta1", ...; flags as 0 or 1).
//
// Every parameter has its buffers and step, also those not updated yet
// (zeros and step 0). LoadState requires exactly the names this optimizer
// has (missing or extra names, shapes and dtypes that differ are errors
// naming them), and restores the hyperparameters as PyTorch's
// load_state_dict does, except the flags that decide which buffers exist
// (SGD momentum zero or not, AMSGrad, RMSProp centered and momentum zero or
// not), which must match. A Schedule is not part of the state: it is kept,
// and evaluated at the restored step count.
//
// Scalars are float64 holding integers below 2^53 or the hyperparameters'
// float64 values; strconv.FormatFloat(v, 'g', -1, 64) and ParseFloat
// round-trip them exactly.
type State struct {
	Tensors map[string]*tensor.Dense
	Scalars map[string]float64
}

// Float returns a pointer to v, for the settings fields where nil means the
// default and a pointer sets any value, zero included.
func Float(v float64) *float64 { return &v }

func orDefault(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// base holds what every optimizer shares: the parameters, their buffers
// and step counts, the Step count and the learning rate.
type base struct {
	kind   string // state prefix: "sgd", "adam", "adamw", "rmsprop"
	title  string // for messages: "SGD", "Adam", ...
	params []*autodiff.Param
	steps  []int64 // per-parameter update counts
	t      int     // Step count
	lr     float64
	sched  Schedule
	// bufNames are the buffers this configuration has, bufs[k][i] the
	// buffer bufNames[k] of parameter i.
	bufNames []string
	bufs     [][]*tensor.Dense
}

func (b *base) errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: optim.%s: %s", kind, b.title, fmt.Sprintf(format, args...))
}

// init checks the parameters and allocates zeroed buffers.
func (b *base) init(params []*autodiff.Param, lr float64, sched Schedule, bufNames []string) error {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return b.errorf(autodiff.ErrInvalidArgument, "invalid learning rate %v", lr)
	}
	if sched != nil {
		if v, ok := sched.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return b.errorf(autodiff.ErrInvalidArgument, "schedule: %v", err)
			}
		}
	}
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		switch {
		case p == nil:
			return b.errorf(autodiff.ErrInvalidArgument, "parameter %d is nil", i)
		case p.Name == "":
			return b.errorf(autodiff.ErrInvalidArgument, "parameter %d has no name (names key the optimizer state)", i)
		case seen[p.Name]:
			return b.errorf(autodiff.ErrInvalidArgument, "two parameters are named %q", p.Name)
		case p.Data == nil:
			return b.errorf(autodiff.ErrInvalidArgument, "parameter %q has no data", p.Name)
		}
		if dt := p.Data.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			return b.errorf(autodiff.ErrDtype, "parameter %q has dtype %v; want float32 or float64", p.Name, dt)
		}
		seen[p.Name] = true
	}
	b.params = slices.Clone(params)
	b.steps = make([]int64, len(params))
	b.lr, b.sched = lr, sched
	return b.setBuffers(bufNames)
}

// setBuffers makes the buffer set bufNames, keeping existing buffers of the
// same names and allocating zeroed ones for the others.
func (b *base) setBuffers(bufNames []string) error {
	bufs := make([][]*tensor.Dense, len(bufNames))
	for k, name := range bufNames {
		if j := slices.Index(b.bufNames, name); j >= 0 {
			bufs[k] = b.bufs[j]
			continue
		}
		bufs[k] = make([]*tensor.Dense, len(b.params))
		for i, p := range b.params {
			z, err := tensorx.Zeros(p.Data.Dtype(), p.Data.Shape())
			if err != nil {
				return b.errorf(autodiff.ErrShape, "parameter %q: %v", p.Name, err)
			}
			bufs[k][i] = z
		}
	}
	b.bufNames, b.bufs = slices.Clone(bufNames), bufs
	return nil
}

// Params returns the optimized parameters.
func (b *base) Params() []*autodiff.Param { return slices.Clone(b.params) }

// Steps returns the number of successful Step calls.
func (b *base) Steps() int { return b.t }

// LR returns the learning rate of the next Step: the schedule's value at
// Steps() if there is a schedule, else the fixed rate.
func (b *base) LR() float64 {
	if b.sched != nil {
		return b.sched.LR(b.t)
	}
	return b.lr
}

// ZeroGrad zeroes the gradients of all parameters.
func (b *base) ZeroGrad() {
	for _, p := range b.params {
		p.ZeroGrad()
	}
}

func active(p *autodiff.Param) bool { return p.Trainable && p.Grad != nil }

// prepare validates a Step before anything changes and returns its
// learning rate.
func (b *base) prepare() (float64, error) {
	lr := b.LR()
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return 0, b.errorf(autodiff.ErrInvalidArgument, "invalid learning rate %v at step %d", lr, b.t)
	}
	for i, p := range b.params {
		if !active(p) {
			continue
		}
		d, g := p.Data, p.Grad
		if g.Dtype() != d.Dtype() || !tensorx.SameShape(g.Shape(), d.Shape()) {
			return 0, b.errorf(autodiff.ErrShape, "parameter %q: gradient %v %v does not match data %v %v", p.Name, g.Dtype(), g.Shape(), d.Dtype(), d.Shape())
		}
		if !contiguous(d) || !contiguous(g) {
			return 0, b.errorf(autodiff.ErrInvalidArgument, "parameter %q: data and gradient must be contiguous tensors, not views", p.Name)
		}
		for k, bufs := range b.bufs {
			if s := bufs[i]; s.Dtype() != d.Dtype() || !tensorx.SameShape(s.Shape(), d.Shape()) {
				return 0, b.errorf(autodiff.ErrShape, "parameter %q is %v %v but its %s state is %v %v (was Data replaced?)", p.Name, d.Dtype(), d.Shape(), b.bufNames[k], s.Dtype(), s.Shape())
			}
		}
	}
	if err := b.checkSomeGrad(); err != nil {
		return 0, err
	}
	if err := b.checkFinite(); err != nil {
		return 0, err
	}
	return lr, nil
}

func contiguous(d *tensor.Dense) bool {
	if d.IsView() || d.RequiresIterator() {
		return false
	}
	switch d.Dtype() {
	case tensor.Float32:
		return len(d.Float32s()) == tensorx.Len(d)
	case tensor.Float64:
		return len(d.Float64s()) == tensorx.Len(d)
	}
	return false
}

// buf returns parameter i's buffer name as []T, or nil if the configuration
// has no such buffer.
func buf[T tensorx.Float](b *base, name string, i int) []T {
	k := slices.Index(b.bufNames, name)
	if k < 0 {
		return nil
	}
	return tensorx.MustSlice[T](b.bufs[k][i])
}

// finish ends a successful Step.
func (b *base) finish() {
	b.t++
	b.ZeroGrad()
}

// hyper is a named hyperparameter of the state.
type hyper struct {
	name string
	val  *float64 // a value, or
	flag *bool    // a flag stored as 0 or 1
	// structural flags decide the buffer set and must match on load;
	// nonzero values likewise decide it by being zero or not
	structural, nonzero bool
}

// state builds the State of the base plus the hyperparameters.
func (b *base) state(hypers []hyper) (*State, error) {
	s := &State{
		Tensors: make(map[string]*tensor.Dense, len(b.bufNames)*len(b.params)),
		Scalars: make(map[string]float64, len(b.params)+len(hypers)+2),
	}
	for k, name := range b.bufNames {
		for i, p := range b.params {
			c, err := tensorx.Clone(b.bufs[k][i])
			if err != nil {
				return nil, b.errorf(autodiff.ErrInternal, "%s of %q: %v", name, p.Name, err)
			}
			s.Tensors[b.kind+"."+name+"/"+p.Name] = c
		}
	}
	for i, p := range b.params {
		s.Scalars[b.kind+".step/"+p.Name] = float64(b.steps[i])
	}
	s.Scalars[b.kind+".steps"] = float64(b.t)
	s.Scalars[b.kind+".lr"] = b.lr
	for _, h := range hypers {
		s.Scalars[b.kind+"."+h.name] = h.get()
	}
	return s, nil
}

func (h hyper) get() float64 {
	if h.flag != nil {
		if *h.flag {
			return 1
		}
		return 0
	}
	return *h.val
}

// loadState checks s against this optimizer, then applies it. hypers point
// into the live configuration; validate checks the configuration after the
// values were set (they are rolled back if it fails).
func (b *base) loadState(s *State, hypers []hyper, validate func() error) error {
	if s == nil {
		return b.errorf(autodiff.ErrInvalidArgument, "LoadState: nil state")
	}
	// Scalars: every expected name, integral non-negative counts, flags 0
	// or 1 and equal to ours when structural.
	scalar := func(name string) (float64, error) {
		v, ok := s.Scalars[name]
		if !ok {
			return 0, b.errorf(autodiff.ErrInvalidArgument, "LoadState: missing scalar %q", name)
		}
		return v, nil
	}
	count := func(name string) (int64, error) {
		v, err := scalar(name)
		if err != nil {
			return 0, err
		}
		if v < 0 || v != math.Trunc(v) || v > 1<<53 {
			return 0, b.errorf(autodiff.ErrInvalidArgument, "LoadState: %q = %v is not a step count", name, v)
		}
		return int64(v), nil
	}
	nScalars := len(b.params) + 2 + len(hypers)
	steps := make([]int64, len(b.params))
	for i, p := range b.params {
		var err error
		if steps[i], err = count(b.kind + ".step/" + p.Name); err != nil {
			return err
		}
	}
	t, err := count(b.kind + ".steps")
	if err != nil {
		return err
	}
	lr, err := scalar(b.kind + ".lr")
	if err != nil {
		return err
	}
	vals := make([]float64, len(hypers))
	for j, h := range hypers {
		name := b.kind + "." + h.name
		if vals[j], err = scalar(name); err != nil {
			return err
		}
		if h.flag != nil {
			if vals[j] != 0 && vals[j] != 1 {
				return b.errorf(autodiff.ErrInvalidArgument, "LoadState: flag %q = %v, want 0 or 1", name, vals[j])
			}
			if h.structural && (vals[j] == 1) != *h.flag {
				return b.errorf(autodiff.ErrInvalidArgument, "LoadState: the state was saved with %s = %v, this optimizer has %v", h.name, vals[j] == 1, *h.flag)
			}
		}
		if h.nonzero && (vals[j] != 0) != (*h.val != 0) {
			return b.errorf(autodiff.ErrInvalidArgument, "LoadState: the state was saved with %s = %v, this optimizer has %v (the %s buffers exist only when it is non-zero)", h.name, vals[j], *h.val, h.name)
		}
	}
	if len(s.Scalars) != nScalars {
		var extra []string
		for name := range s.Scalars {
			if !b.knownScalar(name, hypers) {
				extra = append(extra, name)
			}
		}
		return b.errorf(autodiff.ErrInvalidArgument, "LoadState: %s", listNames("unexpected scalars", extra))
	}
	// Tensors: exactly the expected names, shapes and dtypes.
	want := make(map[string]*tensor.Dense, len(b.bufNames)*len(b.params))
	for k, name := range b.bufNames {
		for i, p := range b.params {
			want[b.kind+"."+name+"/"+p.Name] = b.bufs[k][i]
		}
	}
	var missing, extra []string
	for name := range want {
		if _, ok := s.Tensors[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range s.Tensors {
		if _, ok := want[name]; !ok {
			extra = append(extra, name)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		return b.errorf(autodiff.ErrInvalidArgument, "LoadState: state tensors do not match this optimizer's parameters and settings:%s%s", listNames(" missing", missing), listNames(" unexpected", extra))
	}
	for name, dst := range want {
		src := s.Tensors[name]
		if src == nil {
			return b.errorf(autodiff.ErrInvalidArgument, "LoadState: state tensor %q is nil", name)
		}
		if src.Dtype() != dst.Dtype() || !tensorx.SameShape(src.Shape(), dst.Shape()) {
			return b.errorf(autodiff.ErrShape, "LoadState: state tensor %q is %v %v, want %v %v", name, src.Dtype(), src.Shape(), dst.Dtype(), dst.Shape())
		}
	}
	// Apply the hyperparameters, validate, roll back on failure.
	old := make([]float64, len(hypers))
	for j, h := range hypers {
		old[j] = h.get()
		h.set(vals[j])
	}
	oldLR := b.lr
	b.lr = lr
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		err = b.errorf(autodiff.ErrInvalidArgument, "LoadState: invalid learning rate %v", lr)
	} else if verr := validate(); verr != nil {
		err = fmt.Errorf("LoadState: %w", verr)
	}
	if err != nil {
		for j, h := range hypers {
			h.set(old[j])
		}
		b.lr = oldLR
		return err
	}
	for name, dst := range want {
		tensorx.CopyData(dst, s.Tensors[name])
	}
	copy(b.steps, steps)
	b.t = int(t)
	return nil
}

func (h hyper) set(v float64) {
	if h.flag != nil {
		*h.flag = v == 1
		return
	}
	*h.val = v
}

func (b *base) knownScalar(name string, hypers []hyper) bool {
	rest, ok := strings.CutPrefix(name, b.kind+".")
	if !ok {
		return false
	}
	if rest == "steps" || rest == "lr" {
		return true
	}
	for _, h := range hypers {
		if rest == h.name {
			return true
		}
	}
	if pn, ok := strings.CutPrefix(rest, "step/"); ok {
		return slices.ContainsFunc(b.params, func(p *autodiff.Param) bool { return p.Name == pn })
	}
	return false
}

// listNames renders up to 5 sorted names for an error message.
func listNames(label string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	more := ""
	if len(names) > 5 {
		more = fmt.Sprintf(" and %d more", len(names)-5)
		names = names[:5]
	}
	return fmt.Sprintf("%s %q%s", label, names, more)
}
