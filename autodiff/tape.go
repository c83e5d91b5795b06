package autodiff

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync/atomic"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Option configures a Tape.
type Option func(*Tape)

// Training sets the tape's mode (layers such as batch norm and dropout read
// it). A new tape is in training mode.
func Training(b bool) Option { return func(t *Tape) { t.training = b } }

// Seed seeds the tape's random source (used by random ops and layers).
// A new tape is seeded with 1.
func Seed(s int64) Option { return func(t *Tape) { t.seed = s } }

// NoGrad makes a tape that records nothing: ops run and return values, but
// no gradient can be taken. It is the cheap mode for inference.
func NoGrad() Option { return func(t *Tape) { t.noGrad = true } }

// Threads sets how many goroutines kernels may use (default GOMAXPROCS).
func Threads(n int) Option { return func(t *Tape) { t.threads = n } }

// Tape records the ops applied to its values so that gradients can be
// computed by replaying it in reverse. Tapes are made by NewTape; a
// zero-value Tape refuses every use with an error (its values' Err and
// Backward report it). A Tape is not safe for concurrent
// use; separate tapes may run in separate goroutines.
//
// Memory: outputs, constants and gradients live in the tape's arena until
// Reset, which recycles the buffers, unless the tape releases them earlier
// by liveness (see Intermediates: the intermediates of an nn.Sequential on
// a NoGrad tape are released as soon as the next layer has run, those of a
// recording tape by Backward once no gradient function needs them). A
// training loop that calls Reset at the start of every step reuses the
// same buffers step after step. The small slices the tape returns (the
// outputs of Apply, the results of Grad) and the registry.Values gradient
// functions see are cut from larger blocks and never reused, so a
// steady-state step allocates next to nothing while every handle from
// before a Reset stays invalid.
type Tape struct {
	training bool
	noGrad   bool
	threads  int
	seed     int64
	rng      *rand.Rand
	gen      uint32

	vals   []valRec
	nodes  []node
	ids    []int32
	params map[*Param]int32
	err    error
	anom   *anomaly // anomaly detection state, nil when off (anomaly.go)
	arena  arena
	kc     registry.KernelCtx
	inBuf  []*tensor.Dense

	// backward-pass scratch, reused across passes
	marked   []bool
	acc      [][]int32
	em       emitter
	fe       emitter // the forward emitter (Emitter)
	nv       nodeView
	dyBuf    []registry.Value
	bwSrcs   []Value
	bwParams []*Param
	bwTarget [1]Value
	sumBuf   []Value
	lv       liveness  // backward-pass liveness (liveness.go)
	ready    gradReady // OnGradReady (gradready.go)

	// slabs of small handed-out slices and boxes (slab.go)
	vslab []Value
	islab []registry.Value

	pcs    []uintptr // call stacks of the recorded ops (callsite.go)
	pcsGen uint32    // the generation pcs belongs to
	spent  []uint32  // per node: the generation in which a Backward ran through it (backward.go)
	bwMode uint8     // what the gradient pass does with spent nodes (backward.go)
}

type valRec struct {
	d       *tensor.Dense
	node    int32 // producing node, -1 for leaves
	param   *Param
	version uint64 // param version at binding
	req     bool   // requires grad: depends on a watched leaf or a trainable param
	live    uint8  // liveness flags (liveness.go)
}

type node struct {
	op         *registry.OpDef
	attrs      any
	in0, nin   int32
	out0, nout int32
	pc0, npc   int32 // the call stack the op was applied from: pcs[pc0 : pc0+npc]
}

// tapeGen numbers tapes (the high bits of their generation), so that a
// Value from one tape is never taken for one of another. NewTape may run in
// several goroutines at once, hence atomic.
var tapeGen atomic.Uint32

// NewTape returns an empty tape.
func NewTape(opts ...Option) *Tape {
	t := &Tape{training: true, seed: 1}
	for _, o := range opts {
		o(t)
	}
	if t.threads < 1 {
		t.threads = runtime.GOMAXPROCS(0)
	}
	t.rng = rand.New(rand.NewSource(t.seed))
	t.gen = tapeGen.Add(1) << 16
	t.params = map[*Param]int32{}
	t.kc = registry.KernelCtx{Alloc: &t.arena, Threads: t.threads, Rand: t.rng}
	return t
}

