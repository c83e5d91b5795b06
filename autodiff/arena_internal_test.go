package autodiff

import (
	"math"
	"os"
	"sync"
	"testing"

	"gorgonia.org/tensor"
)

// setPoisonEnv sets (or, with unset, removes) PoisonEnv for the test and
// makes the arena read it again.
func setPoisonEnv(t *testing.T, v string, unset bool) {
	t.Helper()
	t.Setenv(PoisonEnv, v)
	if unset {
		os.Unsetenv(PoisonEnv)
	}
	poisonOnce = sync.Once{}
	t.Cleanup(func() { poisonOnce = sync.Once{} })
}

// recycled allocates a buffer, fills it with 7, releases it and allocates
// the same shape again, dirty: the arena hands the same buffer back.
func recycled(t *testing.T) ([]float32, []int32) {
	t.Helper()
	var a arena
	f, err := a.Alloc(tensor.Float32, []int{2, 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	i, err := a.Alloc(tensor.Int32, []int{4}, false)
	if err != nil {
		t.Fatal(err)
	}
	for k := range f.Float32s() {
		f.Float32s()[k] = 7
	}
	for k := range i.Int32s() {
		i.Int32s()[k] = 7
	}
	a.Release(f)
	a.Release(i)
	f2, err := a.Alloc(tensor.Float32, []int{2, 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	i2, err := a.Alloc(tensor.Int32, []int{4}, false)
	if err != nil {
		t.Fatal(err)
	}
	if f2 != f || i2 != i {
		t.Fatal("the arena did not recycle the released buffers")
	}
	return f2.Float32s(), i2.Int32s()
}

// TestPoisoningOffByDefault: without TAPEGRAD_POISON (or with a false
// value) a recycled dirty buffer keeps its old contents.
func TestPoisoningOffByDefault(t *testing.T) {
	for _, c := range []struct {
		v     string
		unset bool
	}{{"", true}, {"", false}, {"0", false}, {"false", false}, {"junk", false}} {
		setPoisonEnv(t, c.v, c.unset)
		fs, is := recycled(t)
		for k, v := range fs {
			if v != 7 {
				t.Errorf("%s=%q (unset %v): float32[%d] = %v, want the old 7", PoisonEnv, c.v, c.unset, k, v)
			}
		}
		for k, v := range is {
			if v != 7 {
				t.Errorf("%s=%q (unset %v): int32[%d] = %v, want the old 7", PoisonEnv, c.v, c.unset, k, v)
			}
		}
	}
}

// TestPoisoningOn: with TAPEGRAD_POISON=1 a recycled dirty buffer is
// NaN-filled (floats) or sentinel-filled (integers); zeroed requests are
// still zero.
func TestPoisoningOn(t *testing.T) {
	for _, v := range []string{"1", "true"} {
		setPoisonEnv(t, v, false)
		fs, is := recycled(t)
		for k, x := range fs {
			if !math.IsNaN(float64(x)) {
				t.Errorf("%s=%s: float32[%d] = %v, want NaN", PoisonEnv, v, k, x)
			}
		}
		for k, x := range is {
			if x != -0x5a5a5a5a {
				t.Errorf("%s=%s: int32[%d] = %v, want the sentinel", PoisonEnv, v, k, x)
			}
		}
		var a arena
		d, _ := a.Alloc(tensor.Float64, []int{3}, false)
		a.Release(d)
		z, _ := a.Alloc(tensor.Float64, []int{3}, true)
		for k, x := range z.Float64s() {
			if x != 0 {
				t.Errorf("%s=%s: zeroed float64[%d] = %v, want 0", PoisonEnv, v, k, x)
			}
		}
	}
}
