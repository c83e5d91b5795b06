package registry_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// ScaleAttrs is the attr struct of the example op: TensorFlow-style names in
// tf tags, defaults in default tags.
type ScaleAttrs struct {
	Factor float64 `tf:"factor" default:"2"`
}

func scaleKernel(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	f := attrs.(ScaleAttrs).Factor
	out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	x, y := registry.Elems[float64](in[0]), registry.Elems[float64](out)
	for i, v := range x {
		y[i] = f * v
	}
	return kc.Results(out), nil
}

// Register an op with its kernel and gradient, then run it directly.
func ExampleRegister() {
	err := registry.Register(&registry.OpDef{
		Name:    "example.Scale",
		Inputs:  []registry.Arg{{Name: "x"}},
		Outputs: []registry.Arg{{Name: "y"}},
		Attrs:   ScaleAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: scaleKernel},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The gradient of y = f*x is f*dy: built by applying the op itself, so it
	// is differentiable again.
	registry.MustSetGradient("example.Scale", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{e.Apply("example.Scale", n.Attrs(), dy[0])[0]}, nil
	})

	def, _ := registry.Lookup("example.Scale")
	fmt.Println(def.Describe())
	x := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
	out, err := registry.Run(def, nil, nil, []*tensor.Dense{x}) // nil attrs: all defaults
	fmt.Println(out[0].Float64s(), err)
	_, err = registry.Run(def, nil, map[string]int{}, []*tensor.Dense{x})
	fmt.Println(err)
	// Output:
	// example.Scale(x) -> (y) attrs {factor}
	// [2 4 6] <nil>
	// example.Scale: attrs must be registry_test.ScaleAttrs, got map[string]int
}
