package autodiff_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// nextLine returns the file:line of the line after the caller's, as
// OpError.Loc spells it: the line of the op call it precedes.
func nextLine() string {
	_, file, line, _ := runtime.Caller(1)
	line++
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		if j := strings.LastIndexByte(file[:i], '/'); j >= 0 {
			file = file[j+1:]
		}
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// dense makes a tensor of dtype dt from float64 values.
func dense(t testing.TB, dt tensor.Dtype, shape []int, v ...float64) *tensor.Dense {
	t.Helper()
	var d *tensor.Dense
	var err error
	if dt == tensor.Float32 {
		s := make([]float32, len(v))
		for i, x := range v {
			s[i] = float32(x)
		}
		d, err = tensorx.New(shape, s)
	} else {
		d, err = tensorx.New(shape, append([]float64(nil), v...))
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// wantAnomaly checks that err is anomaly detection's error with these
// fields, and returns its AnomalyError.
func wantAnomaly(t *testing.T, err error, op, phase, loc string, output, input int) *autodiff.AnomalyError {
	t.Helper()
	var oe *autodiff.OpError
	var ae *autodiff.AnomalyError
	if !errors.As(err, &oe) || !errors.As(err, &ae) || !errors.Is(err, autodiff.ErrNonFinite) {
		t.Fatalf("error %v (%T): not an anomaly error", err, err)
	}
	if oe.Op != op || oe.Phase != phase || oe.Loc != loc || oe.Input != input || ae.Output != output || ae.Input != input {
		t.Fatalf("error %q: got op %q phase %q loc %q input %d output %d, want %q %q %q %d %d",
			err, oe.Op, oe.Phase, oe.Loc, oe.Input, ae.Output, op, phase, loc, input, output)
	}
	return ae
}

func wantCounts(t *testing.T, ae *autodiff.AnomalyError, nan, pinf, ninf, first int) {
	t.Helper()
	if ae.NaN != nan || ae.PosInf != pinf || ae.NegInf != ninf || ae.First != first {
		t.Fatalf("%v: counts NaN %d +Inf %d -Inf %d first %d, want %d %d %d %d",
			ae, ae.NaN, ae.PosInf, ae.NegInf, ae.First, nan, pinf, ninf, first)
	}
}

var floatTypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

// Forward: the first op that makes a NaN or an infinity fails the tape,
// named with its line; the ops after it do nothing.
func TestAnomalyForward(t *testing.T) {
	for _, dt := range floatTypes {
		t.Run(dt.String()+"/Log", func(t *testing.T) {
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			x := tp.Watch(dense(t, dt, []int{4}, 1, -1, 2, -3))
			y := autodiff.Exp(x) // finite
			loc := nextLine()
			z := autodiff.Log(x)
			w := autodiff.Exp(z)
			ae := wantAnomaly(t, tp.Err(), "Log", "forward", loc, 0, -1)
			wantCounts(t, ae, 2, 0, 0, 1)
			if ae.Dtype != dt || !ae.Shape.Eq(tensor.Shape{4}) {
				t.Fatalf("dtype/shape %v %v", ae.Dtype, ae.Shape)
			}
			// The Exp before Log was recorded, Log's output is not used,
			// the Exp after it did not run.
			if w.Err() != tp.Err() || tp.NumOps() != 2 || !y.RequiresGrad() {
				t.Fatalf("w %v, ops %d: want w failed, 2 ops", w.Err(), tp.NumOps())
			}
			if err := tp.Backward(autodiff.Sum(w, nil, false)); err != tp.Err() {
				t.Fatalf("Backward: %v", err)
			}
			want := fmt.Sprintf("tapegrad: Log (forward at %s): output 0 (%v (4)) has 2 NaN (first at flat index 1), its inputs were finite: non-finite value (anomaly detection)", loc, dt)
			if got := tp.Err().Error(); got != want {
				t.Fatalf("message\n got %s\nwant %s", got, want)
			}
		})
		t.Run(dt.String()+"/Sqrt", func(t *testing.T) {
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			x := tp.Constant(dense(t, dt, []int{2, 2}, 4, 9, 0, -1))
			loc := nextLine()
			autodiff.Sqrt(x)
			wantCounts(t, wantAnomaly(t, tp.Err(), "Sqrt", "forward", loc, 0, -1), 1, 0, 0, 3)
		})
		t.Run(dt.String()+"/Div", func(t *testing.T) {
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			a := tp.Constant(dense(t, dt, []int{4}, 1, -2, 3, 0))
			b := tp.Constant(dense(t, dt, []int{4}, 0, 0, 1, 0))
			loc := nextLine()
			autodiff.Div(a, b)
			wantCounts(t, wantAnomaly(t, tp.Err(), "RealDiv", "forward", loc, 0, -1), 1, 1, 1, 0)
		})
		t.Run(dt.String()+"/Exp overflow", func(t *testing.T) {
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			x := tp.Constant(dense(t, dt, []int{3}, 1, 2, 1000))
			loc := nextLine()
			autodiff.Exp(x)
			wantCounts(t, wantAnomaly(t, tp.Err(), "Exp", "forward", loc, 0, -1), 0, 1, 0, 2)
		})
	}
}

// Backward only: Sqrt at 0 is finite, its gradient 0.5/sqrt(0) is not. The
// error names the gradient op, "gradient of Sqrt" and the line of the
// Sqrt call (not of Backward), and no parameter gradient is touched.
func TestAnomalyBackward(t *testing.T) {
	for _, dt := range floatTypes {
		t.Run(dt.String(), func(t *testing.T) {
			p, err := autodiff.NewParam("w", dense(t, dt, []int{3}, 4, 0, 1))
			if err != nil {
				t.Fatal(err)
			}
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			w := tp.Param(p)
			loc := nextLine()
			y := autodiff.Sqrt(w)
			loss := autodiff.Sum(y, nil, false)
			if err := tp.Err(); err != nil {
				t.Fatalf("forward: %v", err)
			}
			err = tp.Backward(loss)
			ae := wantAnomaly(t, err, "SqrtGrad", "gradient of Sqrt", loc, 0, -1)
			wantCounts(t, ae, 0, 1, 0, 1)
			if p.Grad != nil {
				t.Fatalf("Backward failed but set Grad %v", p.Grad)
			}
			if !strings.Contains(err.Error(), "SqrtGrad (gradient of Sqrt at "+loc+"): output 0") {
				t.Fatalf("message: %v", err)
			}
		})
	}
}

// Grad with an upstream gradient holding NaN: reported at the gradient op
// that consumes it, as an input that entered the tape so.
func TestAnomalyUpstreamNaN(t *testing.T) {
	tp := autodiff.NewTape(autodiff.DetectAnomaly())
	x := tp.Watch(vec(t, 1, 2))
	loc := nextLine()
	y := autodiff.Exp(x)
	up := tp.Constant(vec(t, 1, math.NaN()))
	_, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{up}, autodiff.GradOpts{})
	var oe *autodiff.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T): not an *OpError", err, err)
	}
	ae := wantAnomaly(t, err, oe.Op, "gradient of Exp", loc, -1, oe.Input)
	if oe.Op == "" || oe.Input < 0 || ae.Entered != "a constant or watched value" {
		t.Fatalf("%v: op %q input %d entered %q", err, oe.Op, oe.Input, ae.Entered)
	}
	wantCounts(t, ae, 1, 0, 0, 1)
}

