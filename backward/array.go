package backward

import (
	"github.com/tapegrad/tapegrad/registry"

	_ "github.com/tapegrad/tapegrad/forward" // the forward ops must be registered first
)

func init() {
	registry.MustSetGradient("Identity", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return vals(e, dy[0]), nil
	})
	registry.MustNotDifferentiable("StopGradient")
	registry.MustNotDifferentiable("ZerosLike")
	registry.MustNotDifferentiable("OnesLike")
	// AddN: every input gets the upstream gradient.
	registry.MustSetGradient("AddN", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		out := e.Values(len(n.Inputs()))
		for i := range out {
			if n.NeedsGrad(i) {
				out[i] = dy[0]
			}
		}
		return out, nil
	})
}
