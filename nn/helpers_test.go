package nn

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// rnd returns a seeded source for tests.
func rnd(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// randT returns a float64 tensor of the given shape with values in
// [-1, 1), kept at least 0.05 away from 0 when awayFromZero is set (for
// layers with a kink at 0).
func randT(r *rand.Rand, awayFromZero bool, shape ...int) *tensor.Dense {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		x := 2*r.Float64() - 1
		if awayFromZero {
			x = math.Copysign(0.05+0.95*math.Abs(x), x)
		}
		v[i] = x
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		panic(err)
	}
	return d
}

// f64 returns a copy of a float64 tensor's elements.
func f64(t *testing.T, d *tensor.Dense) []float64 {
	t.Helper()
	s, err := tensorx.Slice[float64](d)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float64(nil), s...)
}

// snapshot copies the buffers' data, to restore module state between the
// evaluations of a gradient check.
type snapshot []*tensor.Dense

func takeSnapshot(t *testing.T, m Module) snapshot {
	t.Helper()
	var s snapshot
	for _, b := range m.Buffers() {
		c, err := tensorx.Clone(b.Data)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, c)
	}
	return s
}

func (s snapshot) restore(m Module) {
	for i, b := range m.Buffers() {
		tensorx.CopyData(b.Data, s[i])
	}
}

// moduleFunc returns a gradcheck function of (x, params...) that applies m
// with its parameters bound to the check's inputs, in the given mode,
// restoring m's buffers first so every evaluation sees the same state.
// The inputs are x followed by the parameters' data.
func moduleFunc(t *testing.T, m Module, x *tensor.Dense, training bool) (gradcheck.Func, []*tensor.Dense) {
	t.Helper()
	ps := m.Params()
	idx := map[*autodiff.Param]int{}
	inputs := []*tensor.Dense{x}
	for i, p := range ps {
		idx[p] = i + 1
		inputs = append(inputs, p.Data)
	}
	snap := takeSnapshot(t, m)
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		tp.SetTraining(training)
		snap.restore(m)
		bound := map[*autodiff.Param]bool{}
		b := func(p *autodiff.Param) autodiff.Value {
			bound[p] = true
			if i, ok := idx[p]; ok {
				return in[i]
			}
			return tp.Param(p)
		}
		y := forwardModule(m, tp, in[0], b)
		if len(bound) != len(ps) { // a parameter bypassed the binder: its check would be vacuous
			t.Errorf("%d of %d parameters were bound", len(bound), len(ps))
		}
		return []autodiff.Value{y}
	}
	return f, inputs
}

// checkModule checks the gradients of m with respect to its input and
// parameters, first order (and second order if second is set).
func checkModule(t *testing.T, name string, m Module, x *tensor.Dense, training, second bool) {
	t.Helper()
	if err := moduleErr(m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f, in := moduleFunc(t, m, x, training)
	if err := gradcheck.Check(f, in, gradcheck.Options{Seed: 1}); err != nil {
		t.Errorf("%s: first order: %v", name, err)
	}
	if second {
		if err := gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 2}); err != nil {
			t.Errorf("%s: second order: %v", name, err)
		}
	}
}

// run applies m to x on a fresh tape and returns the output's elements
// and shape.
func run(t *testing.T, m Module, x *tensor.Dense, training bool) ([]float64, []int) {
	t.Helper()
	tp := autodiff.NewTape(autodiff.Training(training), autodiff.Seed(1))
	y := m.Forward(tp, tp.Constant(x))
	v, err := y.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v, []int(y.Shape().Clone())
}

// closeTo reports the first index where got and want differ by more than
// tol (relative to max(1, |want|)), or -1.
func closeTo(got, want []float64, tol float64) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) || math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			return i
		}
	}
	return -1
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if i := closeTo(got, want, tol); i >= 0 {
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
	}
}

// assertErr checks that err wraps sentinel and mentions every fragment.
func assertErr(t *testing.T, what string, err, sentinel error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %q does not wrap %v", what, err, sentinel)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("%s: error %q does not mention %q", what, err, f)
		}
	}
}

// checkFunc checks f's gradients, first and second order.
func checkFunc(f gradcheck.Func, in ...*tensor.Dense) error {
	if err := gradcheck.Check(f, in, gradcheck.Options{Seed: 1}); err != nil {
		return err
	}
	return gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 2})
}
