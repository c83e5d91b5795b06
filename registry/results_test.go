package registry_test

import (
	"reflect"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// defaultedAttrs has a default for every field, within its allowed list.
type defaultedAttrs struct {
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW"`
	NumBits    int    `tf:"num_bits" default:"8"`
}

// countingAlloc is an Allocator that recycles one tensor per shape and
// counts its calls.
type countingAlloc struct {
	pool  map[[2]int]*tensor.Dense
	calls int
}

func (a *countingAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	a.calls++
	var k [2]int
	copy(k[:], shape)
	if d, ok := a.pool[k]; ok {
		return d, nil
	}
	d, err := tensorx.Zeros(dt, shape)
	if err == nil {
		a.pool[k] = d
	}
	return d, err
}

func (a *countingAlloc) Release(*tensor.Dense) {}

func init() {
	registry.MustRegister(&registry.OpDef{Name: "regtest.Defaulted", Outputs: []registry.Arg{{Name: "y"}},
		Attrs: defaultedAttrs{}, Kernels: kernels})
	registry.MustNotDifferentiable("regtest.Defaulted")
	// regtest.Pair(x) -> (x+1, x+2), returned through KernelCtx.Results.
	pair := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, err := kc.Output(tensor.Float64, in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		b, err := kc.Output(tensor.Float64, 1, in[0].Shape()[0])
		if err != nil {
			return nil, err
		}
		for i, v := range in[0].Float64s() {
			a.Float64s()[i] = v + 1
			b.Float64s()[i] = v + 2
		}
		return kc.Results(a, b), nil
	}
	registry.MustRegister(&registry.OpDef{Name: "regtest.Pair", Inputs: []registry.Arg{{Name: "x"}},
		Outputs: []registry.Arg{{Name: "a"}, {Name: "b"}}, Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: pair}})
	registry.MustNotDifferentiable("regtest.Pair")
}

func TestNormalizeAttrsOfNormalAttrs(t *testing.T) {
	d, _ := registry.Lookup("regtest.Defaulted")
	def, err := d.NormalizeAttrs(nil)
	if err != nil || def != (defaultedAttrs{DataFormat: "NHWC", NumBits: 8}) {
		t.Fatalf("nil attrs: %#v, %v", def, err)
	}
	again, _ := d.NormalizeAttrs(nil)
	if again != def {
		t.Fatalf("nil attrs twice: %#v then %#v", def, again)
	}
	partial := defaultedAttrs{DataFormat: "NCHW"}
	n, err := d.NormalizeAttrs(partial)
	if err != nil || n != (defaultedAttrs{DataFormat: "NCHW", NumBits: 8}) || partial.NumBits != 0 {
		t.Fatalf("partial attrs: %#v, %v (input now %#v)", n, err, partial)
	}
	if n2, err := d.NormalizeAttrs(n); err != nil || n2 != n {
		t.Fatalf("normal attrs: %#v, %v", n2, err)
	}
	if _, err := d.NormalizeAttrs(defaultedAttrs{DataFormat: "NWHC", NumBits: 8}); err == nil {
		t.Fatal("a value outside the allowed list passed because no default was missing")
	}
	// The op whose defaults break an allowed list (padding has none)
	// still refuses nil attrs.
	a, _ := registry.Lookup("regtest.Attrs")
	if _, err := a.NormalizeAttrs(nil); err == nil {
		t.Fatal("regtest.Attrs: nil attrs accepted without a padding")
	}
	full, err := a.NormalizeAttrs(attrsT{Padding: "SAME"})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := a.NormalizeAttrs(full); err != nil || !reflect.DeepEqual(again, full) {
		t.Fatalf("normal attrs with slices and pointers: %#v, %v", again, err)
	}
}

func TestRunResultsBelongToTheCaller(t *testing.T) {
	d, _ := registry.Lookup("regtest.Pair")
	kc := &registry.KernelCtx{Alloc: &countingAlloc{pool: map[[2]int]*tensor.Dense{}}}
	x1 := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
	x2 := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
	r1, err := registry.Run(d, kc, nil, []*tensor.Dense{x1})
	if err != nil {
		t.Fatal(err)
	}
	a1, b1 := r1[0], r1[1]
	r2, err := registry.Run(d, kc, nil, []*tensor.Dense{x2})
	if err != nil {
		t.Fatal(err)
	}
	if r1[0] != a1 || r1[1] != b1 || r2[0] == a1 {
		t.Fatal("a second Run changed the first one's result slice")
	}
	if got := r1[1].Float64s(); got[0] != 3 || got[1] != 4 || !tensorx.SameShape(r1[1].Shape(), []int{1, 2}) {
		t.Fatalf("output b: %v %v", r1[1].Shape(), got)
	}
	// Results with an allocator reuse the context's slice; without one
	// they are fresh.
	if s1, s2 := kc.Results(a1), kc.Results(b1); &s1[0] != &s2[0] || s2[0] != b1 {
		t.Fatal("Results with an allocator did not reuse its slice")
	}
	var bare registry.KernelCtx
	if s1, s2 := bare.Results(a1), bare.Results(b1); &s1[0] == &s2[0] || s1[0] != a1 {
		t.Fatal("Results without an allocator shared a slice")
	}
}
