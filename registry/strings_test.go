package registry_test

import (
	"fmt"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

func TestGradKindString(t *testing.T) {
	for k, want := range map[registry.GradKind]string{
		registry.GradUnset: "GradUnset", registry.GradDefined: "GradDefined",
		registry.GradZero: "GradZero", registry.GradNone: "GradNone", 7: "GradKind(7)",
	} {
		if got := fmt.Sprint(k); got != want {
			t.Errorf("%d prints as %q, want %q", int(k), got, want)
		}
	}
}

func TestElems(t *testing.T) {
	s := tensor.New(tensor.WithShape(), tensor.WithBacking([]float32{2.5})) // a scalar
	if got := registry.Elems[float32](s); len(got) != 1 || got[0] != 2.5 {
		t.Errorf("Elems of a scalar = %v", got)
	}
	e := tensor.New(tensor.WithShape(0, 3), tensor.WithBacking([]float64{}))
	if got := registry.Elems[float64](e); len(got) != 0 {
		t.Errorf("Elems of an empty tensor = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Elems[float64] of a float32 tensor did not panic")
		}
	}()
	registry.Elems[float64](s)
}

func TestPtr(t *testing.T) {
	p := registry.Ptr(0.0)
	if p == nil || *p != 0 {
		t.Fatal("Ptr")
	}
}

func TestOpDefString(t *testing.T) {
	d := &registry.OpDef{Name: "stringstest.Op", Inputs: []registry.Arg{{Name: "x"}}, Outputs: []registry.Arg{{Name: "y"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: func(*registry.KernelCtx, any, []*tensor.Dense) ([]*tensor.Dense, error) { return nil, nil }}}
	if got := fmt.Sprint(d); got != "stringstest.Op(x) -> (y)" {
		t.Errorf("OpDef prints as %q", got)
	}
}