// IsTraining reports the tape's mode.
func (t *Tape) IsTraining() bool { return t.training }

// SetTraining changes the tape's mode.
func (t *Tape) SetTraining(b bool) { t.training = b }

// Recording reports whether the tape records ops (false for NoGrad tapes).
func (t *Tape) Recording() bool { return !t.noGrad }

// Rand returns the tape's seeded random source (nil for a zero Tape, which
// is unusable: tapes are made by NewTape).
func (t *Tape) Rand() *rand.Rand { return t.rng }

// Threads returns the kernels' thread budget.
func (t *Tape) Threads() int { return t.threads }

// Err returns the tape's first error, or nil.
func (t *Tape) Err() error { return t.err }

// Reset forgets every recorded op and value and recycles their buffers;
// Values from before the Reset become invalid. The error state is
// cleared; the random source continues.
func (t *Tape) Reset() {
	t.gen++
	t.arena.recycle()
	clear(t.vals)
	t.vals = t.vals[:0]
	clear(t.nodes)
	t.nodes = t.nodes[:0]
	t.ids = t.ids[:0]
	clear(t.params)
	t.err = nil
}

// Release is Reset that also drops the arena's pooled buffers, returning
// their memory to the Go runtime.
func (t *Tape) Release() {
	t.Reset()
	t.arena.drop()
}

// NumOps returns the number of recorded ops.
func (t *Tape) NumOps() int { return len(t.nodes) }

// fail records err as the tape's error if it has none, and returns the
// tape's error.
func (t *Tape) fail(op string, input int, phase string, err error) error {
	if t.err == nil {
		var oe *OpError
		if errors.As(err, &oe) {
			t.err = oe
		} else {
			t.err = &OpError{Op: op, Input: input, Phase: phase, Loc: callerLoc(), Err: err}
		}
	}
	return t.err
}

// failed reports whether the tape has an error. A zero-value Tape (not made
// by NewTape) gets one here: it has no kernel context, parameter table or
// random source, so every use is refused with an error naming NewTape.
func (t *Tape) failed() bool {
	if t.err == nil && t.kc.Alloc == nil {
		t.fail("", -1, "tape", fmt.Errorf("%w: zero Tape: create tapes with autodiff.NewTape", ErrInvalidArgument))
	}
	return t.err != nil
}

func (t *Tape) poison() Value { return Value{t: t, id: -1, gen: t.gen} }

// check resolves v to its record, or returns an error.
func (t *Tape) check(v Value) error {
	switch {
	case v.t == nil:
		return fmt.Errorf("%w: zero Value", ErrInvalidValue)
	case v.t != t:
		return fmt.Errorf("%w: Value belongs to another tape", ErrInvalidValue)
	case v.gen != t.gen:
		return fmt.Errorf("%w: Value used after its tape was Reset", ErrInvalidValue)
	case v.id < 0:
		if t.err != nil {
			return t.err
		}
		return fmt.Errorf("%w: poisoned Value", ErrInvalidValue)
	case int(v.id) >= len(t.vals):
		return fmt.Errorf("%w: unknown Value", ErrInvalidValue)
	}
	return t.released(v.id)
}

func (t *Tape) newVal(d *tensor.Dense, nodeIdx int32, req bool) Value {
	t.vals = append(t.vals, valRec{d: d, node: nodeIdx, req: req})
	return Value{t: t, id: int32(len(t.vals) - 1), gen: t.gen}
}

// ownedCopy copies d into an arena buffer.
func (t *Tape) ownedCopy(d *tensor.Dense) (*tensor.Dense, error) {
	c, err := tensorx.Contiguous(d)
	if err != nil {
		return nil, err
	}
	out, err := t.arena.Alloc(c.Dtype(), c.Shape(), false)
	if err != nil {
		return nil, err
	}
	tensorx.CopyData(out, c)
	return out, nil
}

// Constant puts a copy of d on the tape as a value without gradient.
// The copy lets a data loader reuse its buffer.
func (t *Tape) Constant(d *tensor.Dense) Value {
	if t.failed() {
		return t.poison()
	}
	c, err := t.ownedCopy(d)
	if err != nil {
		t.fail("", -1, "tape", fmt.Errorf("Constant: %w", err))
		return t.poison()
	}
	return t.newVal(c, -1, false)
}