// A multi-output op: FusedBatchNorm in training mode on float32 values
// whose variance overflows makes +Inf in batch_variance (output 2) while
// y (output 0) stays finite; the output index is reported.
func TestAnomalyMultiOutput(t *testing.T) {
	tp := autodiff.NewTape(autodiff.DetectAnomaly())
	x := tp.Constant(dense(t, tensor.Float32, []int{1, 1, 2, 1}, 2e19, -2e19))
	scale := tp.Constant(dense(t, tensor.Float32, []int{1}, 1))
	offset := tp.Constant(dense(t, tensor.Float32, []int{1}, 0))
	empty := tp.Full(tensor.Float32, []int{0}, 0)
	training := true
	loc := nextLine()
	autodiff.FusedBatchNormV3(x, scale, offset, empty, empty, forward.FusedBatchNormAttrs{IsTraining: &training})
	wantCounts(t, wantAnomaly(t, tp.Err(), "FusedBatchNormV3", "forward", loc, 2, -1), 0, 1, 0, 0)
}

// Second order. y = sqrt(x); the first Grad (CreateGraph) records
// g = SqrtGrad(y, 1) = 0.5/y, finite at the x used. The second Grad, of g,
// runs the gradient of SqrtGrad (a Mul makes dg/dy = -0.5/y²), then the
// gradient of Sqrt (SqrtGrad(y, dg/dy) = -0.25/y³). At x = 1e-300
// (float64) or 1e-30 (float32) only the latter overflows: the error is in
// the gradient of Sqrt. At x = 1e-320 or 1e-40 (subnormal) the Mul
// overflows already: the error is in the gradient of SqrtGrad, which came
// from the gradient of Sqrt. Both name the line of the user's Sqrt.
func TestAnomalySecondOrder(t *testing.T) {
	for _, c := range []struct {
		dt        tensor.Dtype
		x0        float64
		op, phase string
	}{
		{tensor.Float64, 1e-300, "SqrtGrad", "gradient of Sqrt"},
		{tensor.Float32, 1e-30, "SqrtGrad", "gradient of Sqrt"},
		{tensor.Float64, 1e-320, "Mul", "gradient of SqrtGrad (from the gradient of Sqrt)"},
		{tensor.Float32, 1e-40, "Mul", "gradient of SqrtGrad (from the gradient of Sqrt)"},
	} {
		t.Run(fmt.Sprint(c.dt, c.x0), func(t *testing.T) {
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			x := tp.Watch(dense(t, c.dt, []int{2}, 1, c.x0))
			loc := nextLine()
			y := autodiff.Sqrt(x)
			g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: true})
			if err != nil {
				t.Fatalf("first order: %v", err)
			}
			_, err = tp.Grad(g, []autodiff.Value{x}, nil, autodiff.GradOpts{})
			wantCounts(t, wantAnomaly(t, err, c.op, c.phase, loc, 0, -1), 0, 0, 1, 1)
		})
	}
}

