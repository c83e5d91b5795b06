//go:build !race

package backward_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// fpParAllocBound is what FractionalAvgPoolGrad may allocate per call
// when its loops run on two threads: the closure handed to
// internal/parallel for each parallel loop (two in the overlapping case:
// contributions, then the gather).
const fpParAllocBound = 2

// TestFractionalAvgPoolGradAllocatesNothing checks FractionalAvgPoolGrad
// with recycled buffers, as the tape runs it in a training step: on a
// small problem and on the gradient of a [8,36,36,16] pooling (both cell
// kinds), one thread allocates nothing; on two threads, where the large
// problem's loops split, a closure per parallel loop at most. The
// two-thread count is taken with runtime.MemStats at the process's
// GOMAXPROCS (testing.AllocsPerRun runs at one), as the least of fifteen
// runs. (Excluded from -race builds, whose instrumentation allocates.)
func TestFractionalAvgPoolGradAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	f32 := func(shape ...int) *tensor.Dense {
		s := make([]float32, testutil.Numel(shape))
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		d, err := tensorx.New(shape, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	i64 := func(v ...int64) *tensor.Dense { return testutil.Int64s(t, v...) }
	fp := func(overlapping bool) forward.FractionalPoolAttrs {
		return forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Overlapping: overlapping,
			Deterministic: true, Seed: 3, Seed2: 4}
	}
	// The gradient with the sequences of a forward pooling.
	px := f32(8, 36, 36, 16)
	fpDef, err := registry.Lookup("FractionalAvgPool")
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := registry.Run(fpDef, nil, fp(true), []*tensor.Dense{px})
	if err != nil {
		t.Fatal(err)
	}
	py, rows, cols := pooled[0], pooled[1], pooled[2]
	cases := []struct {
		name    string
		attrs   any
		in      []*tensor.Dense
		threads []int
	}{
		{"small", nil, []*tensor.Dense{i64(2, 6, 6, 3), f32(2, 4, 4, 3), i64(0, 1, 3, 4, 6), i64(0, 2, 3, 5, 6)}, []int{1}},
		{"fp/grad", forward.FractionalPoolGradAttrs{}, []*tensor.Dense{i64(8, 36, 36, 16), py, rows, cols}, []int{1, 2}},
		{"fp/grad/overlap", forward.FractionalPoolGradAttrs{Overlapping: true},
			[]*tensor.Dense{i64(8, 36, 36, 16), py, rows, cols}, []int{1, 2}},
	}
	for _, c := range cases {
		for _, threads := range c.threads {
			run := registrytest.KernelRun(t, c.name, "FractionalAvgPoolGrad", c.attrs, threads, c.in)
			testutil.CheckAllocs(t, c.name, threads, fpParAllocBound, run)
		}
	}
}