// Watch puts a copy of d on the tape as a leaf whose gradient can be taken
// with Grad (as TensorFlow's GradientTape.watch). On a NoGrad tape it is a
// constant.
func (t *Tape) Watch(d *tensor.Dense) Value {
	v := t.Constant(d)
	if v.id >= 0 {
		t.vals[v.id].req = !t.noGrad
		t.vals[v.id].live |= liveWatched
	}
	return v
}

// Scalar puts a constant scalar (shape []) of dtype dt on the tape.
func (t *Tape) Scalar(dt tensor.Dtype, x float64) Value {
	return t.fill(dt, nil, x)
}

// Full puts a constant of dtype dt and the given shape, every element x,
// on the tape.
func (t *Tape) Full(dt tensor.Dtype, shape []int, x float64) Value {
	return t.fill(dt, shape, x)
}

func (t *Tape) fill(dt tensor.Dtype, shape []int, x float64) Value {
	if t.failed() {
		return t.poison()
	}
	d, err := t.arena.Alloc(dt, shape, false)
	if err != nil {
		t.fail("", -1, "tape", fmt.Errorf("constant: %w", err))
		return t.poison()
	}
	switch dt {
	case tensor.Float32:
		s := d.Float32s()
		for i := range s {
			s[i] = float32(x)
		}
	case tensor.Float64:
		s := d.Float64s()
		for i := range s {
			s[i] = x
		}
	case tensor.Int32:
		s := d.Int32s()
		for i := range s {
			s[i] = int32(x)
		}
	case tensor.Int64:
		s := d.Int64s()
		for i := range s {
			s[i] = int64(x)
		}
	case tensor.Bool:
		s := d.Bools()
		for i := range s {
			s[i] = x != 0
		}
	}
	return t.newVal(d, -1, false)
}

// Ints puts a constant int32 vector on the tape (for shape and axis
// inputs). A value that does not fit int32 is an error (ErrInvalidArgument,
// recorded on the tape), not truncated.
func (t *Tape) Ints(v ...int) Value {
	if t.failed() {
		return t.poison()
	}
	for i, x := range v {
		if x != int(int32(x)) {
			t.fail("", -1, "tape", fmt.Errorf("%w: Ints: value %d (index %d) does not fit int32", ErrInvalidArgument, x, i))
			return t.poison()
		}
	}
	d, err := t.arena.Alloc(tensor.Int32, []int{len(v)}, false)
	if err != nil {
		t.fail("", -1, "tape", err)
		return t.poison()
	}
	s := d.Int32s()
	for i, x := range v {
		s[i] = int32(x)
	}
	return t.newVal(d, -1, false)
}

// Param binds p to the tape and returns its value. Binding the same
// parameter again returns the same value (its gradient contributions are
// summed). The value shares p.Data; changing p after use on this tape and
// before Backward is detected through p's version and reported.
func (t *Tape) Param(p *Param) Value {
	if t.failed() {
		return t.poison()
	}
	if p == nil || p.Data == nil {
		t.fail("", -1, "tape", fmt.Errorf("%w: Param: nil parameter or data", ErrInvalidArgument))
		return t.poison()
	}
	if id, ok := t.params[p]; ok {
		return Value{t: t, id: id, gen: t.gen}
	}
	d, err := tensorx.Contiguous(p.Data)
	if err != nil {
		t.fail("", -1, "tape", fmt.Errorf("Param %q: %w", p.Name, err))
		return t.poison()
	}
	if d != p.Data {
		p.Data = d
	}
	v := t.newVal(d, -1, p.Trainable && !t.noGrad)
	t.vals[v.id].param = p
	t.vals[v.id].version = p.version
	t.params[p] = v.id
	return v
}

// Apply runs the registered op named op on in and returns its outputs. The
// op is recorded if any input requires a gradient. On error (recorded on
// the tape) it returns poisoned values, one per declared output. If op is
// not registered, its output count is unknown: Apply then returns
// UnknownOpOutputs poisoned values (or more, as many as the registered op
// with the most outputs has), so that indexing the result as the intended
// op's outputs never panics and every value reports the error.
func (t *Tape) Apply(op string, attrs any, in ...Value) []Value {
	def, err := registry.Lookup(op)
	if err != nil {
		t.fail(op, -1, "forward", err)
		out := t.values(unknownOpOutputs())
		for i := range out {
			out[i] = t.poison()
		}
		return out
	}
	return t.applyDef(def, attrs, in, !t.noGrad, "forward", nil)
}

