package testutil

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Tol is the elementwise tolerance of Close: got[i] passes when
//
//	|got[i] − want[i]| <= Abs + Rel·max(|want[i]|, RelFloor) + Scale·M
//
// where M is the largest |want[j]| over the non-NaN wants. An infinite
// value matches only the same infinity. With NaN set, a NaN matches a NaN
// (and nothing else); without it every NaN, in got or in want, fails.
type Tol struct {
	Abs, Rel, RelFloor, Scale float64
	NaN                       bool
}

// Close fails t unless got and want have the same length and every
// element is within tol.
func Close(t testing.TB, what string, got, want []float64, tol Tol) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	m := 0.0
	if tol.Scale != 0 {
		for _, w := range want {
			if !math.IsNaN(w) {
				m = math.Max(m, math.Abs(w))
			}
		}
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.IsNaN(g) || math.IsNaN(w) {
			if !(tol.NaN && math.IsNaN(g) && math.IsNaN(w)) {
				t.Fatalf("%s: element %d = %v, want %v", what, i, g, w)
			}
			continue
		}
		if g == w {
			continue
		}
		if math.IsInf(g, 0) || math.IsInf(w, 0) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g, w)
		}
		bound := tol.Abs + tol.Rel*math.Max(math.Abs(w), tol.RelFloor) + tol.Scale*m
		if d := math.Abs(g - w); !(d <= bound) {
			t.Fatalf("%s: element %d = %.9g, want %.9g (|diff| %g > tol %g)", what, i, g, w, d, bound)
		}
	}
}

// Near fails t unless got and want have the same length and every
// |got[i] − want[i]| <= tol. Any NaN or infinity fails.
func Near(t testing.TB, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol) {
			t.Fatalf("%s: element %d = %.9g, want %.9g (±%g)", what, i, got[i], want[i], tol)
		}
	}
}

// CloseBound fails t unless got has shape wantShape and every element
// satisfies |got[i] − want[i]| <= rel·bound[i] (plus 1e-300), where bound
// holds, per element, the sum of the absolute values of the terms that
// make it up. Any NaN fails.
func CloseBound(t testing.TB, what string, got *tensor.Dense, wantShape []int, want, bound []float64, rel float64) {
	t.Helper()
	if !tensorx.SameShape(got.Shape(), wantShape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), wantShape)
	}
	g := Float64s(t, got)
	for i := range want {
		tol := rel*bound[i] + 1e-300
		if d := math.Abs(g[i] - want[i]); !(d <= tol) {
			t.Fatalf("%s: element %d = %v, want %v (|diff| %g > tol %g)", what, i, g[i], want[i], d, tol)
		}
	}
}

// ShapeIs fails t unless d has shape want.
func ShapeIs(t testing.TB, what string, d *tensor.Dense, want ...int) {
	t.Helper()
	if !tensorx.SameShape(d.Shape(), want) {
		t.Fatalf("%s: shape %v, want %v", what, d.Shape(), want)
	}
}

// BitDiff returns the index of the first element at which a and b differ
// bit for bit (floats by their bits, so +0 and −0 differ), or −1 if they
// are identical; slices of different lengths differ at the shorter length.
// With nanEq, any NaN matches any NaN whatever its payload.
func BitDiff[T tensorx.Elem](a, b []T, nanEq bool) int {
	n := min(len(a), len(b))
	for i := range n {
		if !sameBits(a[i], b[i], nanEq) {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func sameBits[T tensorx.Elem](x, y T, nanEq bool) bool {
	switch xv := any(x).(type) {
	case float32:
		yv := any(y).(float32)
		if nanEq && xv != xv && yv != yv {
			return true
		}
		return math.Float32bits(xv) == math.Float32bits(yv)
	case float64:
		yv := any(y).(float64)
		if nanEq && xv != xv && yv != yv {
			return true
		}
		return math.Float64bits(xv) == math.Float64bits(yv)
	}
	return x == y
}

// EqualBits fails t unless the float tensor got holds exactly the elements
// of want, bit for bit, except that any NaN matches any NaN.
func EqualBits[T tensorx.Float](t testing.TB, what string, got *tensor.Dense, want []T) {
	t.Helper()
	g, err := tensorx.Slice[T](got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	if i := BitDiff(g, want, true); i >= 0 {
		t.Fatalf("%s: element %d = %v, want %v; got %v", what, i, g[i], want[i], g)
	}
}

// errInternal matches registry.ErrInternal, which this package (below
// registry) cannot import, by its kind: registry's sentinels report a
// match with any error whose ErrorKind is theirs.
var errInternal error = errorKind("internal")

// errorKind is an error naming a kind of registry sentinel.
type errorKind string

func (k errorKind) Error() string { return string(k) + " error" }

// ErrorKind returns the kind.
func (k errorKind) ErrorKind() string { return string(k) }

// WantErr fails t unless err is an error wrapping kind, not wrapping
// registry.ErrInternal (a recovered panic) unless kind is that, and
// containing every fragment (the op's name, typically, and the message).
func WantErr(t testing.TB, err, kind error, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v %q", kind, frags)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %q does not wrap %v", err, kind)
	}
	if !errors.Is(kind, errInternal) && errors.Is(err, errInternal) {
		t.Fatalf("internal error (a panic?): %v", err)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q does not contain %q", err, f)
		}
	}
}

// BitEqual reports whether a and b hold the same elements bit for bit
// (compared as float64 values; a NaN matches only the same NaN).
func BitEqual(t testing.TB, a, b *tensor.Dense) bool {
	t.Helper()
	return BitDiff(Float64s(t, a), Float64s(t, b), false) < 0
}

// WantZeros fails the test (naming the case name) unless err is nil and
// out[0] has the given shape and only zeros.
func WantZeros(t testing.TB, name string, out []*tensor.Dense, err error, shape []int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	n := Numel(shape)
	CloseBound(t, name, out[0], shape, make([]float64, n), make([]float64, n), 0)
}
