package autodiff

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// The ops the tape applies itself in the backward pass (the seed
// gradient, zero gradients and the sum of gradient contributions), looked
// up once: package forward registers them in its initialisation, which
// runs before this package's.
var (
	opOnesLike  = builtinOp(forward.OpOnesLike)
	opZerosLike = builtinOp(forward.OpZerosLike)
	opAddN      = builtinOp(forward.OpAddN)
)

// builtinOp returns the definition of the registered op name.
func builtinOp(name string) *registry.OpDef {
	d, err := registry.Lookup(name)
	if err != nil {
		panic("autodiff: built-in op " + name + " is not registered: " + err.Error())
	}
	return d
}
