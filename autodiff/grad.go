package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// GradOpts configures Grad.
type GradOpts struct {
	// CreateGraph records the backward pass on the tape, so the returned
	// gradients can be differentiated again (gradients of gradients).
	CreateGraph bool
}

// emitter implements registry.Emitter for gradient functions. The
// registry.Values it hands out are boxes and slices from the tape's slabs
// (slab.go), so a gradient function's ops allocate nothing of their own.
type emitter struct {
	t      *Tape
	record bool
	fwd    bool // the tape's forward emitter (Tape.Emitter): phase "forward", record unless no-grad
	outBuf []Value
	inBuf  []Value
}

// phase returns the phase that errors of e's ops report, and whether its
// ops may be recorded.
func (e *emitter) phase() (string, bool) {
	if e.fwd {
		return "forward", !e.t.noGrad
	}
	return "backward", e.record
}

func (e *emitter) Err() error { return e.t.err }

func (e *emitter) Apply(op string, attrs any, in ...registry.Value) []registry.Value {
	t := e.t
	phase, record := e.phase()
	def, err := registry.Lookup(op)
	if err != nil {
		t.fail(op, -1, phase, err)
		res := t.ifaces(unknownOpOutputs())
		for i := range res {
			res[i] = t.box(t.poison())
		}
		return res
	}
	e.inBuf = e.inBuf[:0]
	for i, v := range in {
		av, ok := unbox(v)
		if !ok {
			t.fail(op, i, phase, fmt.Errorf("%w: passed a %T, not a tape Value", ErrInvalidValue, v))
			av = t.poison()
		}
		e.inBuf = append(e.inBuf, av)
	}
	e.outBuf = t.applyDef(def, attrs, e.inBuf, record, phase, e.outBuf[:0])
	clear(e.inBuf)
	res := t.ifaces(len(e.outBuf))
	for i, v := range e.outBuf {
		res[i] = t.box(v)
	}
	return res
}

func (e *emitter) Const(d *tensor.Dense) registry.Value { return e.t.box(e.t.Constant(d)) }

func (e *emitter) Scalar(dt tensor.Dtype, v float64) registry.Value {
	return e.t.box(e.t.Scalar(dt, v))
}

func (e *emitter) Ints(v ...int) registry.Value { return e.t.box(e.t.Ints(v...)) }

func (e *emitter) Values(n int) []registry.Value { return e.t.ifaces(n) }

// nodeView implements registry.Node for one recorded node.
type nodeView struct {
	t    *Tape
	idx  int
	ins  []registry.Value
	outs []registry.Value
	hasI bool
	hasO bool
}

func (n *nodeView) Op() *registry.OpDef { return n.t.nodes[n.idx].op }
func (n *nodeView) Attrs() any          { return n.t.nodes[n.idx].attrs }

func (n *nodeView) Inputs() []registry.Value {
	if !n.hasI {
		nd := n.t.nodes[n.idx]
		n.ins = n.t.valuesOf(n.ins[:0], nd.in0, nd.nin)
		n.hasI = true
	}
	return n.ins
}

func (n *nodeView) Outputs() []registry.Value {
	if !n.hasO {
		nd := n.t.nodes[n.idx]
		n.outs = n.t.valuesOf(n.outs[:0], nd.out0, nd.nout)
		n.hasO = true
	}
	return n.outs
}

func (n *nodeView) NeedsGrad(i int) bool {
	nd := n.t.nodes[n.idx]
	if i < 0 || i >= int(nd.nin) {
		return false
	}
	id := n.t.ids[nd.in0+int32(i)]
	return n.t.marked[id] && isFloat(n.t.vals[id].d.Dtype())
}

func (t *Tape) valuesOf(out []registry.Value, start, n int32) []registry.Value {
	for i := int32(0); i < n; i++ {
		out = append(out, t.box(Value{t: t, id: t.ids[start+i], gen: t.gen}))
	}
	return out
}

