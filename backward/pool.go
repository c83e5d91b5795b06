package backward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/poolkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// The pooling gradient ops MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad
// and the gradients of the pooling family, as TensorFlow's nn_grad.py
// registers them (docs/spec/pool.md):
//
//   - MaxPool → MaxPoolGrad(x, y, dy): dy added at each window's first
//     maximum of x in row-major order (TensorFlow's CPU kernel, which
//     recomputes the argmax from x and reads only the shape of y).
//   - MaxPoolGrad → zeros for x and y (nil), MaxPoolGradGrad(x, y, g) for
//     its gradient input: g gathered at each window's first element equal
//     to y. MaxPoolGradGrad → zeros, zeros, MaxPoolGrad(x, y, g).
//   - AvgPool → AvgPoolGrad(shape(x), dy): dy/count spread over each
//     window's input elements. AvgPoolGrad → nothing for the shape,
//     AvgPool(g) for its gradient input.
//
// Every gradient forwards the op's attrs, so the whole family shares one
// attr type (forward.PoolAttrs).

func init() {
	registry.MustRegister(&registry.OpDef{Name: "MaxPoolGrad",
		Doc:    "output = grad added at the first maximum (row-major) of each MaxPool window of orig_input: the gradient of MaxPool",
		Inputs: args("orig_input", "orig_output", "grad"), Outputs: args("output"), Attrs: forward.PoolAttrs{},
		Kernels: floatKernels(maxPoolGradKernel[float32], maxPoolGradKernel[float64]),
		Samples: maxPoolGradSamples(false)})
	registry.MustRegister(&registry.OpDef{Name: "MaxPoolGradGrad",
		Doc:    "output = grad (shaped like orig_input) at the first element of each window equal to orig_output: the gradient of MaxPoolGrad",
		Inputs: args("orig_input", "orig_output", "grad"), Outputs: args("output"), Attrs: forward.PoolAttrs{},
		Kernels: floatKernels(maxPoolGradGradKernel[float32], maxPoolGradGradKernel[float64]),
		Samples: maxPoolGradSamples(true)})
	registry.MustRegister(&registry.OpDef{Name: "AvgPoolGrad",
		Doc:    "output (shape orig_input_shape) = each grad value divided by its window's input count, added over the window: the gradient of AvgPool",
		Inputs: args("orig_input_shape", "grad"), Outputs: args("output"), Attrs: forward.PoolAttrs{}, TypeInput: 1,
		Kernels: floatKernels(avgPoolGradKernel[float32], avgPoolGradKernel[float64]),
		Samples: avgPoolGradSamples})

	registry.MustSetGradient(forward.OpMaxPool, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(0) {
			return e.Values(1), nil
		}
		return vals(e, MaxPoolGrad(e, registry.NodeAttrs[forward.PoolAttrs](n), n.Inputs()[0], n.Outputs()[0], dy[0])), nil
	})
	registry.MustSetGradient(OpMaxPoolGrad, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(2) {
			return e.Values(3), nil
		}
		in := n.Inputs()
		return only(e, 3, 2, MaxPoolGradGrad(e, registry.NodeAttrs[forward.PoolAttrs](n), in[0], in[1], dy[0])), nil
	})
	registry.MustSetGradient(OpMaxPoolGradGrad, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(2) {
			return e.Values(3), nil
		}
		in := n.Inputs()
		return only(e, 3, 2, MaxPoolGrad(e, registry.NodeAttrs[forward.PoolAttrs](n), in[0], in[1], dy[0])), nil
	})
	registry.MustSetGradient(forward.OpAvgPool, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(0) {
			return e.Values(1), nil
		}
		x := n.Inputs()[0]
		return vals(e, AvgPoolGrad(e, registry.NodeAttrs[forward.PoolAttrs](n), e.Ints(x.Shape()...), dy[0])), nil
	})
	registry.MustSetGradient(OpAvgPoolGrad, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(1) {
			return e.Values(2), nil
		}
		return only(e, 2, 1, forward.AvgPool(e, registry.NodeAttrs[forward.PoolAttrs](n), dy[0])), nil
	})
}

// poolCheck validates a gradient op's tensor argument t (named name,
// input number i) against the 4-D shape want.
func poolCheck(op, name string, i int, t *tensor.Dense, dt tensor.Dtype, want [4]int) error {
	if t.Dtype() != dt {
		return registry.Errorf(registry.ErrDtype, "%s: input %d (%s) has dtype %v, expected %v", op, i, name, t.Dtype(), dt)
	}
	if len(t.Shape()) != 4 {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: %s must be 4-dimensional, got shape %s", op, name, shapeDebugString(t.Shape()))
	}
	if !tensorx.SameShape(t.Shape(), want[:]) {
		return registry.Errorf(registry.ErrInvalidArgument, "%s: Expected %s shape to be %s, but got %s", op, name, shapeDebugString(want[:]), shapeDebugString(t.Shape()))
	}
	return nil
}

