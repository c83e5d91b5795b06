package registry_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

func init() {
	// regtest.Layout(x, y) -> (x + 10·y) elementwise, same shape as x,
	// read straight from the backing arrays as kernels do.
	layout := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := kc.Output(tensor.Float64, in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		o := out.Float64s()
		x, y := in[0].Float64s(), in[1].Float64s()
		for i := range o {
			o[i] = x[i] + 10*y[i]
		}
		return kc.Results(out), nil
	}
	registry.MustRegister(&registry.OpDef{Name: "regtest.Layout", Inputs: []registry.Arg{{Name: "x"}, {Name: "y"}},
		Outputs: []registry.Arg{{Name: "z"}}, Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: layout}})
	registry.MustNotDifferentiable("regtest.Layout")
}

// TestRunCopiesViews: a gorgonia view (lazily transposed, or a sliced
// block that needs an iterator) given to Run gives the result of its
// materialised copy, and the caller's view is left as it was.
func TestRunCopiesViews(t *testing.T) {
	d, err := registry.Lookup("regtest.Layout")
	if err != nil {
		t.Fatal(err)
	}
	run := func(x, y *tensor.Dense) []float64 {
		t.Helper()
		out, err := registry.Run(d, nil, nil, []*tensor.Dense{x, y})
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Float64s()
	}
	newT := func(shape []int, v ...float64) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}

	// d.T() on a 2x3 tensor: a [3,2] view over [1 2 3; 4 5 6].
	x := newT([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	if err := x.T(); err != nil {
		t.Fatal(err)
	}
	if !x.RequiresIterator() {
		t.Fatal("x.T() is not a view")
	}
	y := newT([]int{3, 2}, 0, 0, 0, 0, 0, 1)
	xc := x.Materialize().(*tensor.Dense)
	want := run(xc, y) // [1 4; 2 5; 3 6] + 10·y
	if !slices.Equal(want, []float64{1, 4, 2, 5, 3, 16}) {
		t.Fatalf("materialised copy: got %v", want)
	}
	if got := run(x, y); !slices.Equal(got, want) {
		t.Errorf("transposed view (input 0): got %v, want %v (the materialised copy's)", got, want)
	}
	if got := run(y, x); !slices.Equal(got, run(y, xc)) {
		t.Errorf("transposed view (input 1): got %v, want %v", got, run(y, xc))
	}
	if !x.RequiresIterator() || !slices.Equal(x.Float64s(), []float64{1, 2, 3, 4, 5, 6}) {
		t.Error("Run changed the caller's view")
	}

	// A column block of a 3x3 tensor: [:, 1:3].
	big := newT([]int{3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	sv, err := big.Slice(nil, tensor.S(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	s := sv.(*tensor.Dense)
	zero := newT([]int{3, 2}, 0, 0, 0, 0, 0, 0)
	if got, want := run(s, zero), []float64{2, 3, 5, 6, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("column-sliced view: got %v, want %v", got, want)
	}
	// Rows 1:3 of a 3x2 tensor: a view at a non-zero offset.
	rows := newT([]int{3, 2}, 1, 2, 3, 4, 5, 6)
	rv, err := rows.Slice(tensor.S(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	z2 := newT([]int{2, 2}, 0, 0, 0, 0)
	if got, want := run(rv.(*tensor.Dense), z2), []float64{3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("row-sliced view: got %v, want %v", got, want)
	}
}

// TestRunRefusesMaskedInputs: a masked tensor is an error naming the op and
// the input.
func TestRunRefusesMaskedInputs(t *testing.T) {
	d, _ := registry.Lookup("regtest.Layout")
	x := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}, []bool{false, true}))
	y := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
	_, err := registry.Run(d, nil, nil, []*tensor.Dense{y, x})
	if !errors.Is(err, registry.ErrInvalidArgument) || err == nil || !strings.Contains(err.Error(), "regtest.Layout: input 1 (y)") {
		t.Fatalf("masked input: %v", err)
	}
}

// TestVariadicFirstInputNames: an op whose variadic input comes first
// (ConcatV2's values, axis) names the list and the inputs after it
// correctly in Run's input errors, and checks the input count.
func TestVariadicFirstInputNames(t *testing.T) {
	first := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := kc.Output(tensor.Float64, in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		copy(out.Float64s(), in[0].Float64s())
		return kc.Results(out), nil
	}
	d := &registry.OpDef{Name: "regtest.VariadicFirst", Inputs: []registry.Arg{{Name: "values", Variadic: true}, {Name: "axis"}},
		Outputs: []registry.Arg{{Name: "y"}}, Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: first}}
	registry.MustRegister(d)
	registry.MustNotDifferentiable(d.Name)
	if d.VariadicIndex() != 0 || !d.Variadic() {
		t.Fatalf("VariadicIndex %d Variadic %v", d.VariadicIndex(), d.Variadic())
	}
	plain := func() *tensor.Dense { return tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})) }
	masked := func() *tensor.Dense {
		return tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}, []bool{false, true}))
	}
	for _, c := range []struct {
		in   []*tensor.Dense
		want string
	}{
		{[]*tensor.Dense{plain(), masked(), plain()}, "input 1 (values)"},
		{[]*tensor.Dense{plain(), plain(), masked()}, "input 2 (axis)"},
		{[]*tensor.Dense{masked(), plain()}, "input 0 (values)"},
		{[]*tensor.Dense{plain()}, "expected at least 2 inputs, got 1"},
	} {
		_, err := registry.Run(d, nil, nil, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d inputs: err = %v, want %q", len(c.in), err, c.want)
		}
	}
}
