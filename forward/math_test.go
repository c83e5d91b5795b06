package forward

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// mtClose compares got with want at relative tolerance rtol (plus rtol as
// absolute tolerance near zero); NaNs must match NaNs.
func mtClose(t *testing.T, what string, got, want []float64, rtol float64) {
	t.Helper()
	testutil.Close(t, what, got, want, testutil.Tol{Rel: rtol, RelFloor: 1, NaN: true})
}

func TestBinaryOpsBroadcastGrid(t *testing.T) {
	ops := []struct {
		name string
		f    func(x, y float64) float64
	}{
		{"AddV2", func(x, y float64) float64 { return x + y }},
		{"Sub", func(x, y float64) float64 { return x - y }},
		{"Mul", func(x, y float64) float64 { return x * y }},
		{"RealDiv", func(x, y float64) float64 { return x / y }},
	}
	r := rand.New(rand.NewSource(3))
	for _, op := range ops {
		for it := 0; it < 150; it++ {
			as, bs := mtRandShapes(r)
			a, b := mtRandSlice(r, as), mtRandSlice(r, bs)
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				ra, rb := testutil.Round(dt, a), testutil.Round(dt, b)
				wantShape, want := mtNaiveBinary(as, bs, ra, rb, op.f)
				// A single +, -, * or / of float32 operands is exactly the
				// float64 result rounded to float32.
				want = testutil.Round(dt, want)
				out := registrytest.MustRun(t, op.name, nil, 2, testutil.Dense(t, dt, as, a), testutil.Dense(t, dt, bs, b))[0]
				if out.Dtype() != dt || !tensorx.SameShape(out.Shape(), wantShape) {
					t.Fatalf("%s %v %v: got %v %v, want %v %v", op.name, as, bs, out.Dtype(), out.Shape(), dt, wantShape)
				}
				mtClose(t, fmt.Sprintf("%s %v %v %v", op.name, dt, as, bs), testutil.Float64s(t, out), want, 0)
			}
		}
	}
}

// TestBinaryOpsThreads checks that large broadcasts give the same bits on
// one and several threads and match the reference.
func TestBinaryOpsThreads(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, c := range []struct{ a, b []int }{
		{[]int{200, 300}, []int{300}},
		{[]int{200, 1, 50}, []int{7, 50}},
		{[]int{60000}, []int{}},
	} {
		a, b := mtRandSlice(r, c.a), mtRandSlice(r, c.b)
		_, want := mtNaiveBinary(c.a, c.b, a, b, func(x, y float64) float64 { return x * y })
		for _, th := range []int{1, 4} {
			out, err := registrytest.Run(t, "Mul", nil, th, testutil.Dense(t, tensor.Float64, c.a, a), testutil.Dense(t, tensor.Float64, c.b, b))
			if err != nil {
				t.Fatal(err)
			}
			mtClose(t, fmt.Sprintf("Mul %v %v threads %d", c.a, c.b, th), testutil.Float64s(t, out[0]), want, 0)
		}
	}
}

func TestBinaryOpsErrors(t *testing.T) {
	f64 := func(shape ...int) *tensor.Dense {
		d, _ := tensorx.Zeros(tensor.Float64, shape)
		return d
	}
	f32 := func(shape ...int) *tensor.Dense {
		d, _ := tensorx.Zeros(tensor.Float32, shape)
		return d
	}
	i32 := func(shape ...int) *tensor.Dense {
		d, _ := tensorx.Zeros(tensor.Int32, shape)
		return d
	}
	for _, op := range []string{"AddV2", "Sub", "Mul", "RealDiv"} {
		_, err := registrytest.Run(t, op, nil, 1, f64(2, 3), f64(4))
		if !errors.Is(err, registry.ErrShape) || !strings.Contains(err.Error(), op+": Incompatible shapes: [2,3] vs. [4]") {
			t.Errorf("%s incompatible shapes: err = %v", op, err)
		}
		_, err = registrytest.Run(t, op, nil, 1, f64(2), f64(0))
		if !errors.Is(err, registry.ErrShape) {
			t.Errorf("%s [2] vs [0]: err = %v", op, err)
		}
		_, err = registrytest.Run(t, op, nil, 1, f64(2), f32(2))
		if !errors.Is(err, registry.ErrDtype) || !strings.Contains(err.Error(), op) {
			t.Errorf("%s dtype mismatch: err = %v", op, err)
		}
		_, err = registrytest.Run(t, op, nil, 1, i32(2), i32(2))
		if !errors.Is(err, registry.ErrDtype) {
			t.Errorf("%s int32: err = %v", op, err)
		}
		_, err = registrytest.Run(t, op, nil, 1, f64(2))
		if !errors.Is(err, registry.ErrInvalidArgument) {
			t.Errorf("%s one input: err = %v", op, err)
		}
	}
}

