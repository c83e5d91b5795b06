//go:build !race

package backward_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// bnParAllocBound is what a gradient op of the FusedBatchNorm family may
// allocate per call when its loops run on two threads: the closure handed
// to internal/parallel for each of its two parallel loops (gradient sums,
// then the elementwise pass).
const bnParAllocBound = 2

// TestFusedBatchNormGradAllocateNothing pins the allocations of
// FusedBatchNormGrad(V3), on tensors large enough that two threads split
// every loop: on one thread with recycled buffers a call allocates
// nothing; on two threads a closure per parallel loop at most. The
// two-thread count is taken with runtime.MemStats at the process's
// GOMAXPROCS (testing.AllocsPerRun runs at one, where every worker comes
// late), as the least of fifteen runs: a run may also see the worker pool
// start a goroutine for a job while the worker it last handed one is
// still waking up (internal/parallel bounds the pool). (Excluded from
// -race builds, whose instrumentation allocates.)
func TestFusedBatchNormGradAllocateNothing(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	f32 := func(shape ...int) *tensor.Dense {
		return testutil.Dense(t, tensor.Float32, shape, testutil.Normal(r, testutil.Numel(shape)))
	}
	f64 := func(shape ...int) *tensor.Dense {
		return testutil.Dense(t, tensor.Float64, shape, testutil.Normal(r, testutil.Numel(shape)))
	}
	pos := func(dt tensor.Dtype, n int) *tensor.Dense {
		v := testutil.Abs(testutil.Normal(r, n))
		for i := range v {
			v[i] += 0.5
		}
		return testutil.Dense(t, dt, []int{n}, v)
	}
	no := false
	nchw := "NCHW"
	bnGrad := func(format string, training bool) forward.FusedBatchNormGradAttrs {
		a := forward.FusedBatchNormGradAttrs{DataFormat: format}
		if !training {
			a.IsTraining = &no
		}
		return a
	}
	// x [8,16,16,32]: 64K elements, four reduction chunks.
	const n, h, w, c = 8, 16, 16, 32
	x, dy := f32(n, h, w, c), f32(n, h, w, c)
	xc := f32(n, c, h, w)
	sc, mu, va := f32(c), f32(c), pos(tensor.Float32, c)
	x64, sc64, va64 := f64(8, 16, 16, 16), f64(16), pos(tensor.Float64, 16)
	cases := []struct {
		name  string
		op    string
		attrs any
		in    []*tensor.Dense
	}{
		{"bngrad/train/NHWC", "FusedBatchNormGradV3", bnGrad("NHWC", true), []*tensor.Dense{dy, x, sc, mu, va, f32()}},
		{"bngrad/train/NCHW", "FusedBatchNormGradV3", bnGrad(nchw, true), []*tensor.Dense{xc, xc, sc, mu, va, f32()}},
		{"bngrad/infer/NHWC", "FusedBatchNormGrad", bnGrad("NHWC", false), []*tensor.Dense{dy, x, sc, mu, va}},
		{"bngrad/infer/NCHW", "FusedBatchNormGradV3", bnGrad(nchw, false), []*tensor.Dense{xc, xc, sc, mu, va, f32()}},
		{"bngrad/train/f64", "FusedBatchNormGradV3", bnGrad("NHWC", true), []*tensor.Dense{x64, x64, sc64, sc64, va64, f64()}},
	}
	for _, c := range cases {
		for _, threads := range []int{1, 2} {
			run := registrytest.KernelRun(t, c.name, c.op, c.attrs, threads, c.in)
			testutil.CheckAllocs(t, c.name, threads, bnParAllocBound, run)
		}
	}
}