func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// Grad returns the gradients of the sum of targets (each weighted by its
// upstream gradient; nil upstream means ones, as TensorFlow's
// GradientTape.gradient) with respect to each source. A source that the
// targets do not depend on gets a zero gradient.
//
// Only the part of the tape between sources and targets is walked. With
// opts.CreateGraph the backward pass is recorded, so the results can be
// differentiated again; otherwise they are constants.
func (t *Tape) Grad(targets, sources, upstream []Value, opts GradOpts) ([]Value, error) {
	if t.failed() {
		return nil, t.err
	}
	if t.noGrad {
		return nil, t.fail("", -1, "backward", fmt.Errorf("%w: Grad on a NoGrad tape", ErrInvalidArgument))
	}
	if upstream != nil && len(upstream) != len(targets) {
		return nil, t.fail("", -1, "backward", fmt.Errorf("%w: %d upstream gradients for %d targets", ErrInvalidArgument, len(upstream), len(targets)))
	}
	for i, v := range targets {
		if err := t.check(v); err != nil {
			return nil, t.fail("", -1, "backward", fmt.Errorf("target %d: %w", i, err))
		}
		if !isFloat(v.Dtype()) {
			return nil, t.fail("", -1, "backward", fmt.Errorf("%w: target %d has dtype %v; gradients need float targets", ErrDtype, i, v.Dtype()))
		}
	}
	for i, v := range sources {
		if err := t.check(v); err != nil {
			return nil, t.fail("", -1, "backward", fmt.Errorf("source %d: %w", i, err))
		}
	}
	for i, u := range upstream {
		if u.t == nil {
			continue // zero Value: ones
		}
		if err := t.check(u); err != nil {
			return nil, t.fail("", -1, "backward", fmt.Errorf("upstream %d: %w", i, err))
		}
		if u.Dtype() != targets[i].Dtype() || !tensorx.SameShape(u.Shape(), targets[i].Shape()) {
			return nil, t.fail("", -1, "backward", fmt.Errorf("%w: upstream %d is %v %v, target is %v %v", ErrShape, i, u.Dtype(), u.Shape(), targets[i].Dtype(), targets[i].Shape()))
		}
	}
	for id := range t.vals {
		if p := t.vals[id].param; p != nil && p.version != t.vals[id].version {
			return nil, t.fail("", -1, "backward", fmt.Errorf("%w: parameter %q changed (version %d → %d) after use on this tape: call tape.Reset() at the start of each step", ErrModified, p.Name, t.vals[id].version, p.version))
		}
	}
	res, err := t.gradPass(targets, sources, upstream, opts.CreateGraph)
	if err != nil {
		return nil, t.fail("", -1, "backward", err)
	}
	return res, nil
}

