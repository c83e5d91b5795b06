package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

func init() {
	registry.MustSetGradient(forward.OpIdentity, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return vals(e, dy[0]), nil
	})
	registry.MustNotDifferentiable(forward.OpStopGradient)
	registry.MustNotDifferentiable(forward.OpZerosLike)
	registry.MustNotDifferentiable(forward.OpOnesLike)
	// AddN: every input gets the upstream gradient.
	registry.MustSetGradient(forward.OpAddN, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		out := e.Values(len(n.Inputs()))
		for i := range out {
			if n.NeedsGrad(i) {
				out[i] = dy[0]
			}
		}
		return out, nil
	})
}
