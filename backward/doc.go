// Package backward holds tapegrad's gradient kernels (TensorFlow's
// *Grad/*Backprop* ops, themselves registered ops) and attaches the
// gradient function of every op, one file per op family. Gradient
// functions build their results by applying registered ops through a
// registry.Emitter, so recording the backward pass gives gradients of
// gradients.
//
// Import it for its side effect (package autodiff does):
//
//	import _ "github.com/tapegrad/tapegrad/backward"
package backward

//go:generate go run ../cmd/genops -pkg github.com/tapegrad/tapegrad/backward -o ops_gen.go