// Non-finite values that enter the tape: NaN in a constant or a parameter
// and an infinity in a parameter are reported at the first op consuming
// them, naming the input; an infinity in a constant is accepted, and an op
// that passes it on is not blamed, but one that makes NaN out of it is.
func TestAnomalyEntering(t *testing.T) {
	t.Run("constant NaN", func(t *testing.T) {
		tp := autodiff.NewTape(autodiff.DetectAnomaly())
		a := tp.Constant(vec(t, 1, 2))
		b := tp.Constant(vec(t, 3, math.NaN()))
		loc := nextLine()
		autodiff.Mul(a, b)
		ae := wantAnomaly(t, tp.Err(), "Mul", "forward", loc, -1, 1)
		wantCounts(t, ae, 1, 0, 0, 1)
		if ae.Entered != "a constant or watched value" {
			t.Fatalf("entered %q", ae.Entered)
		}
	})
	for _, bad := range []float64{math.NaN(), math.Inf(-1)} {
		t.Run(fmt.Sprintf("parameter %v", bad), func(t *testing.T) {
			p, _ := autodiff.NewParam("w1", vec(t, bad, 1))
			tp := autodiff.NewTape(autodiff.DetectAnomaly())
			w := tp.Param(p)
			loc := nextLine()
			autodiff.Exp(w)
			ae := wantAnomaly(t, tp.Err(), "Exp", "forward", loc, -1, 0)
			if ae.Entered != `parameter "w1"` || !strings.Contains(ae.Error(), `input 0 (parameter "w1"; float64 (2)) has`) {
				t.Fatalf("entered %q: %v", ae.Entered, ae)
			}
		})
	}
	t.Run("infinite mask", func(t *testing.T) {
		tp := autodiff.NewTape(autodiff.DetectAnomaly())
		logits := tp.Watch(vec(t, 1, 2, 3))
		mask := tp.Constant(vec(t, 0, math.Inf(-1), 0))
		p := autodiff.Softmax(autodiff.Add(logits, mask)) // -Inf passed on, not made
		if err := tp.Err(); err != nil {
			t.Fatalf("mask: %v", err)
		}
		if _, err := tp.Grad([]autodiff.Value{p}, []autodiff.Value{logits}, nil, autodiff.GradOpts{}); err != nil {
			t.Fatalf("mask gradient: %v", err)
		}
		inf := tp.Constant(vec(t, math.Inf(1)))
		loc := nextLine()
		autodiff.Sub(inf, inf)
		ae := wantAnomaly(t, tp.Err(), "Sub", "forward", loc, 0, -1)
		if !ae.InfInput || !strings.Contains(ae.Error(), ", its inputs had no NaN (some had an infinity)") {
			t.Fatalf("%v", ae)
		}
	})
}

