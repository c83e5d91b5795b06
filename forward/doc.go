// Package forward holds tapegrad's forward kernels, one file per op family,
// and registers the ops (TensorFlow's names, attrs and defaults) with
// package registry. Kernels are pure functions of tensors and attrs,
// generic over float32 and float64; they know nothing of tapes.
//
// The attr struct of each op (Conv2DAttrs, MatMulAttrs, ...) is exported
// here; pass it to autodiff's typed op functions or to Tape.Apply.
package forward

//go:generate go run ../cmd/genops -pkg github.com/tapegrad/tapegrad/forward -o ops_gen.go