func (t *Tape) gradPass(targets, sources, upstream []Value, create bool) (res []Value, err error) {
	nvals, nnodes := len(t.vals), len(t.nodes)
	// marked: values that depend on a source (and so need a gradient).
	if cap(t.marked) < nvals {
		t.marked = make([]bool, nvals)
	}
	t.marked = t.marked[:nvals]
	clear(t.marked)
	minSrc := int32(nvals)
	for _, s := range sources {
		if t.vals[s.id].req {
			t.marked[s.id] = true
			minSrc = min(minSrc, s.id)
		}
	}
	for ni := 0; ni < nnodes; ni++ {
		nd := &t.nodes[ni]
		if t.ids[nd.out0] < minSrc {
			continue
		}
		dep := false
		for _, id := range t.ids[nd.in0 : nd.in0+nd.nin] {
			dep = dep || t.marked[id]
		}
		if dep {
			for _, id := range t.ids[nd.out0 : nd.out0+nd.nout] {
				t.marked[id] = true
			}
		}
	}
	if cap(t.acc) < nvals {
		t.acc = make([][]int32, nvals)
	}
	t.acc = t.acc[:nvals]
	for i := range t.acc {
		t.acc[i] = t.acc[i][:0]
	}
	e := &t.em
	e.t, e.record = t, create
	maxNode := -1
	for _, tv := range targets {
		if t.marked[tv.id] {
			maxNode = max(maxNode, int(t.vals[tv.id].node))
		}
	}
	if err := t.plan(targets, sources, maxNode, minSrc, create); err != nil {
		return nil, err
	}
	defer t.endPass()
	// Seeds.
	for i, tv := range targets {
		if !t.marked[tv.id] {
			continue
		}
		var seed Value
		if upstream != nil && upstream[i].t != nil {
			seed = upstream[i]
		} else {
			seed = t.applyDef(opOnesLike, nil, []Value{tv}, false, "backward", nil)[0]
		}
		if t.err != nil {
			return nil, t.err
		}
		t.acc[tv.id] = append(t.acc[tv.id], seed.id)
		t.hold(seed.id)
	}
	dy := t.dyBuf[:0]
	nv := &t.nv
	defer func() { clear(t.dyBuf); clear(nv.ins); clear(nv.outs) }()
	if t.ready.on {
		t.readyStart(sources)
	}
	for ni := maxNode; ni >= 0; ni-- {
		if t.ready.on {
			if err := t.readyFire(e, sources, ni); err != nil {
				return nil, err
			}
		}
		nd := t.nodes[ni]
		if t.ids[nd.out0] < minSrc {
			break
		}
		has, needs := false, false
		for _, id := range t.ids[nd.out0 : nd.out0+nd.nout] {
			has = has || len(t.acc[id]) > 0
		}
		for _, id := range t.ids[nd.in0 : nd.in0+nd.nin] {
			needs = needs || t.marked[id]
		}
		if !has || !needs {
			t.afterNode(ni, int32(len(t.vals)))
			continue
		}
		if t.anom != nil {
			t.anom.at(t, int32(ni))
		}
		made := int32(len(t.vals))
		dy = dy[:0]
		for _, id := range t.ids[nd.out0 : nd.out0+nd.nout] {
			g, ok := t.sumGrads(e, id)
			if !ok {
				dy = append(dy, nil)
			} else {
				dy = append(dy, g)
			}
		}
		if t.err != nil {
			return nil, t.err
		}
		t.dyBuf = dy
		nv.t, nv.idx, nv.hasI, nv.hasO = t, ni, false, false
		grads, err := t.callGrad(e, nv, dy)
		if err != nil {
			return nil, err
		}
		for i, g := range grads {
			id := t.ids[nd.in0+int32(i)]
			if g == nil || !t.marked[id] || !isFloat(t.vals[id].d.Dtype()) {
				continue
			}
			gv, ok := unbox(g)
			if !ok {
				return nil, t.gradError(ni, i, fmt.Errorf("%w: gradient is a %T, not a tape Value", ErrInternal, g))
			}
			if err := t.check(gv); err != nil {
				return nil, t.gradError(ni, i, err)
			}
			in := t.vals[id].d
			gd := t.vals[gv.id].d
			if gd.Dtype() != in.Dtype() || !tensorx.SameShape(gd.Shape(), in.Shape()) {
				return nil, t.gradError(ni, i, fmt.Errorf("%w: gradient is %v %v but the input is %v %v", ErrInternal, gd.Dtype(), gd.Shape(), in.Dtype(), in.Shape()))
			}
			t.acc[id] = append(t.acc[id], gv.id)
			t.hold(gv.id)
		}
		t.afterNode(ni, made)
	}
	if t.anom != nil {
		t.anom.at(t, -1)
	}
	res = t.values(len(sources))
	for i, s := range sources {
		g, ok := t.sumGrads(e, s.id)
		if !ok {
			g = t.applyDef(opZerosLike, nil, []Value{s}, false, "backward", nil)[0]
		}
		res[i], _ = unbox(g)
		// A source listed twice gets the same gradient.
		if ok {
			t.acc[s.id] = append(t.acc[s.id][:0], res[i].id)
		}
	}
	if t.err != nil {
		return nil, t.err
	}
	return res, nil
}

// sumGrads adds up the gradients accumulated for value id (AddN for more
// than one, so the sum is itself differentiable).
func (t *Tape) sumGrads(e *emitter, id int32) (registry.Value, bool) {
	l := t.acc[id]
	switch len(l) {
	case 0:
		return nil, false
	case 1:
		return t.box(Value{t: t, id: l[0], gen: t.gen}), true
	}
	in := t.sumBuf[:0]
	for _, g := range l {
		in = append(in, Value{t: t, id: g, gen: t.gen})
	}
	t.sumBuf = in
	var out [1]Value
	s := t.applyDef(opAddN, nil, in, e.record, "backward", out[:0])[0]
	if s.id >= 0 {
		t.hold(s.id)
	}
	for _, g := range l {
		t.drop(g)
	}
	t.acc[id] = append(t.acc[id][:0], s.id)
	return t.box(s), true
}

