package nn

import (
	"fmt"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// ReLU returns a module applying max(x, 0) (TensorFlow's Relu).
func ReLU() Module { return NewLambda("ReLU", autodiff.Relu) }

// ReLU6 returns a module applying min(max(x, 0), 6) (TensorFlow's Relu6).
func ReLU6() Module { return NewLambda("ReLU6", autodiff.Relu6) }

// Tanh returns a module applying tanh(x) (TensorFlow's Tanh).
func Tanh() Module { return NewLambda("Tanh", autodiff.Tanh) }

// Sigmoid returns a module applying 1/(1 + e^-x) (TensorFlow's Sigmoid).
func Sigmoid() Module { return NewLambda("Sigmoid", autodiff.Sigmoid) }

// stateless is a module without parameters or buffers.
type stateless struct{}

// Params returns nil: the module has no parameters.
func (stateless) Params() []*autodiff.Param { return nil }

// Buffers returns nil: the module has no buffers.
func (stateless) Buffers() []*Buffer { return nil }

// flatten reshapes [N, d1, d2, ...] to [N, d1·d2·...].
type flatten struct{ stateless }

// Flatten returns a module reshaping its input [N, d1, d2, ...] (rank >= 1)
// to [N, d1·d2·...] (TensorFlow's Reshape), e.g. between convolutions and
// Dense.
func Flatten() Module { return flatten{} }

func (flatten) String() string { return "Flatten" }

// Forward reshapes x to [N, rest].
func (flatten) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	if x.Err() != nil {
		return invalidInput(t, x)
	}
	s := x.Shape()
	if len(s) < 1 {
		return fail(t, registry.Errorf(registry.ErrShape, "nn.Flatten: input must have rank >= 1, got shape %v", s))
	}
	n := 1
	for _, d := range s[1:] {
		n *= d
	}
	return autodiff.Reshape(x, s[0], n)
}

// globalAvgPool averages over the spatial axes.
type globalAvgPool struct {
	stateless
	format string
	axes   []int
	err    error
}

// GlobalAvgPool returns a module averaging its 4-D input over the spatial
// axes (TensorFlow's Mean over H and W): [N, H, W, C] to [N, C] for
// dataFormat "NHWC" (or ""), [N, C, H, W] to [N, C] for "NCHW".
func GlobalAvgPool(dataFormat string) Module {
	g := &globalAvgPool{format: dataFormat}
	switch dataFormat {
	case "", "NHWC":
		g.format, g.axes = "NHWC", []int{1, 2}
	case "NCHW":
		g.axes = []int{2, 3}
	default:
		g.err = configError("nn.GlobalAvgPool: data format must be NHWC or NCHW, got %q", dataFormat)
	}
	return g
}

func (g *globalAvgPool) String() string { return "GlobalAvgPool(" + g.format + ")" }

// Err returns the configuration error, or nil.
func (g *globalAvgPool) Err() error { return g.err }

// Forward returns the mean over the spatial axes.
func (g *globalAvgPool) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	if g.err != nil {
		return fail(t, g.err)
	}
	if x.Err() != nil {
		return invalidInput(t, x)
	}
	if len(x.Shape()) != 4 {
		return fail(t, registry.Errorf(registry.ErrShape, "nn.GlobalAvgPool: input must be 4-D, got shape %v", x.Shape()))
	}
	return autodiff.Mean(x, g.axes, false)
}

// Dropout zeroes each element of its input with probability Rate in
// training and scales the others by 1/(1−Rate), so the expected value is
// unchanged (inverted dropout, as tf.nn.dropout); in evaluation it is the
// identity. The mask is drawn from the tape's seeded random source
// (autodiff.Seed) by the tapegrad.DropoutMask op, so a run is reproducible;
// the gradient is the upstream gradient times the same mask.
type Dropout struct {
	stateless
	// Rate is the probability of dropping an element, in [0, 1).
	Rate float64
}

// NewDropout returns a Dropout layer with the given rate, in [0, 1).
func NewDropout(rate float64) *Dropout { return &Dropout{Rate: rate} }

func (d *Dropout) String() string { return fmt.Sprintf("Dropout(%v)", d.Rate) }

// Err reports a rate outside [0, 1).
func (d *Dropout) Err() error {
	if !(d.Rate >= 0 && d.Rate < 1) {
		return configError("nn.Dropout: rate must be in [0, 1), got %v", d.Rate)
	}
	return nil
}

// Forward returns x times a fresh dropout mask in training, x otherwise.
func (d *Dropout) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	if err := d.Err(); err != nil {
		return fail(t, err)
	}
	if !t.IsTraining() || d.Rate == 0 {
		return x
	}
	mask := autodiff.ValueOf(DropoutMask(t.Emitter(), registry.NewAttrs(DropoutMaskAttrs{Rate: d.Rate}), t.Ref(x)))
	return autodiff.Mul(x, mask)
}

// SparseSoftmaxCrossEntropy returns the mean over the batch of the
// softmax cross-entropy of logits [batch, classes] with the integer labels
// [batch] (int32 or int64 class indices), a scalar: TensorFlow's
// SparseSoftmaxCrossEntropyWithLogits followed by Mean, as Keras's
// SparseCategoricalCrossentropy(from_logits=True) with its default
// reduction.
func SparseSoftmaxCrossEntropy(logits, labels autodiff.Value) autodiff.Value {
	loss, _ := autodiff.SparseSoftmaxCrossEntropy(logits, labels)
	return autodiff.Mean(loss, []int{0}, false)
}

// MSE returns the mean squared error mean((pred − target)²) over every
// element, a scalar (target broadcasts to pred's shape). For targets of
// pred's shape this is Keras's MeanSquaredError with its default reduction.
func MSE(pred, target autodiff.Value) autodiff.Value {
	return autodiff.Mean(autodiff.Square(autodiff.Sub(pred, target)), nil, false)
}

// invalidInput records the error of an unusable input x on t (the tape's
// own message: a zero Value, a Value of another tape or used after Reset,
// or the tape's earlier error) and returns a poisoned value.
func invalidInput(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.ValueOf(forward.Identity(t.Emitter(), t.Ref(x)))
}