// mtUnaryRef are the float64 reference formulas of the unary ops.
var mtUnaryRef = map[string]func(float64) float64{
	"Neg":     func(x float64) float64 { return -x },
	"Square":  func(x float64) float64 { return x * x },
	"Sqrt":    math.Sqrt,
	"Rsqrt":   func(x float64) float64 { return 1 / math.Sqrt(x) },
	"Exp":     math.Exp,
	"Log":     math.Log,
	"Sigmoid": func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	"Tanh":    math.Tanh,
	"Relu":    func(x float64) float64 { return math.Max(x, 0) },
	"Relu6":   func(x float64) float64 { return math.Min(math.Max(x, 0), 6) },
}

func TestUnaryOps(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	shapes := [][]int{{}, {0}, {7}, {2, 3}, {2, 0, 3}, {3, 1, 4, 2}, {50000}}
	for name, ref := range mtUnaryRef {
		for _, s := range shapes {
			n, _ := tensorx.Numel(s)
			v := make([]float64, n)
			for i := range v {
				switch name {
				case "Sqrt", "Rsqrt", "Log":
					v[i] = math.Exp(r.Float64()*8 - 4)
				case "Relu6":
					v[i] = r.Float64()*10 - 2
				default:
					v[i] = r.Float64()*8 - 4
				}
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				rv := testutil.Round(dt, v)
				want := make([]float64, n)
				for i, x := range rv {
					want[i] = ref(x)
				}
				out := registrytest.MustRun(t, name, nil, 2, testutil.Dense(t, dt, s, v))[0]
				if out.Dtype() != dt || !tensorx.SameShape(out.Shape(), s) {
					t.Fatalf("%s %v: got %v %v", name, s, out.Dtype(), out.Shape())
				}
				tol := 1e-15
				if dt == tensor.Float32 {
					tol = 4e-7 // a few float32 ulps
				}
				mtClose(t, fmt.Sprintf("%s %v %v", name, dt, s), testutil.Float64s(t, out), want, tol)
			}
		}
	}
}

// TestUnaryOpsSpecialValues pins TensorFlow's behaviour at NaN, ±Inf, ±0
// and extreme arguments.
func TestUnaryOpsSpecialValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		op   string
		in   []float64
		want []float64
	}{
		{"Relu", []float64{nan, -inf, -1, 0, 2, inf}, []float64{nan, 0, 0, 0, 2, inf}},
		{"Relu6", []float64{nan, -1, 3, 6, 7, inf}, []float64{nan, 0, 3, 6, 6, 6}},
		{"Sigmoid", []float64{-1000, -100, 0, 100, 1000, nan}, []float64{0, math.Exp(-100) / (1 + math.Exp(-100)), 0.5, 1, 1, nan}},
		{"Tanh", []float64{-1000, 0, 1000, nan}, []float64{-1, 0, 1, nan}},
		{"Exp", []float64{-inf, 0, 1000}, []float64{0, 1, inf}},
		{"Log", []float64{0, -1, 1, inf}, []float64{-inf, nan, 0, inf}},
		{"Sqrt", []float64{0, -1, 4}, []float64{0, nan, 2}},
		{"Rsqrt", []float64{0, 4}, []float64{inf, 0.5}},
	}
	for _, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			out := registrytest.MustRun(t, c.op, nil, 2, testutil.Dense(t, dt, []int{len(c.in)}, c.in))[0]
			mtClose(t, fmt.Sprintf("%s %v", c.op, dt), testutil.Float64s(t, out), testutil.Round(dt, c.want), 1e-7)
		}
	}
}

