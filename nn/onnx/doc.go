// Package onnx exports tapegrad models (the layers of package nn,
// composed with nn.Sequential and nn.Named) to ONNX, for ONNX Runtime and
// the other ONNX consumers: float32 models, and quantisation-aware trained
// models as int8 QDQ models.
//
//	err := onnx.WriteFile("model.onnx", model, onnx.Options{
//		InputShape: []int{28, 28, 1}, InputName: "input", OutputName: "logits"})
//
// The model is exported in evaluation mode: batch norm with its running
// statistics, FractionalAvgPool with its fixed evaluation grid, Dropout as
// the identity, fake quantisation with the stored ranges. The graph imports
// the standard operator set 13 (IR version 7); its input is float32
// [N, InputShape...] with a symbolic batch N (or Options.BatchSize), in
// the layout the Go model takes, and its output is the model's output in
// the Go layout. The protobuf types are the generated ones of
// github.com/advancedclimatesystems/gonnx/onnx.
//
// # How the exporter works
//
// The exporter walks the model's layers in order (through Sequential and
// Named) and runs each layer in Go on one all-zero example, so every
// layer's rule knows its input and output shapes; the rule adds the ONNX
// nodes computing the layer. A layer that cannot be exported fails the
// export with an error naming the layer by its path — the Sequential
// names from the model down, joined by ".", as in parameter names
// ("block.conv") — and its type; ErrNoRule for a layer without a rule,
// ErrUnsupported for a configuration ONNX cannot express here.
//
// # Layouts (NHWC)
//
// ONNX's Conv, BatchNormalization and pooling take channels-first tensors
// (NCHW); the library's layers default to NHWC. Each tensor of the graph
// carries a layout, the order of its axes relative to the Go tensor's: a
// convolution of an NHWC input transposes it to NCHW and leaves its output
// in NCHW; the layers after it that need the channels on axis 1 (batch
// norm, convolutions, the pooling) or do not care (activations, fake
// quantisation, Dropout) take it as it is, and a Transpose back is added
// only where a layer needs the Go order (Flatten, Dense, Softmax, the
// graph's output). A CNN like the example's has one Transpose after its
// input and one before its Flatten. Layers in NCHW (DataFormat "NCHW") need
// none.
//
// # The rules
//
//   - Conv2D → Conv (the HWIO filter as OIHW, group = in/filter-in,
//     TensorFlow's SAME/VALID/EXPLICIT padding as explicit pads);
//     DepthwiseConv2D → Conv with group = C and the filter [KH, KW, C, M]
//     as [C·M, 1, KH, KW]; SeparableConv2D → the two Convs.
//   - Dense → Gemm. Flatten → Flatten(axis 1) of the Go order.
//   - BatchNorm → BatchNormalization with the running statistics, not
//     folded into the preceding convolution: in a QAT model the
//     convolution's quantised kernel must stay the one trained (ONNX
//     Runtime folds BatchNormalization into a float Conv when it loads the
//     model).
//   - FractionalAvgPool → its evaluation grid is fixed (the op's
//     deterministic mode), so each output is the sum over its cell divided
//     by the cell's size: (R·X·C)/count with constant 0/1 matrices R
//     [OH, H] and C [W, OW] marking the cells' rows and columns and count
//     [OH, OW] the cells' sizes — MatMul, MatMul, Div on the NCHW layout.
//     This is the same arithmetic (sum, then divide), with the sum taken in
//     another order, so results agree to float32 rounding.
//   - GlobalAvgPool → ReduceMean over the spatial axes (in whatever layout
//     the input is). Dropout → nothing.
//   - MaxPool2D → MaxPool, AvgPool2D → AveragePool with count_include_pad
//     = 0, on the NCHW layout, TensorFlow's SAME padding as explicit pads
//     (the extra row or column after): padding is never part of a window
//     in either, and an average divides by the window's input elements,
//     as TensorFlow's AvgPool does.
//   - LayerNorm → opset 13 has no LayerNormalization: the layer's own
//     arithmetic, op for op — ReduceMean, Sub, Mul (the square),
//     ReduceMean, Add ε, Sqrt, Reciprocal, Mul, then Mul gamma and Add
//     beta — over the ONNX axis holding the Go tensor's last axis, in
//     whatever layout the input is. Reciprocal(Sqrt) rounds as Go's Rsqrt
//     does (1/sqrt in float32).
//   - Lambdas by their function (RegisterFunc): nn.ReLU → Relu, nn.ReLU6 →
//     Clip(0, 6), nn.Sigmoid and nn.Tanh (autodiff.Sigmoid, Tanh),
//     autodiff.Exp, Log, Neg, Sqrt → the ONNX op of the same name, Square → Mul, Rsqrt → Reciprocal(Sqrt), Softmax and
//     LogSoftmax → the ONNX op over the last axis.
//
// # Quantisation-aware trained models (QDQ)
//
// FakeQuantWeights → the wrapped layer's rule with its kernel stored as an
// INT8 initializer of codes and a DequantizeLinear along the output
// channel axis (per-channel float32 scales and int8 zero points). The
// layer evaluates with FakeQuantWithMinMaxVarsPerChannel of the kernel with
// the stored ranges, which gives, per channel, values j·scale (a float32
// product) for integers j in [quant_min − zp, quant_max − zp], scale and
// zp being TensorFlow's nudged scale and zero point (internal/fqkern.Nudge,
// the code Go itself evaluates with). The code is j + zp − 2^(bits−1) and
// the zero point zp − 2^(bits−1); DequantizeLinear computes (code − zero
// point)·scale = j·scale in float32: the kernel ONNX Runtime uses is the
// one Go uses, bit for bit (the exporter checks every element). TensorFlow's
// default weight grid (8 bits, narrow range, symmetric) gives zero point 0
// and codes in [−127, 127].
//
// FakeQuantActivation → QuantizeLinear then DequantizeLinear with the
// stored (or learned) range's nudged scale and a uint8 zero point zp; the
// QuantizeLinear/DequantizeLinear pairs and the DequantizeLinear'd kernels
// are the QDQ layout ONNX Runtime turns into integer kernels where its
// patterns match (e.g. DequantizeLinear → Gemm becomes MatMulNBits, which at
// its default accuracy level 4 also quantises the activations to int8).
// Where TensorFlow's grid and ONNX's types differ:
//
//   - A grid narrower than uint8's [0, 255] — narrow_range ([1, 255]) or
//     fewer than 8 bits ([0, 2^bits − 1]) — is not a type of ONNX, and
//     QuantizeLinear saturates to [0, 255] only; the exporter adds a Clip
//     to the nudged [min, max] before QuantizeLinear, which makes the grid
//     exactly TensorFlow's (TestNarrowGridNeedsClip shows the difference
//     without it).
//   - Rounding: TensorFlow rounds x/scale half up (floor(v + 0.5)),
//     QuantizeLinear half to even. An input exactly halfway between two
//     grid values for an even lower index quantises one step lower in ONNX
//     (TestRoundingTies); TensorFlow also computes (x − nudged_min)/scale,
//     ONNX x/scale + zp, which can put an input within float32 rounding of
//     a half on the other side. The layer tests' random inputs hit
//     neither; over the 10000 test images of the example's QAT model such
//     one-step differences move the logits by up to 0.2% of the largest,
//     the predictions agreeing on every image.
//   - More than 8 bits have no integer type in opset 13's QuantizeLinear
//     and DequantizeLinear (int16 needs opset 21): such layers fail with
//     ErrUnsupported.
//
// # Your own layers
//
// Register a rule for a layer type (Register, keyed by the Go type, or by
// an interface type its layers implement), implement Exporter on the
// layer, or register a Lambda's function (RegisterFunc). A rule builds its
// nodes with the Builder: In and InPerm give the input in the Go order or
// another layout, Node adds an ONNX node, Float32 and Param add
// initializers, Module exports a sub-module, Out and OutPerm make the
// output. The rules of package nn's layers (rules.go, rules_pool_norm.go)
// are written the same way.
package onnx