// runModel runs a small float model forward and backward on tp (a
// parameter, a constant, matmul, softmax cross-entropy, sqrt, log, second
// order) and returns every result, bit for bit, and the tape's error.
func runModel(t *testing.T, tp *autodiff.Tape, dt tensor.Dtype, bad bool) ([][]float64, error) {
	xs := []float64{0.5, -1, 2, 0.25, 3, -0.5}
	if bad {
		xs[1] = 1000 // Exp overflows
	}
	p, _ := autodiff.NewParam("w", dense(t, dt, []int{3, 2}, 0.1, -0.2, 0.3, 0.4, -0.5, 0.6))
	w := tp.Param(p)
	x := tp.Watch(dense(t, dt, []int{2, 3}, xs...))
	h := autodiff.Tanh(autodiff.MatMul(x, w, forward.MatMulAttrs{}))
	r := autodiff.Add(autodiff.Sqrt(autodiff.Exp(x)), autodiff.Log(autodiff.Exp(x)))
	loss := autodiff.Add(autodiff.Sum(autodiff.Softmax(h), nil, false), autodiff.Sum(autodiff.Mul(r, r), nil, false))
	g, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{x, w}, nil, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		return nil, err
	}
	gg, err := tp.Grad([]autodiff.Value{autodiff.Sum(g[0], nil, false)}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		return nil, err
	}
	if err := tp.Backward(loss); err != nil {
		return nil, err
	}
	var out [][]float64
	for _, v := range []autodiff.Value{loss, g[0], g[1], gg[0]} {
		d, err := v.Data()
		if err != nil {
			return nil, err
		}
		out = append(out, bits(d))
	}
	return append(out, bits(p.Grad)), nil
}

// bits returns d's elements as float64 (exactly).
func bits(d *tensor.Dense) []float64 {
	if d.Dtype() == tensor.Float32 {
		var s []float64
		for _, v := range d.Float32s() {
			s = append(s, float64(v))
		}
		return s
	}
	return append([]float64(nil), d.Float64s()...)
}

