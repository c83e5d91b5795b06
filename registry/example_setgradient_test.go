package registry_test

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// softplusKernel computes y = log(1 + exp(x)).
func softplusKernel(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	x, y := registry.Elems[float64](in[0]), registry.Elems[float64](out)
	for i, v := range x {
		y[i] = math.Log1p(math.Exp(v))
	}
	return kc.Results(out), nil
}

// A gradient function builds the gradient by applying registered ops
// through the Emitter it is given, here with package forward's typed
// builders: dy · sigmoid(x). On a tape that records the backward pass, the
// gradient is itself differentiable, so second derivatives work too.
func ExampleSetGradient() {
	registry.MustRegister(&registry.OpDef{
		Name:    "example.Softplus",
		Inputs:  []registry.Arg{{Name: "x"}},
		Outputs: []registry.Arg{{Name: "y"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: softplusKernel},
	})
	err := registry.SetGradient("example.Softplus", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		grads := e.Values(1) // one per input, from the emitter: no allocation
		grads[0] = forward.Mul(e, dy[0], forward.Sigmoid(e, n.Inputs()[0]))
		return grads, nil
	})
	fmt.Println(err)

	tape := autodiff.NewTape()
	x := tape.Watch(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0, math.Log(3)})))
	y := tape.Apply("example.Softplus", nil, x)[0]
	d1, _ := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: true})
	d2, _ := tape.Grad(d1, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	g1, _ := d1[0].Float64s() // sigmoid(x)
	g2, _ := d2[0].Float64s() // sigmoid(x)·(1 − sigmoid(x))
	fmt.Printf("%.4f %.4f\n", g1, g2)
	// Output:
	// <nil>
	// [0.5000 0.7500] [0.2500 0.1875]
}
