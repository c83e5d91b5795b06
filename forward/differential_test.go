package forward_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"

	_ "github.com/tapegrad/tapegrad/autodiff" // registers every op, the gradient ops of package backward included
)

// The float32-vs-float64 differential test (docs/ARCHITECTURE.md, validation): float64
// gradient checks never run the float32 kernels (nor their assembly
// paths), so every op with float32 and float64 kernels and a Samples
// generator runs each sample twice, on the same float32-representable
// inputs, and the float32 outputs must match the float64 ones within a
// tolerance derived from the float64 result's magnitude.

// diffOptOut lists the ops excluded from the differential test, each with
// the reason. Keep it empty unless an op's float32 and float64 results
// legitimately differ by more than rounding.
var diffOptOut = map[string]string{}

// Tolerance of the float32 result against the float64 one, per output:
// |o32 − o64| <= diffAtolScale·max|o64| + diffAtol + diffRtol·|o64|.
const (
	diffAtolScale = 1e-4
	diffAtol      = 1e-5
	diffRtol      = 1e-3
)

// diffThreads is the kernels' thread budget (more than one, to exercise
// the parallel paths).
const diffThreads = 3

// runOp runs def on in with a fresh kernel context: NaN-filled buffers,
// threads goroutines, and a random source seeded identically every time
// (so ops drawing random numbers see the same ones in every run).
func runOp(def *registry.OpDef, attrs any, in []*tensor.Dense, threads int) ([]*tensor.Dense, error) {
	return registry.Run(def, registrytest.SeededKC(threads, 1), attrs, in)
}

// roundInputs returns the sample's inputs with every float tensor rounded
// to float32: as float32 tensors (in32) and as float64 tensors holding the
// same values (in64). Other dtypes are shared unchanged.
func roundInputs(in []*tensor.Dense) (in32, in64 []*tensor.Dense, err error) {
	in32 = make([]*tensor.Dense, len(in))
	in64 = make([]*tensor.Dense, len(in))
	for j, d := range in {
		if d == nil {
			return nil, nil, fmt.Errorf("input %d is nil", j)
		}
		c, err := tensorx.Contiguous(d)
		if err != nil {
			return nil, nil, fmt.Errorf("input %d: %w", j, err)
		}
		if c.Dtype() != tensor.Float32 && c.Dtype() != tensor.Float64 {
			in32[j], in64[j] = c, c
			continue
		}
		v, err := tensorx.Float64s(c)
		if err != nil {
			return nil, nil, err
		}
		v32 := make([]float32, len(v))
		for i, x := range v {
			v32[i] = float32(x)
			v[i] = float64(v32[i])
		}
		if in32[j], err = tensorx.New(tensorx.Shape(c), v32); err != nil {
			return nil, nil, err
		}
		if in64[j], err = tensorx.New(tensorx.Shape(c), v); err != nil {
			return nil, nil, err
		}
	}
	return in32, in64, nil
}

// diffSample runs sample s of def in float32 and float64 and compares.
func diffSample(def *registry.OpDef, s registry.Sample) error {
	in32, in64, err := roundInputs(s.Inputs)
	if err != nil {
		return err
	}
	out64, err := runOp(def, s.Attrs, in64, diffThreads)
	if err != nil {
		return fmt.Errorf("float64 run: %w", err)
	}
	out32, err := runOp(def, s.Attrs, in32, diffThreads)
	if err != nil {
		return fmt.Errorf("float32 run: %w", err)
	}
	if len(out32) != len(out64) {
		return fmt.Errorf("%d outputs in float32, %d in float64", len(out32), len(out64))
	}
	for i := range out64 {
		if err := diffOutput(out32[i], out64[i]); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
	}
	return nil
}

// diffOutput compares one float32-run output with its float64-run twin.
func diffOutput(o32, o64 *tensor.Dense) error {
	if !tensorx.SameShape(o32.Shape(), o64.Shape()) {
		return fmt.Errorf("shape %v in float32, %v in float64", o32.Shape(), o64.Shape())
	}
	a, err := tensorx.Float64s(o32)
	if err != nil {
		return err
	}
	b, err := tensorx.Float64s(o64)
	if err != nil {
		return err
	}
	exact := !isFloat(o32.Dtype()) || !isFloat(o64.Dtype())
	scale := 0.0
	for _, x := range b {
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			scale = math.Max(scale, math.Abs(x))
		}
	}
	atol := diffAtolScale*scale + diffAtol
	worst, bad, worstExcess := -1, 0, 0.0
	for e := range b {
		var ok bool
		var excess float64
		switch {
		case exact:
			ok = a[e] == b[e]
			excess = math.Abs(a[e] - b[e])
		case math.IsNaN(b[e]) || math.IsInf(b[e], 0) || math.IsNaN(a[e]) || math.IsInf(a[e], 0):
			ok = a[e] == b[e] || (math.IsNaN(a[e]) && math.IsNaN(b[e]))
			excess = math.Inf(1)
		default:
			tol := atol + diffRtol*math.Abs(b[e])
			excess = math.Abs(a[e]-b[e]) / tol
			ok = excess <= 1
		}
		if !ok {
			bad++
			if worst < 0 || excess > worstExcess {
				worst, worstExcess = e, excess
			}
		}
	}
	if bad == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d elements differ; worst at flat index %d: float32 %.9g, float64 %.17g (atol %.3g + rtol %.3g·|float64|%s)",
		bad, len(b), worst, a[worst], b[worst], atol, diffRtol, map[bool]string{true: ", exact for integer outputs"}[exact])
}

