package backward

import (
	"sync/atomic"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// sumToShape reduces g, the gradient of a broadcasting op's output, to the
// shape of an input that was broadcast to it (TensorFlow's
// reshape(reduce_sum(grad, rx), sx) with rx from BroadcastGradientArgs):
// it sums over the leading axes the input lacks and over the axes where the
// input has size 1 and g does not, then reshapes to shape. It applies only
// registered ops (Sum with keep_dims false, Reshape), so the result can be
// differentiated again. g is returned unchanged if it already has the
// shape; nil stays nil.
func sumToShape(e registry.Emitter, g registry.Value, shape []int) registry.Value {
	if g == nil {
		return nil
	}
	gs := g.Shape()
	if bcSameShape(gs, shape) {
		return g
	}
	lead := len(gs) - len(shape)
	var kbuf [tensorx.MaxRank]int
	kept := kbuf[:0]
	var mask uint64 // the summed axes
	for i, d := range gs {
		switch {
		case i < lead:
			mask |= 1 << i
		case lead >= 0 && shape[i-lead] == 1 && d != 1:
			mask |= 1 << i
		default:
			kept = append(kept, d)
		}
	}
	axes := axesList(mask)
	s := g
	if len(axes) > 0 {
		// sumAttrs: Sum's defaults (keep_dims false).
		s = forward.Sum(e, sumAttrs, g, e.Ints(axes...))
		if bcSameShape(kept, shape) {
			return s
		}
	}
	return forward.Reshape(e, s, e.Ints(shape...))
}

// bcSameShape reports whether two shapes are equal.
func bcSameShape[A, B ~[]int](a A, b B) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// axesCache holds the axis list of every set of axes below 8, by bit mask:
// shared, immutable slices that sumToShape hands to Emitter.Ints (which
// copies them), so that a broadcast gradient's reduction allocates
// nothing for its axes.
var axesCache [256]atomic.Pointer[[]int]

// axesList returns the sorted axes of the bit mask.
func axesList(mask uint64) []int {
	if mask < uint64(len(axesCache)) {
		if p := axesCache[mask].Load(); p != nil {
			return *p
		}
	}
	var axes []int
	for i := 0; mask>>i != 0; i++ {
		if mask&(1<<i) != 0 {
			axes = append(axes, i)
		}
	}
	if mask < uint64(len(axesCache)) {
		axesCache[mask].Store(&axes)
	}
	return axes
}
