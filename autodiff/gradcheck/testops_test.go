package gradcheck_test

import (
	"math"
	"sync/atomic"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Test ops with their own kernels and gradients, some deliberately wrong,
// registered under the "gradchecktest." prefix (only in this test binary).

// CubeAttrs parametrise the gradient of gradchecktest.Cube's gradient:
// GGScale is the factor of d(CubeGrad)/dx (correct: 6), GUScale that of
// d(CubeGrad)/d(dy) (correct: 3).
type CubeAttrs struct {
	GGScale float64 `tf:"gg_scale" default:"6"`
	GUScale float64 `tf:"gu_scale" default:"3"`
}

// ScaleAttrs hold a scale factor.
type ScaleAttrs struct {
	Scale float64 `tf:"scale" default:"1"`
}

// PairAttrs: Bad > 0 corrupts d(a+b)/db at flat element Bad-1; BadJoint
// corrupts element 0 only when both outputs receive a gradient.
type PairAttrs struct {
	Bad      int  `tf:"bad"`
	BadJoint bool `tf:"bad_joint"`
}

// STEAttrs: Lo and Hi bound the straight-through window; Leak makes the
// gradient pass outside it too (wrong).
type STEAttrs struct {
	Lo   float64 `tf:"lo" default:"-2"`
	Hi   float64 `tf:"hi" default:"2"`
	Leak bool    `tf:"leak"`
}

var noiseCounter atomic.Int64

// ew builds float32/float64 kernels of an elementwise op with nout
// outputs: fn gets the attrs, the flat element index, the inputs' values
// at that element, and writes the outputs' values.
func ew(nout int, fn func(attrs any, e int, x, y []float64)) map[tensor.Dtype]registry.Kernel {
	k := func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		dt := in[0].Dtype()
		vals := make([][]float64, len(in))
		for i, t := range in {
			if t.Dtype() != dt || !tensorx.SameShape(t.Shape(), in[0].Shape()) {
				return nil, registry.Errorf(registry.ErrShape, "gradchecktest: input %d is %v %v, want %v %v", i, t.Dtype(), t.Shape(), dt, in[0].Shape())
			}
			v, err := tensorx.Float64s(t)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		n := tensorx.Len(in[0])
		outs := make([][]float64, nout)
		for o := range outs {
			outs[o] = make([]float64, n)
		}
		x := make([]float64, len(in))
		y := make([]float64, nout)
		for e := 0; e < n; e++ {
			for i := range in {
				x[i] = vals[i][e]
			}
			fn(attrs, e, x, y)
			for o := range outs {
				outs[o][e] = y[o]
			}
		}
		res := make([]*tensor.Dense, nout)
		for o := range outs {
			var err error
			if dt == tensor.Float32 {
				s := make([]float32, n)
				for e, v := range outs[o] {
					s[e] = float32(v)
				}
				res[o], err = tensorx.New(in[0].Shape(), s)
			} else {
				res[o], err = tensorx.New(in[0].Shape(), outs[o])
			}
			if err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: k, tensor.Float64: k}
}

func args(names ...string) []registry.Arg {
	a := make([]registry.Arg, len(names))
	for i, n := range names {
		a[i].Name = n
	}
	return a
}

func op1(e registry.Emitter, name string, attrs any, in ...registry.Value) registry.Value {
	return e.Apply(name, attrs, in...)[0]
}

func init() {
	// ScaledProduct(x, y, z) = scale·x·y·z, with its exact gradient.
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.ScaledProduct", Inputs: args("x", "y", "z"), Outputs: args("p"),
		Attrs: ScaleAttrs{}, Kernels: ew(1, func(a any, _ int, x, y []float64) {
			y[0] = a.(ScaleAttrs).Scale * x[0] * x[1] * x[2]
		})})
	registry.MustSetGradient("gradchecktest.ScaledProduct", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		in := n.Inputs()
		a := n.Attrs()
		return []registry.Value{
			op1(e, "gradchecktest.ScaledProduct", a, in[1], in[2], dy[0]),
			op1(e, "gradchecktest.ScaledProduct", a, in[0], in[2], dy[0]),
			op1(e, "gradchecktest.ScaledProduct", a, in[0], in[1], dy[0]),
		}, nil
	})

	// Cube(x) = x³; its gradient is CubeGrad(x, dy) = 3x²·dy, whose own
	// gradient uses the factors in CubeAttrs (wrong unless 6 and 3).
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.Cube", Inputs: args("x"), Outputs: args("y"),
		Attrs: CubeAttrs{}, Kernels: ew(1, func(_ any, _ int, x, y []float64) { y[0] = x[0] * x[0] * x[0] })})
	registry.MustSetGradient("gradchecktest.Cube", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{op1(e, "gradchecktest.CubeGrad", n.Attrs(), n.Inputs()[0], dy[0])}, nil
	})
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.CubeGrad", Inputs: args("x", "dy"), Outputs: args("dx"),
		Attrs: CubeAttrs{}, Kernels: ew(1, func(_ any, _ int, x, y []float64) { y[0] = 3 * x[0] * x[0] * x[1] })})
	registry.MustSetGradient("gradchecktest.CubeGrad", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		a := n.Attrs().(CubeAttrs)
		x, g := n.Inputs()[0], n.Inputs()[1]
		return []registry.Value{
			op1(e, "gradchecktest.ScaledProduct", ScaleAttrs{Scale: a.GGScale}, x, g, dy[0]),
			op1(e, "gradchecktest.ScaledProduct", ScaleAttrs{Scale: a.GUScale}, x, x, dy[0]),
		}, nil
	})

	// BadSquare(x) = x², with gradient 2.5·x·dy (off by a factor 1.25).
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.BadSquare", Inputs: args("x"), Outputs: args("y"),
		Kernels: ew(1, func(_ any, _ int, x, y []float64) { y[0] = x[0] * x[0] })})
	registry.MustSetGradient("gradchecktest.BadSquare", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		x := n.Inputs()[0]
		ones := op1(e, "OnesLike", nil, x)
		return []registry.Value{op1(e, "gradchecktest.ScaledProduct", ScaleAttrs{Scale: 2.5}, x, dy[0], ones)}, nil
	})

	// Pair(a, b) = (a·b, a+b); PairGrad(a, b, dy0, dy1) = (b·dy0+dy1,
	// a·dy0+dy1), corrupted as PairAttrs say.
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.Pair", Inputs: args("a", "b"), Outputs: args("prod", "sum"),
		Attrs: PairAttrs{}, Kernels: ew(2, func(_ any, _ int, x, y []float64) { y[0], y[1] = x[0]*x[1], x[0]+x[1] })})
	registry.MustSetGradient("gradchecktest.Pair", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		a := n.Attrs().(PairAttrs)
		in, out := n.Inputs(), n.Outputs()
		if a.BadJoint && dy[0] != nil && dy[1] != nil {
			a.Bad = 1
		}
		d := make([]registry.Value, 2)
		for i := range d {
			d[i] = dy[i]
			if d[i] == nil {
				d[i] = op1(e, "ZerosLike", nil, out[i])
			}
		}
		g := e.Apply("gradchecktest.PairGrad", PairAttrs{Bad: a.Bad}, in[0], in[1], d[0], d[1])
		return g, nil
	})
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.PairGrad", Inputs: args("a", "b", "dy0", "dy1"), Outputs: args("da", "db"),
		Attrs: PairAttrs{}, Kernels: ew(2, func(at any, e int, x, y []float64) {
			y[0] = x[1]*x[2] + x[3]
			y[1] = x[0]*x[2] + x[3]
			if e == at.(PairAttrs).Bad-1 {
				y[1] += 0.5 * x[3]
			}
		})})
	// PairGrad's gradient (exact when Bad is 0).
	registry.MustSetGradient("gradchecktest.PairGrad", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		in := n.Inputs()
		a, b, dy0 := in[0], in[1], in[2]
		w := make([]registry.Value, 2)
		for i := range w {
			w[i] = dy[i]
			if w[i] == nil {
				w[i] = op1(e, "ZerosLike", nil, n.Outputs()[i])
			}
		}
		ones := op1(e, "OnesLike", nil, a)
		mul := func(x, y registry.Value) registry.Value {
			return op1(e, "gradchecktest.ScaledProduct", nil, x, y, ones)
		}
		return []registry.Value{
			mul(dy0, w[1]),
			mul(dy0, w[0]),
			op1(e, "AddN", nil, mul(b, w[0]), mul(a, w[1])),
			op1(e, "AddN", nil, w[0], w[1]),
		}, nil
	})

	// Noise(x) = x + scale·(a counter that increases at every run): a
	// nondeterministic op. Its gradient is exact.
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.Noise", Inputs: args("x"), Outputs: args("y"),
		Attrs: ScaleAttrs{}, Kernels: ew(1, func(a any, e int, x, y []float64) {
			y[0] = x[0]
			if e == 0 {
				y[0] += a.(ScaleAttrs).Scale * float64(noiseCounter.Add(1))
			}
		})})
	registry.MustSetGradient("gradchecktest.Noise", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{op1(e, "Identity", nil, dy[0])}, nil
	})
	// NoisyGrad(x) = x, deterministic, but its gradient goes through Noise.
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.NoisyGrad", Inputs: args("x"), Outputs: args("y"),
		Attrs: ScaleAttrs{}, Kernels: ew(1, func(_ any, _ int, x, y []float64) { y[0] = x[0] })})
	registry.MustSetGradient("gradchecktest.NoisyGrad", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{op1(e, "gradchecktest.Noise", n.Attrs(), dy[0])}, nil
	})

	// Quantize(x) = clamp(round(x), lo, hi) with a straight-through
	// gradient: dy inside [lo, hi], 0 outside (everywhere if Leak).
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.Quantize", Inputs: args("x"), Outputs: args("y"),
		Attrs: STEAttrs{}, Kernels: ew(1, func(at any, _ int, x, y []float64) {
			a := at.(STEAttrs)
			y[0] = math.Min(math.Max(math.Round(x[0]), a.Lo), a.Hi)
		})})
	registry.MustSetGradient("gradchecktest.Quantize", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{op1(e, "gradchecktest.QuantizeGrad", n.Attrs(), n.Inputs()[0], dy[0])}, nil
	})
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.QuantizeGrad", Inputs: args("x", "dy"), Outputs: args("dx"),
		Attrs: STEAttrs{}, Kernels: ew(1, func(at any, _ int, x, y []float64) {
			a := at.(STEAttrs)
			y[0] = 0
			if a.Leak || (x[0] >= a.Lo && x[0] <= a.Hi) {
				y[0] = x[1]
			}
		})})
	registry.MustNoGradient("gradchecktest.QuantizeGrad", "test op: only first-order checks use it")

	// Clip(x) = clamp(x, lo, hi): the function whose derivative Quantize's
	// straight-through gradient is.
	registry.MustRegister(&registry.OpDef{Name: "gradchecktest.Clip", Inputs: args("x"), Outputs: args("y"),
		Attrs: STEAttrs{}, Kernels: ew(1, func(at any, _ int, x, y []float64) {
			a := at.(STEAttrs)
			y[0] = math.Min(math.Max(x[0], a.Lo), a.Hi)
		})})
	registry.MustNoGradient("gradchecktest.Clip", "test op: only its finite differences are used")
}
