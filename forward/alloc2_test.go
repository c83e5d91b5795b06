//go:build !race

package forward

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// allocCase is one op application whose steady-state allocations are
// pinned: no allocation at all on one thread, at most parAllocBound on
// two.
type allocCase struct {
	name  string
	op    string
	attrs any
	in    []*tensor.Dense
}

// allocCases returns the FusedBatchNorm, DepthwiseConv2dNative and
// FractionalAvgPool applications of TestKernelsAllocateNothingConvNorm
// (package backward pins FusedBatchNorm's gradient ops),
// on tensors large enough that two threads split every loop.
func allocCases(t *testing.T) []allocCase {
	r := rand.New(rand.NewSource(2))
	f32 := func(shape ...int) *tensor.Dense {
		s := make([]float32, prod(shape))
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		d, err := tensorx.New(shape, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	f64 := func(shape ...int) *tensor.Dense {
		s := make([]float64, prod(shape))
		for i := range s {
			s[i] = r.NormFloat64()
		}
		d, err := tensorx.New(shape, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pos32 := func(n int) *tensor.Dense {
		d := f32(n)
		for i, v := range d.Float32s() {
			d.Float32s()[i] = float32(math.Abs(float64(v))) + 0.5
		}
		return d
	}
	pos64 := func(n int) *tensor.Dense {
		d := f64(n)
		for i, v := range d.Float64s() {
			d.Float64s()[i] = math.Abs(v) + 0.5
		}
		return d
	}
	no := false
	nchw := "NCHW"
	bn := func(format string, training bool) FusedBatchNormAttrs {
		a := FusedBatchNormAttrs{DataFormat: format}
		if !training {
			a.IsTraining = &no
		}
		return a
	}
	factor := float32(0.9)
	avg := FusedBatchNormAttrs{ExponentialAvgFactor: &factor}
	dw := func(stride int, format string) DepthwiseConv2dAttrs {
		return DepthwiseConv2dAttrs{Strides: []int{1, stride, stride, 1}, Padding: "SAME", DataFormat: format}
	}
	dwNCHW := DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID", DataFormat: nchw}
	fp := func(overlapping bool) FractionalPoolAttrs {
		return FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Overlapping: overlapping,
			Deterministic: true, Seed: 3, Seed2: 4}
	}
	// x [8,16,16,32]: 64K elements, four reduction chunks.
	const n, h, w, c = 8, 16, 16, 32
	x := f32(n, h, w, c)
	xc := f32(n, c, h, w)
	sc, of, mu, va := f32(c), f32(c), f32(c), pos32(c)
	x64, sc64, va64 := f64(8, 16, 16, 16), f64(16), pos64(16)
	// Depthwise: 16 channels (the assembly kernels' float32 problems), a
	// multiplier-2 float64 problem (the Go loops) and an NCHW one.
	dx := f32(4, 24, 24, 16)
	df := f32(3, 3, 16, 1)
	dx64, df64 := f64(16, 16, 16, 6), f64(3, 3, 6, 2)
	dxc, dfc := f32(8, 8, 48, 48), f32(3, 3, 8, 1)
	// Fractional pooling of a [8,36,36,16] input (its gradient op is
	// checked in package backward).
	px := f32(8, 36, 36, 16)
	return []allocCase{
		{"bn/train/NHWC", "FusedBatchNormV3", bn("NHWC", true), []*tensor.Dense{x, sc, of, mu, va}},
		{"bn/train/NCHW", "FusedBatchNormV3", bn(nchw, true), []*tensor.Dense{xc, sc, of, mu, va}},
		{"bn/infer/NHWC", "FusedBatchNormV3", bn("NHWC", false), []*tensor.Dense{x, sc, of, mu, va}},
		{"bn/infer/NCHW", "FusedBatchNorm", bn(nchw, false), []*tensor.Dense{xc, sc, of, mu, va}},
		{"bn/avg/V1", "FusedBatchNorm", avg, []*tensor.Dense{x, sc, of, mu, va}},
		{"bn/train/f64", "FusedBatchNormV3", bn("NHWC", true), []*tensor.Dense{x64, sc64, sc64, sc64, va64}},

		{"dw/fwd/s1", "DepthwiseConv2dNative", dw(1, "NHWC"), []*tensor.Dense{dx, df}},
		{"dw/fwd/s2", "DepthwiseConv2dNative", dw(2, "NHWC"), []*tensor.Dense{dx, df}},
		{"dw/fwd/m2", "DepthwiseConv2dNative", dw(1, "NHWC"), []*tensor.Dense{dx64, df64}},
		{"dw/fwd/NCHW", "DepthwiseConv2dNative", dwNCHW, []*tensor.Dense{dxc, dfc}},

		{"fp/avg", "FractionalAvgPool", fp(false), []*tensor.Dense{px}},
		{"fp/avg/overlap", "FractionalAvgPool", fp(true), []*tensor.Dense{px}},
	}
}

// parAllocBound is what a kernel may allocate per call when its loops
// run on two threads: the closure handed to internal/parallel for each
// parallel loop, plus a heap copy of the loop's state for the depthwise
// ones (parallel's own bookkeeping is allocation-free, see its tests).
// The kernels here run at most two such loops (batch norm: statistics or
// gradient sums, then the elementwise pass), or one depthwise loop. A
// group allocated per call in internal/parallel would add three per loop.
const parAllocBound = 2

// TestKernelsAllocateNothingConvNorm extends TestKernelsAllocateNothing to
// FusedBatchNorm(V3), DepthwiseConv2dNative and FractionalAvgPool (their
// gradient ops' cases are in package backward): on one thread with recycled buffers a call
// allocates nothing; on two threads a closure per parallel loop at most.
// The two-thread count is taken with runtime.MemStats at the process's
// GOMAXPROCS (testing.AllocsPerRun runs at one, where every worker comes
// late), as the least of fifteen runs (up to 300 while none meets the
// bound): a run may also see the worker
// pool start a goroutine for a job while the worker it last handed one
// is still waking up (internal/parallel bounds the pool). (Excluded from
// -race builds, whose instrumentation allocates.)
func TestKernelsAllocateNothingConvNorm(t *testing.T) {
	for _, c := range allocCases(t) {
		for _, threads := range []int{1, 2} {
			run := registrytest.KernelRun(t, c.name, c.op, c.attrs, threads, c.in)
			testutil.CheckAllocs(t, c.name, threads, parAllocBound, run)
		}
	}
}

// prod returns the element count of shape (1 for a scalar).
func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
