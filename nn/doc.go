// Package nn holds tapegrad's neural-network layers, built on the tape of
// package autodiff: a small Module interface (forward on a tape, named
// parameters, named buffers), layers (Dense, Conv2D, DepthwiseConv2D,
// SeparableConv2D, BatchNorm, LayerNorm, MaxPool2D, AvgPool2D,
// FractionalAvgPool, fake quantisation, ReLU, ReLU6, Tanh, Sigmoid,
// Flatten, GlobalAvgPool, Dropout), the Sequential container,
// initializers (Glorot and He, uniform and normal, with an explicit
// *rand.Rand) and NewParam for users' own layers, losses and checkpoints
// (which also carry a data loader's position: CheckpointState).
//
// A model is built once and run on a tape every step:
//
//	r := rand.New(rand.NewSource(1))
//	model := nn.NewSequential(
//		nn.NewConv2D(1, 8, 3, nn.ConvOpts{Padding: "SAME", Rand: r}),
//		nn.NewBatchNorm(8, nn.BatchNormOpts{}),
//		nn.ReLU(),
//		nn.GlobalAvgPool("NHWC"),
//		nn.NewDense(8, 10, nn.DenseOpts{Rand: r}),
//	)
//	if err := model.Err(); err != nil { ... } // a bad configuration
//	tape := autodiff.NewTape(autodiff.Training(true), autodiff.Seed(1))
//	for ... {
//		tape.Reset()
//		logits := model.Forward(tape, tape.Constant(x))
//		loss := nn.SparseSoftmaxCrossEntropy(logits, tape.Constant(labels))
//		if err := tape.Backward(loss); err != nil { ... }
//		// optimizer step on model.Params()
//	}
//
// # Modes
//
// The tape carries the mode (autodiff.Training, Tape.SetTraining): in
// training, BatchNorm normalises with the batch statistics and updates its
// running statistics, Dropout drops, FractionalAvgPool draws random pooling
// regions from the tape's seeded random source and the fake-quantisation
// layers update their ranges; in evaluation they use the stored state.
//
// # Errors
//
// Constructors never fail at the call site, so models can be written as one
// expression. A bad configuration (a negative size, an unknown padding) is
// kept in the layer, as the tape keeps its first error: Err reports it
// (Sequential reports the first error of its layers), and Forward records it
// on the tape, so that Backward and every later read return it. Errors in
// Forward (an input of the wrong shape or dtype) are the ops' own errors,
// on the tape. Nothing panics on user input.
//
// # Names
//
// Every parameter and buffer has a name: a layer names its own "weight",
// "bias", "moving_mean", ...; Sequential prefixes the names of its layers'
// parameters and buffers with the layer's index ("0.weight") or with the
// name given by Named ("conv1.weight"), so the names in a model are unique
// and deterministic. Checkpoints and optimizers key their state by them.
package nn