func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// differentialOps returns the registered ops the differential test covers.
func differentialOps(t *testing.T) []*registry.OpDef {
	var ops []*registry.OpDef
	for _, def := range registry.List() {
		_, k32 := def.Kernels[tensor.Float32]
		_, k64 := def.Kernels[tensor.Float64]
		if !k32 || !k64 || def.Samples == nil {
			continue
		}
		if reason, ok := diffOptOut[def.Name]; ok {
			t.Logf("%s opted out: %s", def.Name, reason)
			continue
		}
		ops = append(ops, def)
	}
	return ops
}

// TestFloat32VsFloat64 is the differential test over every registered op.
func TestFloat32VsFloat64(t *testing.T) {
	for _, def := range differentialOps(t) {
		t.Run(def.Name, func(t *testing.T) {
			samples, err := gradcheck.OpSamples(def, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range samples {
				t.Run(s.Name, func(t *testing.T) {
					if err := diffSample(def, s); err != nil {
						t.Errorf("%s sample %q: %v", def.Name, s.Name, err)
					}
				})
			}
		})
	}
}

// TestThreadCountInvariance checks the determinism promise (docs/ARCHITECTURE.md) on the
// same samples: float64 results are bit-identical for 1 and 4 threads.
func TestThreadCountInvariance(t *testing.T) {
	for _, def := range differentialOps(t) {
		t.Run(def.Name, func(t *testing.T) {
			samples, err := gradcheck.OpSamples(def, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range samples {
				t.Run(s.Name, func(t *testing.T) {
					_, in64, err := roundInputs(s.Inputs)
					if err != nil {
						t.Fatal(err)
					}
					o1, err1 := runOp(def, s.Attrs, in64, 1)
					o4, err4 := runOp(def, s.Attrs, in64, 4)
					if err1 != nil || err4 != nil {
						t.Fatalf("errors: %v / %v", err1, err4)
					}
					for i := range o1 {
						a, _ := tensorx.Float64s(o1[i])
						b, _ := tensorx.Float64s(o4[i])
						for e := range a {
							if math.Float64bits(a[e]) != math.Float64bits(b[e]) && !(math.IsNaN(a[e]) && math.IsNaN(b[e])) {
								t.Fatalf("output %d element %d: %.17g with 1 thread, %.17g with 4", i, e, a[e], b[e])
							}
						}
					}
				})
			}
		})
	}
}

// TestDifferentialDetects checks the comparison itself on unregistered
// test ops: a correct float32 kernel passes; a float32 kernel off by 1%,
// one that leaves an output element unwritten, and one returning the
// wrong shape are caught.
func TestDifferentialDetects(t *testing.T) {
	mk := func(f32 func(x, out []float32), shape32 func([]int) []int) *registry.OpDef {
		k64 := func(_ *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
			x, err := tensorx.Slice[float64](in[0])
			if err != nil {
				return nil, err
			}
			out := make([]float64, len(x))
			for i, v := range x {
				out[i] = math.Exp(v) * 100
			}
			d, err := tensorx.New(tensorx.Shape(in[0]), out)
			return []*tensor.Dense{d}, err
		}
		k32 := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
			x, err := tensorx.Slice[float32](in[0])
			if err != nil {
				return nil, err
			}
			o, err := kc.Output(tensor.Float32, shape32(tensorx.Shape(in[0]))...)
			if err != nil {
				return nil, err
			}
			f32(x, o.Float32s())
			return []*tensor.Dense{o}, nil
		}
		return &registry.OpDef{Name: "difftest.Exp100", Inputs: []registry.Arg{{Name: "x"}}, Outputs: []registry.Arg{{Name: "y"}},
			Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64}}
	}
	same := func(s []int) []int { return s }
	exp := func(scale float32, skip int) func(x, out []float32) {
		return func(x, out []float32) {
			for i, v := range x {
				if i != skip {
					out[i] = float32(math.Exp(float64(v))) * 100 * scale
				}
			}
		}
	}
	x, err := tensorx.New([]int{2, 3}, []float64{0.1, -1.3, 2.7, 0.55, -0.25, 1.0 / 3})
	if err != nil {
		t.Fatal(err)
	}
	s := registry.Sample{Name: "x", Inputs: []*tensor.Dense{x}}
	if err := diffSample(mk(exp(1, -1), same), s); err != nil {
		t.Errorf("correct float32 kernel: %v", err)
	}
	if err := diffSample(mk(exp(1.01, -1), same), s); err == nil {
		t.Errorf("a 1%% error in the float32 kernel was not caught")
	}
	if err := diffSample(mk(exp(1, 4), same), s); err == nil {
		t.Errorf("an unwritten output element was not caught")
	}
	flat := func(s []int) []int { return []int{6} }
	if err := diffSample(mk(exp(1, -1), flat), s); err == nil {
		t.Errorf("a wrong output shape was not caught")
	}
	// A float32 kernel failing where the float64 one succeeds is reported.
	bad := mk(exp(1, -1), same)
	bad.Kernels[tensor.Float32] = func(*registry.KernelCtx, any, []*tensor.Dense) ([]*tensor.Dense, error) {
		return nil, registry.Errorf(registry.ErrUnimplemented, "difftest: no")
	}
	if err := diffSample(bad, s); !errors.Is(err, registry.ErrUnimplemented) {
		t.Errorf("float32 kernel error: got %v", err)
	}
	// The inputs of both runs are the same float32-representable values.
	in32, in64, err := roundInputs(s.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tensorx.Float64s(in32[0])
	b, _ := tensorx.Float64s(in64[0])
	for i := range a {
		if a[i] != b[i] || in32[0].Dtype() != tensor.Float32 || in64[0].Dtype() != tensor.Float64 {
			t.Fatalf("rounded inputs differ at %d: %v vs %v", i, a[i], b[i])
		}
	}
	if b[5] == 1.0/3 {
		t.Errorf("float64 run input not rounded to float32")
	}
}
