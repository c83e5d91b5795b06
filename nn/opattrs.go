package nn

import (
	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/registry"
)

// Layers apply ops through the typed builders of package forward, with
// their attrs made once (registry.NewAttrs) when the layer is built:
// applying an op then costs no allocation for the attrs. Attrs the op
// refuses are reported on the tape by the first Forward.

// builder2 is a typed builder of a two-input, one-output op with attrs A.
type builder2[A any] = func(registry.Emitter, registry.Attrs[A], registry.Value, registry.Value) registry.Value

// apply2 applies b with attrs a to x and y on t.
func apply2[A any](t *autodiff.Tape, b builder2[A], a registry.Attrs[A], x, y autodiff.Value) autodiff.Value {
	return autodiff.ValueOf(b(t.Emitter(), a, t.Ref(x), t.Ref(y)))
}
