package registry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

type badAttrs struct {
	X int // no tf tag
}

func noopKernel(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	out, err := kc.Zeros(tensor.Float64, 1)
	return []*tensor.Dense{out}, err
}

var kernels = map[tensor.Dtype]registry.Kernel{tensor.Float64: noopKernel}

func init() {
	registry.MustRegister(&registry.OpDef{Name: "regtest.Attrs", Outputs: []registry.Arg{{Name: "y"}},
		Attrs: attrsT{}, Kernels: kernels})
}

type attrsT struct {
	Strides    []int        `tf:"strides"`
	Padding    string       `tf:"padding" allowed:"SAME,VALID,EXPLICIT"`
	DataFormat string       `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW"`
	Dilations  []int        `tf:"dilations" default:"[1,1,1,1]"`
	NumBits    int          `tf:"num_bits" default:"8"`
	Training   *bool        `tf:"is_training" default:"true"`
	Epsilon    *float32     `tf:"epsilon" default:"0.0001"`
	Ratio      []float64    `tf:"pooling_ratio"`
	DstT       tensor.Dtype `tf:"DstT" default:"float32"`
}

func TestNormalizeDefaults(t *testing.T) {
	d, err := registry.Lookup("regtest.Attrs")
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.NormalizeAttrs(attrsT{Padding: "SAME"})
	if err != nil {
		t.Fatal(err)
	}
	got := a.(attrsT)
	if got.DataFormat != "NHWC" || len(got.Dilations) != 4 || got.NumBits != 8 || got.Training == nil || !*got.Training ||
		got.Epsilon == nil || *got.Epsilon != 0.0001 || got.DstT != tensor.Float32 {
		t.Fatalf("defaults not applied: %+v", got)
	}
	f := false
	a, _ = d.NormalizeAttrs(&attrsT{Padding: "VALID", Training: &f})
	if *a.(attrsT).Training {
		t.Fatal("explicit false overridden by the default")
	}
	if _, err := d.NormalizeAttrs(attrsT{Padding: "FULL"}); !errors.Is(err, registry.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "regtest.Attrs") {
		t.Fatalf("disallowed value: %v", err)
	}
	if _, err := d.NormalizeAttrs(badAttrs{}); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Fatalf("wrong attr type: %v", err)
	}
}

