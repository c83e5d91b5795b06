package testutil

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// recorder is a testing.TB whose Fatal/Fatalf record the failure and stop
// the helper's goroutine, so a test can check that a helper fails.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%v", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
	panic(r)
}

// fails reports whether f fails the recorder it is given.
func fails(t *testing.T, f func(tb testing.TB)) (failed bool) {
	t.Helper()
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	f(r)
	return false
}

func TestClose(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		got, want float64
		tol       Tol
		fail      bool
	}{
		{1, 1, Tol{}, false},
		{1.1, 1, Tol{Rel: 0.2}, false},
		{1.3, 1, Tol{Rel: 0.2}, true},
		{0.05, 0, Tol{Rel: 0.1}, true},
		{0.05, 0, Tol{Rel: 0.1, RelFloor: 1}, false},
		{0.05, 0, Tol{Abs: 0.1}, false},
		{0.5, 0, Tol{Scale: 0.1}, true},
		{inf, inf, Tol{}, false},
		{inf, -inf, Tol{Abs: inf}, true},
		{5, inf, Tol{Rel: 1}, true},
		{nan, nan, Tol{}, true},
		{nan, nan, Tol{NaN: true}, false},
		{1, nan, Tol{NaN: true, Abs: inf}, true},
		{nan, 1, Tol{NaN: true, Abs: inf}, true},
	} {
		got := fails(t, func(tb testing.TB) { Close(tb, "x", []float64{c.got}, []float64{c.want}, c.tol) })
		if got != c.fail {
			t.Errorf("Close(%v, %v, %+v) failed = %v, want %v", c.got, c.want, c.tol, got, c.fail)
		}
	}
	// Scale is relative to the largest |want| of the slice.
	if fails(t, func(tb testing.TB) { Close(tb, "x", []float64{0.5, 10}, []float64{0, 10}, Tol{Scale: 0.1}) }) {
		t.Error("Close with Scale: 0.5 off a slice with max |want| 10 failed at tol 0.1")
	}
	if !fails(t, func(tb testing.TB) { Close(tb, "x", []float64{1}, []float64{1, 2}, Tol{Abs: 1}) }) {
		t.Error("Close accepted slices of different lengths")
	}
}

func TestNear(t *testing.T) {
	if fails(t, func(tb testing.TB) { Near(tb, "x", []float64{1, 2.05}, []float64{1, 2}, 0.1) }) {
		t.Error("Near failed within the tolerance")
	}
	for _, v := range []float64{2.2, math.NaN(), math.Inf(1)} {
		if !fails(t, func(tb testing.TB) { Near(tb, "x", []float64{v}, []float64{2}, 0.1) }) {
			t.Errorf("Near accepted %v for 2 ± 0.1", v)
		}
	}
	if !fails(t, func(tb testing.TB) { Near(tb, "x", []float64{math.Inf(1)}, []float64{math.Inf(1)}, 0.1) }) {
		t.Error("Near accepted an infinity")
	}
}

func TestBitDiff(t *testing.T) {
	negZero := math.Copysign(0, -1)
	qnan := math.Float64frombits(0x7ff8000000000002)
	for _, c := range []struct {
		a, b  []float64
		nanEq bool
		want  int
	}{
		{[]float64{1, 2}, []float64{1, 2}, false, -1},
		{[]float64{1, 0}, []float64{1, negZero}, false, 1},
		{[]float64{math.NaN()}, []float64{qnan}, false, 0},
		{[]float64{math.NaN()}, []float64{qnan}, true, -1},
		{[]float64{1}, []float64{1, 2}, false, 1},
	} {
		if got := BitDiff(c.a, c.b, c.nanEq); got != c.want {
			t.Errorf("BitDiff(%v, %v, %v) = %d, want %d", c.a, c.b, c.nanEq, got, c.want)
		}
	}
	if got := BitDiff([]int32{1, 2, 3}, []int32{1, 2, 4}, false); got != 2 {
		t.Errorf("BitDiff of int32s = %d, want 2", got)
	}
}

func TestWantErr(t *testing.T) {
	shape := registry.Errorf(registry.ErrShape, "MatMul: bad shapes")
	if fails(t, func(tb testing.TB) { WantErr(tb, shape, registry.ErrShape, "MatMul", "bad") }) {
		t.Error("WantErr refused a matching error")
	}
	for name, err := range map[string]error{
		"nil":      nil,
		"kind":     registry.Errorf(registry.ErrDtype, "MatMul: bad shapes"),
		"fragment": registry.Errorf(registry.ErrShape, "Conv2D: bad shapes"),
		"internal": fmt.Errorf("%w: %w", registry.ErrInternal, shape),
	} {
		if !fails(t, func(tb testing.TB) { WantErr(tb, err, registry.ErrShape, "MatMul") }) {
			t.Errorf("WantErr accepted the %s case %v", name, err)
		}
	}
	if !errors.Is(fmt.Errorf("%w: %w", registry.ErrInternal, shape), registry.ErrShape) {
		t.Fatal("the internal case above does not wrap ErrShape")
	}
}

func TestPoisonAlloc(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool} {
		d, err := PoisonAlloc{}.Alloc(dt, []int{3}, false)
		if err != nil {
			t.Fatal(err)
		}
		v := Float64s(t, d)
		for _, x := range v {
			if x == 0 {
				t.Errorf("%v buffer not poisoned: %v", dt, v)
			}
		}
		z, err := PoisonAlloc{}.Alloc(dt, []int{3}, true)
		if err != nil {
			t.Fatal(err)
		}
		if v := Float64s(t, z); v[0] != 0 || v[1] != 0 || v[2] != 0 {
			t.Errorf("zeroed %v buffer holds %v", dt, v)
		}
	}
}

func TestPoolAlloc(t *testing.T) {
	var p PoolAlloc
	a, err := p.Alloc(tensor.Float64, []int{2, 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	a.Float64s()[0] = 7
	p.Release(a)
	if b, _ := p.Alloc(tensor.Float64, []int{4}, false); b == a {
		t.Error("a buffer was reused for another shape")
	}
	b, err := p.Alloc(tensor.Float64, []int{2, 2}, true)
	if err != nil {
		t.Fatal(err)
	}
	if b != a || b.Float64s()[0] != 0 {
		t.Errorf("released buffer not reused zeroed: same %v, %v", b == a, b.Float64s())
	}
}

func TestModesAndWithFlag(t *testing.T) {
	if got := Modes(false); len(got) != 1 || got[0] {
		t.Errorf("Modes(false) = %v, want [false]", got)
	}
	if got := Modes(true); len(got) != 2 || got[0] || !got[1] {
		t.Errorf("Modes(true) = %v, want [false true]", got)
	}
	flag := true
	var seen bool
	WithFlag(&flag, false, func() { seen = flag })
	if seen || !flag {
		t.Errorf("WithFlag: flag inside %v (want false), after %v (want true)", seen, flag)
	}
}