// callGrad runs the gradient function of node ni, turning a panic into an
// error.
func (t *Tape) callGrad(e *emitter, nv *nodeView, dy []registry.Value) (grads []registry.Value, err error) {
	nd := t.nodes[nv.idx]
	op := nd.op
	if err := t.spend(nv.idx); err != nil {
		return nil, err
	}
	switch op.GradKind() {
	case registry.GradUnset:
		return nil, t.gradError(nv.idx, -1, fmt.Errorf("%w: op %s has no registered gradient", ErrNoGradient, op.Name))
	case registry.GradNone:
		return nil, t.gradError(nv.idx, -1, fmt.Errorf("%w: %s", ErrNoGradient, op.NoGradientReason()))
	case registry.GradZero:
		return t.ifaces(int(nd.nin)), nil
	}
	defer func() {
		if r := recover(); r != nil {
			if t.err != nil {
				t.locateGradFailure(nv.idx)
				grads, err = nil, t.err
				return
			}
			grads, err = nil, t.gradError(nv.idx, -1, fmt.Errorf("%w: gradient function panicked: %v", ErrInternal, r))
		}
	}()
	grads, err = op.Gradient()(e, nv, dy)
	if t.err != nil {
		t.locateGradFailure(nv.idx)
		return nil, t.err
	}
	if err != nil {
		return nil, t.gradError(nv.idx, -1, err)
	}
	if len(grads) != int(nd.nin) {
		return nil, t.gradError(nv.idx, -1, fmt.Errorf("%w: gradient returned %d values for %d inputs", ErrInternal, len(grads), nd.nin))
	}
	return grads, nil
}

// Backward computes the gradient of target (seeded with ones, as
// TensorFlow does for a non-scalar target) with respect to every trainable
// parameter bound to the tape, and adds it into the parameters' Grad. The
// gradients are added only if the whole pass succeeds. A hook set with
// OnGradReady sees each parameter's gradient as soon as it is final.
//
// Two mistakes that would otherwise train nothing, or train wrongly, are
// errors: a target that depends on no trainable parameter bound to the
// tape (ErrNoGradient, naming them), and a second Backward through ops an
// earlier Backward of the same recording ran through (ErrBackwardTwice; see
// BackwardOpts.RetainGraph).
func (t *Tape) Backward(target Value) error { return t.BackwardWith(target, BackwardOpts{}) }

// BackwardWith is Backward with options.
func (t *Tape) BackwardWith(target Value, opts BackwardOpts) error {
	if t.failed() {
		return t.err
	}
	srcs, ps := t.bwSrcs[:0], t.bwParams[:0]
	for id := range t.vals {
		if p := t.vals[id].param; p != nil && t.vals[id].req {
			srcs = append(srcs, Value{t: t, id: int32(id), gen: t.gen})
			ps = append(ps, p)
		}
	}
	t.bwSrcs, t.bwParams = srcs, ps
	defer clear(t.bwParams)
	t.bwTarget[0] = target
	t.bwMode = bwSpend
	if opts.RetainGraph {
		t.bwMode = bwRetain
	}
	t.lv.consume = !opts.RetainGraph // the last Backward of a recording releases what it read
	t.readyBegin(ps)
	grads, err := t.Grad(t.bwTarget[:], srcs, nil, GradOpts{})
	t.lv.consume = false
	t.bwMode = bwGrad
	if err != nil {
		t.ready.readyEnd()
		return err
	}
	if err := t.checkReached(target, ps); err != nil {
		t.ready.readyEnd()
		return err
	}
	t.readyFinish(grads)
	// All or nothing: check every parameter before adding into any.
	for i, g := range grads {
		if err := ps[i].checkGrad(t.vals[g.id].d); err != nil {
			return t.fail("", -1, "backward", err)
		}
	}
	for i, g := range grads {
		if err := ps[i].accumulate(t.vals[g.id].d); err != nil {
			return t.fail("", -1, "backward", err)
		}
	}
	return nil
}
