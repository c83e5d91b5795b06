package optim

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

func TestClipGradNorm(t *testing.T) {
	a := param(t, "a", tensor.Float64, []int{2}, 0, 0)
	b := param(t, "b", tensor.Float32, []int{1}, 0)
	frozen := param(t, "frozen", tensor.Float64, []int{1}, 0)
	frozen.Trainable = false
	noGrad := param(t, "nograd", tensor.Float64, []int{1}, 0)
	ps := []*autodiff.Param{a, b, frozen, noGrad}
	reset := func() {
		setGrad(t, a, 3, 4)
		setGrad(t, b, 12)
		setGrad(t, frozen, 100)
	}

	// Norm √(9+16+144) = 13; below the limit nothing changes.
	reset()
	norm, err := ClipGradNorm(ps, 20)
	if err != nil || norm != 13 {
		t.Fatalf("norm %v, %v", norm, err)
	}
	checkClose(t, "a unclipped", values(t, a.Grad), []float64{3, 4}, 0)
	checkClose(t, "b unclipped", values(t, b.Grad), []float64{12}, 0)

	// Above: scaled by 6.5/(13 + 1e-6).
	reset()
	norm, err = ClipGradNorm(ps, 6.5)
	if err != nil || norm != 13 {
		t.Fatalf("norm %v, %v", norm, err)
	}
	c := 6.5 / (13 + 1e-6) // (constant arithmetic: exact, then rounded)
	checkClose(t, "a clipped", values(t, a.Grad), []float64{3 * c, 4 * c}, 1e-15)
	checkClose(t, "b clipped", values(t, b.Grad), []float64{float64(float32(12) * float32(c))}, 0)
	checkClose(t, "frozen untouched", values(t, frozen.Grad), []float64{100}, 0)
	if noGrad.Grad != nil {
		t.Error("a nil gradient was allocated")
	}
	// The clipped norm is maxNorm (up to the 1e-6 guard).
	after, _ := ClipGradNorm(ps, math.Inf(1))
	if math.Abs(after-6.5) > 1e-6 {
		t.Errorf("norm after clipping %v", after)
	}

	// Non-finite gradients: an error naming the parameter, and no
	// gradient changed (PyTorch's error_if_nonfinite=True).
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		reset()
		setGrad(t, a, bad, 1)
		norm, err = ClipGradNorm(ps, 1)
		if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), `parameter "a"`) || !math.IsNaN(norm) && !math.IsInf(norm, 1) {
			t.Errorf("gradient %v: norm %v, %v; want ErrNonFinite naming a", bad, norm, err)
		}
		if g := values(t, b.Grad)[0]; g != 12 {
			t.Errorf("gradient %v: b's gradient changed to %v", bad, g)
		}
		if g := values(t, a.Grad)[1]; g != 1 {
			t.Errorf("gradient %v: a's finite element changed to %v", bad, g)
		}
	}
	// A sum of squares that overflows float64 is non-finite too.
	reset()
	setGrad(t, a, 1e200, 1e200)
	if _, err := ClipGradNorm(ps, 1); !errors.Is(err, ErrNonFinite) || values(t, a.Grad)[0] != 1e200 {
		t.Errorf("overflowing norm: %v", err)
	}

	if n, err := ClipGradNorm(nil, 1); n != 0 || err != nil {
		t.Errorf("no parameters: %v %v", n, err)
	}
	if _, err := ClipGradNorm(ps, -1); !errors.Is(err, autodiff.ErrInvalidArgument) {
		t.Errorf("negative max norm: %v", err)
	}
	if _, err := ClipGradNorm([]*autodiff.Param{nil}, 1); !errors.Is(err, autodiff.ErrInvalidArgument) {
		t.Errorf("nil parameter: %v", err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		reset()
		if _, err := ClipGradNorm(ps, 1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