// Without the option nothing changes: the same results bit for bit as
// with it, on a model that stays finite; and a model that makes NaN gives
// Inf and NaN, not an error (as before anomaly detection existed).
func TestAnomalyOffUnaffected(t *testing.T) {
	for _, dt := range floatTypes {
		off, err := runModel(t, autodiff.NewTape(), dt, false)
		if err != nil {
			t.Fatalf("%v off: %v", dt, err)
		}
		on, err := runModel(t, autodiff.NewTape(autodiff.DetectAnomaly()), dt, false)
		if err != nil {
			t.Fatalf("%v on: %v", dt, err)
		}
		for i := range off {
			for j := range off[i] {
				if math.Float64bits(off[i][j]) != math.Float64bits(on[i][j]) {
					t.Fatalf("%v result %d[%d]: %v without anomaly detection, %v with", dt, i, j, off[i][j], on[i][j])
				}
			}
		}
		res, err := runModel(t, autodiff.NewTape(), dt, true)
		if err != nil || !math.IsInf(res[0][0], 1) || !math.IsNaN(res[1][1]) {
			t.Fatalf("%v bad model without the option: results %v, err %v; want an infinite loss, NaN gradients, no error", dt, res, err)
		}
		tp := autodiff.NewTape(autodiff.DetectAnomaly())
		_, err = runModel(t, tp, dt, true)
		var oe *autodiff.OpError
		if !errors.As(err, &oe) || oe.Op != "Exp" || oe.Phase != "forward" || !errors.Is(err, autodiff.ErrNonFinite) {
			t.Fatalf("%v bad model with the option: %v", dt, err)
		}
	}
}

// Switching: SetDetectAnomaly over a tape with values, off again, and
// Reset (statuses of an old generation are forgotten).
func TestAnomalySwitch(t *testing.T) {
	tp := autodiff.NewTape()
	if tp.DetectingAnomaly() {
		t.Fatal("on by default")
	}
	x := tp.Constant(vec(t, -1, 1))
	l := autodiff.Log(x) // NaN, unchecked
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
	tp.SetDetectAnomaly(true)
	if !tp.DetectingAnomaly() {
		t.Fatal("SetDetectAnomaly(true) did not switch it on")
	}
	loc := nextLine()
	autodiff.Neg(l)
	ae := wantAnomaly(t, tp.Err(), "Neg", "forward", loc, -1, 0)
	if ae.Entered != "a value from before anomaly detection was switched on" {
		t.Fatalf("entered %q", ae.Entered)
	}

	tp.Reset()
	x = tp.Constant(vec(t, -1, 1))
	if autodiff.Sqrt(autodiff.Exp(x)); tp.Err() != nil {
		t.Fatalf("after Reset: %v", tp.Err())
	}
	tp.SetDetectAnomaly(false)
	if autodiff.Log(x); tp.Err() != nil || tp.DetectingAnomaly() {
		t.Fatalf("switched off: %v", tp.Err())
	}
	// A NoGrad tape checks too.
	ng := autodiff.NewTape(autodiff.NoGrad(), autodiff.DetectAnomaly())
	loc = nextLine()
	autodiff.Log(ng.Constant(vec(t, -1)))
	wantAnomaly(t, ng.Err(), "Log", "forward", loc, 0, -1)
}

// A steady-state training step with anomaly detection on allocates no
// more than one with it off.
func TestAnomalyAllocs(t *testing.T) {
	m := newMLP(t, 8)
	steps := func() float64 {
		m.step(t, 0.01)
		m.step(t, 0.01)
		return testing.AllocsPerRun(10, func() { m.step(t, 0.01) })
	}
	off := steps()
	m.tape.SetDetectAnomaly(true)
	on := steps()
	if on > off {
		t.Fatalf("allocs per step: %v with anomaly detection, %v without", on, off)
	}
}

// BenchmarkAnomaly is BenchmarkMLPStep with anomaly detection off and on.
func BenchmarkAnomaly(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			m := newMLP(b, 64)
			m.tape.SetDetectAnomaly(on)
			m.step(b, 0.01)
			m.step(b, 0.01)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.step(b, 0.01)
			}
		})
	}
}