// UnknownOpOutputs is the least number of poisoned values that Apply (and
// the emitters' Apply) return for an op name that is not registered.
const UnknownOpOutputs = 8

// unknownOpOutputs returns how many poisoned values to return for an
// unregistered op: UnknownOpOutputs, or the largest output count of any
// registered op if that is more. Only the error path calls it.
func unknownOpOutputs() int {
	n := UnknownOpOutputs
	for _, d := range registry.List() {
		n = max(n, len(d.Outputs))
	}
	return n
}

// applyDef runs def. record permits recording a node (the op is recorded
// only if an input requires grad). The outputs are appended to out (a
// slice of the tape's slab if out is nil), poisoned values if the op fails.
func (t *Tape) applyDef(def *registry.OpDef, attrs any, in []Value, record bool, phase string, out []Value) []Value {
	nout := len(def.Outputs)
	if out == nil {
		out = t.values(nout)[:0]
	}
	if t.failed() || !t.run(def, attrs, in, record, phase) {
		for i := 0; i < nout; i++ {
			out = append(out, t.poison())
		}
		return out
	}
	for i := len(t.vals) - nout; i < len(t.vals); i++ {
		out = append(out, Value{t: t, id: int32(i), gen: t.gen})
	}
	return out
}

// run executes def and appends its outputs to t.vals (the last
// len(def.Outputs) values), recording a node if needed. It reports
// failure on the tape and returns false.
func (t *Tape) run(def *registry.OpDef, attrs any, in []Value, record bool, phase string) bool {
	t.inBuf = t.inBuf[:0]
	req := false
	for i, v := range in {
		if err := t.check(v); err != nil {
			t.fail(def.Name, i, phase, err)
			return false
		}
		r := &t.vals[v.id]
		t.inBuf = append(t.inBuf, r.d)
		req = req || r.req
	}
	na, err := def.NormalizeAttrs(attrs)
	if err != nil {
		t.fail(def.Name, -1, phase, err)
		return false
	}
	outs, err := registry.RunNormalized(def, &t.kc, na, t.inBuf)
	clear(t.inBuf)
	if err != nil {
		t.fail(def.Name, registry.ErrorInput(err), phase, err)
		return false
	}
	gk := def.GradKind()
	req = req && record && gk != registry.GradZero
	nodeIdx := int32(-1)
	if req {
		nodeIdx = int32(len(t.nodes))
		n := node{op: def, attrs: na, in0: int32(len(t.ids)), nin: int32(len(in))}
		if t.anom == nil && needsCallSite(def, gk) { // anomaly detection keeps its own
			n.pc0, n.npc = t.recordCallSite()
		}
		for _, v := range in {
			t.ids = append(t.ids, v.id)
		}
		n.out0 = int32(len(t.ids))
		n.nout = int32(len(outs))
		for i := range outs {
			t.ids = append(t.ids, int32(len(t.vals)+i))
		}
		t.nodes = append(t.nodes, n)
		t.markSaved(t.ids[n.in0:n.out0])
	}
	var live uint8
	if req {
		live = liveSaved
	}
	for _, d := range outs {
		t.vals = append(t.vals, valRec{d: d, node: nodeIdx, req: req, live: live})
	}
	if t.anom != nil {
		return t.anom.check(t, def, in, len(outs), nodeIdx, phase)
	}
	return true
}

// Fail records err as the tape's error, unless the tape already has one,
// and returns a poisoned value; later ops do nothing and every read
// reports the first error. Layers and user code use it to report a
// configuration error where a Value is expected. op names what failed
// (a layer or op name; it may be empty). err should wrap one of the
// sentinel errors (ErrInvalidArgument, ErrShape, ...).
func (t *Tape) Fail(op string, err error) Value {
	if err == nil {
		err = fmt.Errorf("%w: Fail called with a nil error", ErrInvalidArgument)
	}
	t.fail(op, -1, "forward", err)
	return t.poison()
}

// Reseed restarts the tape's random source from seed. A training loop that
// reuses one tape and must resume bit-identically from a checkpoint
// reseeds it at known points (e.g. each step from the step number).
func (t *Tape) Reseed(seed int64) {
	if t.rng == nil {
		t.failed() // a zero Tape
		return
	}
	t.seed = seed
	t.rng.Seed(seed)
}