// maxPoolGradCheck validates the inputs of MaxPoolGrad and
// MaxPoolGradGrad (grad shaped like orig_output, or like orig_input for
// MaxPoolGradGrad) and returns the geometry.
func maxPoolGradCheck(op string, attrs any, in []*tensor.Dense, gradLikeInput bool) (poolkern.Geom, error) {
	x := in[0]
	g, err := forward.ParsePool(op, attrs.(forward.PoolAttrs), x.Shape())
	if err != nil {
		return g, err
	}
	out := forward.PoolOutShape(g)
	if err := poolCheck(op, "orig_output", 1, in[1], x.Dtype(), out); err != nil {
		return g, err
	}
	want := out
	if gradLikeInput {
		copy(want[:], x.Shape())
	}
	return g, poolCheck(op, "grad", 2, in[2], x.Dtype(), want)
}

func maxPoolGradKernel[T poolkern.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	g, err := maxPoolGradCheck(OpMaxPoolGrad, attrs, in, false)
	if err != nil {
		return nil, err
	}
	out, err := like(kc, in[0])
	if err != nil {
		return nil, err
	}
	poolkern.MaxPoolGrad(kc.NumThreads(), data[T](out), data[T](in[0]), data[T](in[2]), g)
	return kc.Results(out), nil
}

func maxPoolGradGradKernel[T poolkern.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	g, err := maxPoolGradCheck(OpMaxPoolGradGrad, attrs, in, true)
	if err != nil {
		return nil, err
	}
	out, err := like(kc, in[1])
	if err != nil {
		return nil, err
	}
	poolkern.MaxPoolGradGrad(kc.NumThreads(), data[T](out), data[T](in[0]), data[T](in[1]), data[T](in[2]), g)
	return kc.Results(out), nil
}

func avgPoolGradKernel[T poolkern.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "AvgPoolGrad"
	st, dy := in[0], in[1]
	if len(st.Shape()) != 1 || st.Shape()[0] != 4 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: orig_input_shape must be 1-dimensional and 4 elements, got shape %s", op, shapeDebugString(st.Shape()))
	}
	var sbuf [4]int
	shape, err := tensorx.AppendInts(sbuf[:0], st)
	if err != nil {
		return nil, registry.Errorf(registry.ErrDtype, "%s: orig_input_shape must be an int32 or int64 vector, got %v", op, st.Dtype())
	}
	for _, d := range shape {
		if d < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: orig_input_shape %v has a negative dimension", op, shape)
		}
	}
	if _, err := tensorx.Numel(shape); err != nil {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %v", op, err)
	}
	g, err := forward.ParsePool(op, attrs.(forward.PoolAttrs), shape)
	if err != nil {
		return nil, err
	}
	if err := poolCheck(op, "grad", 1, dy, dy.Dtype(), forward.PoolOutShape(g)); err != nil {
		return nil, err
	}
	out, err := kc.Output(dy.Dtype(), shape...)
	if err != nil {
		return nil, err
	}
	poolkern.AvgPoolGrad(kc.NumThreads(), data[T](out), data[T](dy), g)
	return kc.Results(out), nil
}

// Samples of the gradient ops, on forward.PoolConfigs. Max pooling is
// piecewise linear: orig_input has values pairwise at least 0.04 apart,
// orig_output is its max pooling, and the ops are checked with respect to
// their gradient input only — perturbing orig_input alone would make
// MaxPoolGradGrad's comparison with orig_output fail (TensorFlow gives
// orig_input and orig_output zero gradient).

// maxPoolOf returns the max pooling of x under the attrs (float64).
func maxPoolOf(x *tensor.Dense, a forward.PoolAttrs) *tensor.Dense {
	g, err := forward.ParsePool("MaxPool", a, x.Shape())
	if err != nil {
		panic("backward: bad pooling sample: " + err.Error())
	}
	s := forward.PoolOutShape(g)
	y := make([]float64, s[0]*s[1]*s[2]*s[3])
	poolkern.MaxPool(1, y, tensorx.MustSlice[float64](x), g)
	return mustSample(tensorx.New(s[:], y))
}

// maxPoolGradSamples are the samples of MaxPoolGrad (gradGrad false) and
// MaxPoolGradGrad.
func maxPoolGradSamples(gradGrad bool) func(r *rand.Rand) []registry.Sample {
	return func(r *rand.Rand) []registry.Sample {
		var out []registry.Sample
		for _, c := range forward.PoolConfigs() {
			x := forward.SampleDistinct(r, c.Shape...)
			y := maxPoolOf(x, c.Attrs)
			gs := tensorx.Shape(y)
			if gradGrad {
				gs = c.Shape
			}
			out = append(out, registry.Sample{Name: c.Name, Attrs: c.Attrs,
				Inputs: []*tensor.Dense{x, y, forward.SampleNormal(r, gs...)}, Wrt: []int{2}})
		}
		return out
	}
}

// avgPoolGradSamples are the samples of AvgPoolGrad.
func avgPoolGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range forward.PoolConfigs() {
		g, err := forward.ParsePool("AvgPool", c.Attrs, c.Shape)
		if err != nil {
			panic("backward: bad pooling sample: " + err.Error())
		}
		s := forward.PoolOutShape(g)
		shape := make([]int32, 4)
		for i, d := range c.Shape {
			shape[i] = int32(d)
		}
		out = append(out, registry.Sample{Name: c.Name, Attrs: c.Attrs,
			Inputs: []*tensor.Dense{mustSample(tensorx.New([]int{4}, shape)), forward.SampleNormal(r, s[:]...)}})
	}
	return out
}