func TestParseAttrs(t *testing.T) {
	d, _ := registry.Lookup("regtest.Attrs")
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"strides":[1,2,2,1],"padding":"VALID","epsilon":0.001,"is_training":false,"T":"float32","pooling_ratio":[1,1.44,1.44,1],"DstT":"int32"}`), &m); err != nil {
		t.Fatal(err)
	}
	a, err := d.ParseAttrs(m)
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.NormalizeAttrs(a)
	if err != nil {
		t.Fatal(err)
	}
	got := n.(attrsT)
	if got.NumBits != 8 || got.DataFormat != "NHWC" {
		t.Fatalf("defaults of absent attrs not applied: %+v", got)
	}
	if got.Strides[1] != 2 || got.Padding != "VALID" || *got.Epsilon != 0.001 || *got.Training || got.Ratio[1] != 1.44 || got.DstT != tensor.Int32 {
		t.Fatalf("parsed %+v", got)
	}
	for _, bad := range []string{
		`{"strides":"x"}`, `{"strides":[1.5]}`, `{"nope":1}`, `{"padding":3}`, `{"DstT":"complex64"}`, `{"padding":"FULL"}`,
	} {
		json.Unmarshal([]byte(bad), &m)
		if _, err := d.ParseAttrs(m); !errors.Is(err, registry.ErrInvalidArgument) && !errors.Is(err, registry.ErrDtype) {
			t.Errorf("%s: err = %v", bad, err)
		}
		m = nil
	}
}

// An attr given explicitly keeps Go's zero value instead of the default,
// so a kernel can refuse it as TensorFlow does.
func TestParseAttrsExplicitZero(t *testing.T) {
	d, _ := registry.Lookup("regtest.Attrs")
	a, err := d.ParseAttrsExact(map[string]any{"num_bits": 0.0, "padding": "SAME"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.NormalizeAttrs(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.(attrsT).NumBits; got != 0 {
		t.Fatalf("explicit num_bits 0 became %d", got)
	}
	b, err := d.ParseAttrs(map[string]any{"num_bits": 0.0, "padding": "SAME"})
	if err != nil || b.(attrsT).NumBits != 8 {
		t.Fatalf("ParseAttrs (Go semantics): %+v, %v", b, err)
	}
	if _, err := d.NormalizeAttrs(registry.ParsedAttrs{Value: 3}); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Fatalf("wrong parsed type: %v", err)
	}
}

func TestRegisterValidation(t *testing.T) {
	cases := []*registry.OpDef{
		nil,
		{Name: ""},
		{Name: "regtest.NoKernels", Outputs: []registry.Arg{{Name: "y"}}},
		{Name: "regtest.NoOutputs", Kernels: kernels},
		{Name: "regtest.BadAttrs", Outputs: []registry.Arg{{Name: "y"}}, Kernels: kernels, Attrs: badAttrs{}},
		{Name: "regtest.Attrs", Outputs: []registry.Arg{{Name: "y"}}, Kernels: kernels}, // duplicate
		{Name: "regtest.Variadic", Inputs: []registry.Arg{{Name: "a", Variadic: true}, {Name: "b", Variadic: true}}, Outputs: []registry.Arg{{Name: "y"}}, Kernels: kernels},
	}
	for i, c := range cases {
		if err := registry.Register(c); err == nil {
			t.Errorf("case %d registered", i)
		}
	}
	if _, err := registry.Lookup("regtest.Missing"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Lookup missing: %v", err)
	}
}

func TestGradientStates(t *testing.T) {
	for _, n := range []string{"regtest.G1", "regtest.G2", "regtest.G3", "regtest.G4"} {
		registry.MustRegister(&registry.OpDef{Name: n, Outputs: []registry.Arg{{Name: "y"}}, Kernels: kernels})
	}
	if err := registry.Check(); err == nil || !strings.Contains(err.Error(), "regtest.G1") {
		t.Fatalf("Check with missing gradients: %v", err)
	}
	registry.MustNotDifferentiable("regtest.G1")
	registry.MustNoGradient("regtest.G2", "because")
	registry.MustSetGradient("regtest.G3", func(registry.Emitter, registry.Node, []registry.Value) ([]registry.Value, error) { return nil, nil })
	if err := registry.NoGradient("regtest.G4", ""); err == nil {
		t.Fatal("NoGradient without a reason accepted")
	}
	if err := registry.NotDifferentiable("regtest.G1"); err == nil {
		t.Fatal("second gradient state accepted")
	}
	registry.MustNotDifferentiable("regtest.G4")
	registry.MustNotDifferentiable("regtest.Attrs")
	d, _ := registry.Lookup("regtest.G2")
	if d.GradKind() != registry.GradNone || d.NoGradientReason() != "because" {
		t.Fatal("NoGradient state lost")
	}
}

func TestRunChecksKernelContract(t *testing.T) {
	bad := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) { return nil, nil }
	registry.MustRegister(&registry.OpDef{Name: "regtest.Bad", Inputs: []registry.Arg{{Name: "x"}}, Outputs: []registry.Arg{{Name: "y"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: bad}})
	registry.MustNotDifferentiable("regtest.Bad")
	d, _ := registry.Lookup("regtest.Bad")
	x := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1}))
	if _, err := registry.Run(d, nil, nil, []*tensor.Dense{x}); !errors.Is(err, registry.ErrInternal) {
		t.Fatalf("kernel returning no outputs: %v", err)
	}
	if _, err := registry.Run(d, nil, nil, nil); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Fatalf("missing inputs: %v", err)
	}
	y := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{1}))
	if _, err := registry.Run(d, nil, nil, []*tensor.Dense{y}); !errors.Is(err, registry.ErrDtype) {
		t.Fatalf("unsupported dtype: %v", err)
	}
}

// FuzzParseAttrs feeds arbitrary JSON attrs through the parser: it must
// return a value or an error, never panic.
func FuzzParseAttrs(f *testing.F) {
	f.Add(`{"strides":[1,2,2,1],"padding":"SAME"}`)
	f.Add(`{"epsilon":"NaN","is_training":true}`)
	f.Add(`{"dilations":[1e300],"num_bits":-1}`)
	f.Add(`{"DstT":"float64","pooling_ratio":[1,"Inf"]}`)
	d, err := registry.Lookup("regtest.Attrs")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		a, err := d.ParseAttrs(m)
		if err == nil {
			if _, err := d.NormalizeAttrs(a); err != nil {
				t.Fatalf("parsed attrs do not normalise: %v", err)
			}
		}
	})
}