func TestUnaryOpsErrors(t *testing.T) {
	i64, _ := tensorx.Zeros(tensor.Int64, []int{2})
	for name := range mtUnaryRef {
		if _, err := registrytest.Run(t, name, nil, 1, i64); !errors.Is(err, registry.ErrDtype) {
			t.Errorf("%s int64: err = %v", name, err)
		}
	}
}

func TestBroadcastTo(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	shapeT := func(dt tensor.Dtype, s []int) *tensor.Dense {
		if dt == tensor.Int64 {
			v := make([]int64, len(s))
			for i, d := range s {
				v[i] = int64(d)
			}
			d, _ := tensorx.New([]int{len(v)}, v)
			return d
		}
		v := make([]int32, len(s))
		for i, d := range s {
			v[i] = int32(d)
		}
		d, _ := tensorx.New([]int{len(v)}, v)
		return d
	}
	for it := 0; it < 300; it++ {
		as, bs := mtRandShapes(r)
		target, _ := broadcastShape(as, bs)
		x := mtRandSlice(r, as)
		nt, _ := tensorx.Numel(target)
		ignored := make([]float64, nt) // the second operand of the reference map
		for i, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Int32, tensor.Int64, tensor.Bool} {
			var in *tensor.Dense
			switch dt {
			case tensor.Float64, tensor.Float32:
				in = testutil.Dense(t, dt, as, x)
			case tensor.Int32:
				v := make([]int32, len(x))
				for j, f := range x {
					v[j] = int32(f * 100)
				}
				in, _ = tensorx.New(as, v)
			case tensor.Int64:
				v := make([]int64, len(x))
				for j, f := range x {
					v[j] = int64(f * 100)
				}
				in, _ = tensorx.New(as, v)
			case tensor.Bool:
				v := make([]bool, len(x))
				for j, f := range x {
					v[j] = f > 0
				}
				in, _ = tensorx.New(as, v)
			}
			sdt := tensor.Int32
			if i%2 == 1 {
				sdt = tensor.Int64
			}
			out := registrytest.MustRun(t, "BroadcastTo", nil, 2, in, shapeT(sdt, target))[0]
			if out.Dtype() != dt || !tensorx.SameShape(out.Shape(), target) {
				t.Fatalf("BroadcastTo %v → %v: got %v %v", as, target, out.Dtype(), out.Shape())
			}
			ref := testutil.Float64s(t, in)
			_, w := mtNaiveBinary(as, target, ref, ignored, func(x, _ float64) float64 { return x })
			mtClose(t, fmt.Sprintf("BroadcastTo %v %v → %v", dt, as, target), testutil.Float64s(t, out), w, 0)
		}
	}
	// Errors, with TensorFlow's messages.
	x, _ := tensorx.Zeros(tensor.Float64, []int{2, 3})
	for _, c := range []struct {
		shape *tensor.Dense
		kind  error
		msg   string
	}{
		{shapeT(tensor.Int32, []int{3}), registry.ErrShape, "Rank of input (2) must be no greater than rank of output shape (1)"},
		{shapeT(tensor.Int32, []int{2, 4}), registry.ErrShape, "Incompatible shapes: [2,3] vs. [2,4]"},
		{shapeT(tensor.Int64, []int{1, 3}), registry.ErrShape, "Unable to broadcast tensor of shape [2,3] to tensor of shape [1,3]"},
		{shapeT(tensor.Int32, []int{-1, 3}), registry.ErrInvalidArgument, "must be >= 0"},
		{testutil.Dense(t, tensor.Float64, []int{2}, []float64{2, 3}), registry.ErrDtype, "int32 or int64"},
		{func() *tensor.Dense { d, _ := tensorx.New([]int{1, 2}, []int32{2, 3}); return d }(), registry.ErrShape, "vector"},
	} {
		_, err := registrytest.Run(t, "BroadcastTo", nil, 1, x, c.shape)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "BroadcastTo") {
			t.Errorf("BroadcastTo to %v: err = %v; want %v containing %q", c.shape, err, c.kind, c.msg)
		}
	}
}

