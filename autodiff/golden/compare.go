package golden

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Tol is an elementwise tolerance: a float element passes when
// |got-want| <= Atol + Rtol*|want|.
type Tol struct {
	Rtol, Atol float64
}

// DefaultTol is the tolerance for a float tensor of dtype dt when the case
// gives none: rtol = atol = 1e-6 for float32 (a few ulps of float32's
// 1.2e-7 epsilon), rtol = atol = 1e-12 for float64, and exact otherwise.
func DefaultTol(dt tensor.Dtype) Tol {
	switch dt {
	case tensor.Float32:
		return Tol{Rtol: 1e-6, Atol: 1e-6}
	case tensor.Float64:
		return Tol{Rtol: 1e-12, Atol: 1e-12}
	}
	return Tol{}
}

// Compare checks got against want: dtype, shape and, if want has data,
// every element (floats within tol, NaN only against NaN, infinities
// exactly; integers and bools exactly). It returns "" on a match and
// otherwise a one-line description: the number of mismatched elements and
// the worst one (index, got, want, tolerance).
func Compare(want *Tensor, got *tensor.Dense, tol Tol) string {
	if got == nil {
		return "no tensor"
	}
	if got.Dtype() != want.Dtype {
		return fmt.Sprintf("dtype: got %v, want %v", got.Dtype(), want.Dtype)
	}
	if gs := got.Shape(); !tensorx.SameShape(gs, want.Shape) {
		return fmt.Sprintf("shape: got %v, want %v", []int(gs), want.Shape)
	}
	if !want.HasData() {
		return ""
	}
	g, err := tensorx.Contiguous(got)
	if err != nil {
		return err.Error()
	}
	switch w := want.Data.(type) {
	case []float32:
		return compareFloats(tensorx.MustSlice[float32](g), w, want.Shape, tol, 32)
	case []float64:
		return compareFloats(tensorx.MustSlice[float64](g), w, want.Shape, tol, 64)
	case []int32:
		return compareInts(tensorx.MustSlice[int32](g), w, want.Shape)
	case []int64:
		return compareInts(tensorx.MustSlice[int64](g), w, want.Shape)
	case []bool:
		return compareBools(tensorx.MustSlice[bool](g), w, want.Shape)
	}
	return fmt.Sprintf("unsupported data %T", want.Data)
}

// elemOK reports whether got matches want within tol, and for a mismatch a
// badness (how many tolerances off; +Inf for NaN/Inf mismatches and for a
// zero tolerance) and the absolute difference.
func elemOK(got, want float64, tol Tol) (ok bool, badness, diff float64) {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got), math.Inf(1), math.Inf(1)
	case math.IsInf(want, 0):
		return got == want, math.Inf(1), math.Inf(1)
	case math.IsNaN(got) || math.IsInf(got, 0):
		return false, math.Inf(1), math.Inf(1)
	}
	diff = math.Abs(got - want)
	bound := tol.Atol + tol.Rtol*math.Abs(want)
	if diff <= bound {
		return true, 0, diff
	}
	if bound > 0 {
		return false, diff / bound, diff
	}
	return false, math.Inf(1), diff
}

func compareFloats[T tensorx.Float](got, want []T, shape []int, tol Tol, bits int) string {
	bad, worst := 0, -1
	var worstBad, worstDiff float64
	for i := range want {
		ok, b, d := elemOK(float64(got[i]), float64(want[i]), tol)
		if ok {
			continue
		}
		bad++
		if worst < 0 || b > worstBad || (b == worstBad && d > worstDiff) {
			worst, worstBad, worstDiff = i, b, d
		}
	}
	if bad == 0 {
		return ""
	}
	g, w := float64(got[worst]), float64(want[worst])
	bound := tol.Atol + tol.Rtol*math.Abs(w)
	var detail string
	if math.IsNaN(g) || math.IsNaN(w) || math.IsInf(g, 0) || math.IsInf(w, 0) {
		detail = "non-finite values must match exactly"
	} else {
		detail = fmt.Sprintf("|diff| %s > tolerance %s (atol %g + rtol %g * |want|)", fmtFloat(worstDiff, 64), fmtFloat(bound, 64), tol.Atol, tol.Rtol)
	}
	return fmt.Sprintf("%d of %d elements out of tolerance; worst at %s: got %s, want %s, %s",
		bad, len(want), fmtIndex(worst, shape), fmtFloat(g, bits), fmtFloat(w, bits), detail)
}

func compareInts[T int32 | int64](got, want []T, shape []int) string {
	bad, worst := 0, -1
	var worstDiff float64
	for i := range want {
		if got[i] == want[i] {
			continue
		}
		bad++
		if d := math.Abs(float64(got[i]) - float64(want[i])); worst < 0 || d > worstDiff {
			worst, worstDiff = i, d
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d elements differ (integers compare exactly); worst at %s: got %d, want %d",
		bad, len(want), fmtIndex(worst, shape), got[worst], want[worst])
}

func compareBools(got, want []bool, shape []int) string {
	bad, first := 0, -1
	for i := range want {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d elements differ; first at %s: got %v, want %v",
		bad, len(want), fmtIndex(first, shape), got[first], want[first])
}

// fmtIndex formats flat index i of a tensor of the given shape as its
// coordinates, with the flat index for rank > 1.
func fmtIndex(i int, shape []int) string {
	if len(shape) == 0 {
		return "[] (scalar)"
	}
	coords := make([]string, len(shape))
	r := i
	for k := len(shape) - 1; k >= 0; k-- {
		coords[k] = strconv.Itoa(r % shape[k])
		r /= shape[k]
	}
	s := "[" + strings.Join(coords, " ") + "]"
	if len(shape) > 1 {
		s += fmt.Sprintf(" (flat %d)", i)
	}
	return s
}

func fmtFloat(v float64, bits int) string {
	return strconv.FormatFloat(v, 'g', -1, bits)
}
