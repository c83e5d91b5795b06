package nn

import (
	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/registry"
)

// layerOp is an op a layer applies on every Forward, with its attrs
// normalised (TensorFlow's defaults filled in) and boxed once, when the
// layer is built: applying it then costs no allocation for the attrs
// (the typed functions of package autodiff box their attr struct on each
// call, and fill the defaults into a fresh copy).
type layerOp struct {
	name  string
	attrs any
}

// newLayerOp returns op with attrs. Attrs the op refuses are kept as they
// are: the error is then reported on the tape by the first Forward, as the
// typed functions would report it.
func newLayerOp(op string, attrs any) layerOp {
	if def, err := registry.Lookup(op); err == nil {
		if a, err := def.NormalizeAttrs(attrs); err == nil {
			return layerOp{name: op, attrs: a}
		}
	}
	return layerOp{name: op, attrs: attrs}
}

// apply applies the op on t and returns its outputs.
func (o layerOp) apply(t *autodiff.Tape, in ...autodiff.Value) []autodiff.Value {
	return t.Apply(o.name, o.attrs, in...)
}