func TestCast(t *testing.T) {
	src := []float64{0, 1.75, -1.75, 2.5, -0.5, 3e9, -3e9, 1e20, math.NaN(), math.Inf(-1), 1}
	mk := func(dt tensor.Dtype) *tensor.Dense {
		var d *tensor.Dense
		var err error
		switch dt {
		case tensor.Float32, tensor.Float64:
			return testutil.Dense(t, dt, []int{len(src)}, src)
		case tensor.Int32:
			d, err = tensorx.New([]int{4}, []int32{0, -7, 1 << 30, 1})
		case tensor.Int64:
			d, err = tensorx.New([]int{4}, []int64{0, -7, 1<<40 + 1, 1<<53 + 1})
		case tensor.Bool:
			d, err = tensorx.New([]int{3}, []bool{true, false, true})
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	minI32, minI64 := float64(math.MinInt32), float64(math.MinInt64)
	want := map[[2]tensor.Dtype][]float64{
		{tensor.Float64, tensor.Int32}:   {0, 1, -1, 2, 0, minI32, minI32, minI32, minI32, minI32, 1},
		{tensor.Float32, tensor.Int32}:   {0, 1, -1, 2, 0, minI32, minI32, minI32, minI32, minI32, 1},
		{tensor.Float64, tensor.Int64}:   {0, 1, -1, 2, 0, 3e9, -3e9, minI64, minI64, minI64, 1},
		{tensor.Float32, tensor.Int64}:   {0, 1, -1, 2, 0, 3e9, -3e9, minI64, minI64, minI64, 1},
		{tensor.Float64, tensor.Bool}:    {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{tensor.Float32, tensor.Bool}:    {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{tensor.Float64, tensor.Float32}: testutil.Round(tensor.Float32, src),
		{tensor.Float32, tensor.Float64}: testutil.Round(tensor.Float32, src),
		{tensor.Float64, tensor.Float64}: src,
		{tensor.Float32, tensor.Float32}: testutil.Round(tensor.Float32, src),
		{tensor.Int32, tensor.Float32}:   {0, -7, 1 << 30, 1},
		{tensor.Int32, tensor.Float64}:   {0, -7, 1 << 30, 1},
		{tensor.Int32, tensor.Int64}:     {0, -7, 1 << 30, 1},
		{tensor.Int32, tensor.Int32}:     {0, -7, 1 << 30, 1},
		{tensor.Int32, tensor.Bool}:      {0, 1, 1, 1},
		{tensor.Int64, tensor.Float32}:   {0, -7, float64(float32(1<<40 + 1)), float64(float32(1<<53 + 1))},
		{tensor.Int64, tensor.Float64}:   {0, -7, 1<<40 + 1, float64(1<<53 + 1)},
		{tensor.Int64, tensor.Int32}:     {0, -7, 1, 1}, // wraps: 2^40+1 → 1, 2^53+1 → 1
		{tensor.Int64, tensor.Int64}:     {0, -7, 1<<40 + 1, 1<<53 + 1},
		{tensor.Int64, tensor.Bool}:      {0, 1, 1, 1},
		{tensor.Bool, tensor.Float32}:    {1, 0, 1},
		{tensor.Bool, tensor.Float64}:    {1, 0, 1},
		{tensor.Bool, tensor.Int32}:      {1, 0, 1},
		{tensor.Bool, tensor.Int64}:      {1, 0, 1},
		{tensor.Bool, tensor.Bool}:       {1, 0, 1},
	}
	if len(want) != 25 {
		t.Fatalf("the cast table has %d entries, want 25", len(want))
	}
	for k, w := range want {
		for _, trunc := range []bool{false, true} {
			out := registrytest.MustRun(t, "Cast", CastAttrs{DstT: k[1], Truncate: trunc}, 2, mk(k[0]))[0]
			if out.Dtype() != k[1] {
				t.Fatalf("Cast %v→%v: dtype %v", k[0], k[1], out.Dtype())
			}
			got := testutil.Float64s(t, out)
			if k[0] == tensor.Int64 && k[1] == tensor.Int64 {
				// Exact comparison beyond float64's integers.
				g := out.Int64s()
				if g[3] != 1<<53+1 {
					t.Fatalf("Cast int64→int64: %v", g)
				}
			}
			if trunc && k == [2]tensor.Dtype{tensor.Float64, tensor.Float32} {
				continue // checked below
			}
			mtClose(t, fmt.Sprintf("Cast %v→%v truncate=%v", k[0], k[1], trunc), got, w, 0)
		}
	}
	// Truncate: float64 → float32 rounds toward zero instead of to nearest.
	up := 1 + 3.0/(1<<25) // between two float32s, nearer the upper one
	x := []float64{up, -up, math.NaN(), 1e39, 0.1}
	trunc := registrytest.MustRun(t, "Cast", CastAttrs{DstT: tensor.Float32, Truncate: true}, 2, testutil.Dense(t, tensor.Float64, []int{5}, x))[0].Float32s()
	near := registrytest.MustRun(t, "Cast", CastAttrs{DstT: tensor.Float32}, 2, testutil.Dense(t, tensor.Float64, []int{5}, x))[0].Float32s()
	if trunc[0] != 1 || trunc[1] != -1 || near[0] != float32(up) || near[0] == 1 {
		t.Errorf("Cast Truncate: %v (nearest %v)", trunc, near)
	}
	if !math.IsNaN(float64(trunc[2])) || !math.IsInf(float64(trunc[3]), 1) || trunc[4] > near[4] || float64(trunc[4]) > 0.1 {
		t.Errorf("Cast Truncate special values: %v (nearest %v)", trunc, near)
	}
	// Errors.
	f, _ := tensorx.Zeros(tensor.Float32, []int{2})
	if _, err := registrytest.Run(t, "Cast", CastAttrs{}, 1, f); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Errorf("Cast without DstT: err = %v", err)
	}
	if _, err := registrytest.Run(t, "Cast", CastAttrs{DstT: tensor.Complex64}, 1, f); !errors.Is(err, registry.ErrUnimplemented) || !strings.Contains(err.Error(), "Cast") {
		t.Errorf("Cast to complex64: err = %v", err)
	}
	// Attrs parse from TensorFlow's names.
	def, _ := registry.Lookup("Cast")
	a, err := def.ParseAttrs(map[string]any{"DstT": "int32", "SrcT": "float", "Truncate": false})
	if err != nil || a.(CastAttrs).DstT != tensor.Int32 {
		t.Errorf("ParseAttrs: %v, %v", a, err)
	}
}

func TestL2Loss(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, s := range [][]int{{}, {0}, {1}, {7}, {3, 5}, {2, 0, 4}, {70001}} {
		x := mtRandSlice(r, s)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			rx := testutil.Round(dt, x)
			var want float64
			for _, v := range rx {
				want += v * v
			}
			want /= 2
			var first []float64
			for _, th := range []int{1, 3} {
				out, err := registrytest.Run(t, "L2Loss", nil, th, testutil.Dense(t, dt, s, x))
				if err != nil {
					t.Fatal(err)
				}
				if out[0].Dtype() != dt || len(out[0].Shape()) != 0 {
					t.Fatalf("L2Loss %v: output %v %v, want a %v scalar", s, out[0].Dtype(), out[0].Shape(), dt)
				}
				got := testutil.Float64s(t, out[0])
				tol := 1e-13
				if dt == tensor.Float32 {
					tol = 1e-7 // float64 accumulation, one rounding
				}
				mtClose(t, fmt.Sprintf("L2Loss %v %v", dt, s), got, []float64{want}, tol)
				if first == nil {
					first = got
				} else if got[0] != first[0] {
					t.Errorf("L2Loss %v %v: %v on 3 threads, %v on 1", dt, s, got[0], first[0])
				}
			}
		}
	}
	i, _ := tensorx.Zeros(tensor.Int32, []int{2})
	if _, err := registrytest.Run(t, "L2Loss", nil, 1, i); !errors.Is(err, registry.ErrDtype) {
		t.Errorf("L2Loss int32: err = %v", err)
	}
}

// TestMathSamples checks that every sample generator produces inputs the
// op accepts, with attrs that normalise.
func TestMathSamples(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, name := range []string{"AddV2", "Sub", "Mul", "RealDiv", "Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log",
		"Sigmoid", "Tanh", "Relu", "Relu6",
		"BroadcastTo", "Cast", "L2Loss"} {
		ss, outs := registrytest.RunSamples(t, name, r, 3, registrytest.KC(1))
		for i, s := range ss {
			for _, o := range outs[i] {
				for _, v := range testutil.Float64s(t, o) {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("%s sample %s: non-finite output", name, s.Name)
					}
				}
			}
		}
	}
}
