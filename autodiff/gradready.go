package autodiff

import (
	"slices"

	"gorgonia.org/tensor"
)

// GradReadyFunc receives, during Backward, the gradient g of a parameter p
// for this pass, as soon as it is final: every recorded op that uses p has
// had its gradient computed. g is owned by the tape (valid until Reset;
// read it, do not change it) and holds this pass's gradient only: p.Grad
// still holds what it held before Backward, which adds g to it when the
// whole pass has succeeded.
type GradReadyFunc func(p *Param, g *tensor.Dense)

// OnGradReady makes Backward call f once for every trainable parameter
// bound to the tape, in the order the backward pass finishes their
// gradients (roughly the reverse of the order the forward pass used
// them); nil removes it. It is the hook for overlapping work with the
// rest of the backward pass, such as data-parallel training's all-reduce
// of gradients (package nn/dist): the gradient of a model's last layer is
// ready long before the first layer's.
//
// f runs on the goroutine that calls Backward, between the gradient
// computations, so it should be quick (copy g, hand it to another
// goroutine). Parameters the target does not depend on get a zero g, after
// all the others. If Backward fails after some calls, the parameters'
// Grad are left unchanged (as always), while f has seen part of the
// gradients; Grad never calls f. The hook stays set across Reset.
func (t *Tape) OnGradReady(f GradReadyFunc) { t.ready.f = f }

// gradReady is the tape's OnGradReady state and its per-pass scratch.
type gradReady struct {
	f     GradReadyFunc
	on    bool     // within a Backward, with f set
	ps    []*Param // Backward's parameters, one per source
	src   []int32  // by value id: index of the source, or -1
	first []int32  // by source: index of the first node using it, -1 if none
	order []int32  // sources by first use, latest first
	next  int      // order[:next] have fired
	fired []bool   // by source
}

// readyBegin arms the hook for a Backward over the parameters ps.
func (t *Tape) readyBegin(ps []*Param) {
	r := &t.ready
	r.on, r.ps = r.f != nil, ps
}

// readyStart computes, before the backward walk, after which node each
// source's gradient is final: after the first (lowest-index) recorded
// node that takes it as input, since the walk goes from the last node down.
func (t *Tape) readyStart(sources []Value) {
	r := &t.ready
	r.src = grow(r.src, len(t.vals))
	for i := range r.src {
		r.src[i] = -1
	}
	n := len(sources)
	r.first, r.order, r.fired = grow(r.first, n), grow(r.order, n), grow(r.fired, n)
	for i, s := range sources {
		r.src[s.id] = int32(i)
		r.first[i], r.order[i], r.fired[i] = -1, int32(i), false
	}
	left := n
	for ni := range t.nodes {
		nd := &t.nodes[ni]
		for _, id := range t.ids[nd.in0 : nd.in0+nd.nin] {
			if k := r.src[id]; k >= 0 && r.first[k] < 0 {
				r.first[k] = int32(ni)
				left--
			}
		}
		if left == 0 {
			break
		}
	}
	slices.SortStableFunc(r.order, r.byFirstDesc)
	r.next = 0
}

func (r *gradReady) byFirstDesc(a, b int32) int { return int(r.first[b] - r.first[a]) }

// readyFire calls the hook for every source whose gradient is final before
// node ni is processed (its first use is after ni). A source that no
// processed node gave a gradient is left for readyFinish (zero gradient).
func (t *Tape) readyFire(e *emitter, sources []Value, ni int) error {
	r := &t.ready
	for r.next < len(r.order) && int(r.first[r.order[r.next]]) > ni {
		k := r.order[r.next]
		r.next++
		g, ok := t.sumGrads(e, sources[k].id)
		if t.err != nil {
			return t.err
		}
		if !ok {
			continue
		}
		gv, _ := unbox(g)
		r.fired[k] = true
		r.f(r.ps[k], t.vals[gv.id].d)
	}
	return nil
}

// readyFinish calls the hook for the sources not reported during the
// walk, with their final gradients grads, and disarms it.
func (t *Tape) readyFinish(grads []Value) {
	r := &t.ready
	if r.on && len(r.order) == len(grads) {
		for _, k := range r.order { // unused parameters (first use -1) last
			if !r.fired[k] {
				r.f(r.ps[k], t.vals[grads[k].id].d)
			}
		}
	}
	r.readyEnd()
}

// readyEnd disarms the hook.
func (r *gradReady) readyEnd() { r.on, r.ps = false, nil }

// grow returns s resized to n, reusing its array when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
