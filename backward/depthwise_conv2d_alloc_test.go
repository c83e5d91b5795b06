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

// dwParAllocBound is what a depthwise backprop may allocate per call when
// its loop runs on two threads: the closure handed to internal/parallel
// and a heap copy of the loop's state.
const dwParAllocBound = 2

// TestDepthwiseConv2dBackpropAllocateNothing pins the steady-state
// allocations of the two backprop ops (the float32 kernels' problems with
// 16 channels, a multiplier-2 float64 problem on the Go loops, and NCHW):
// on one thread with recycled buffers a call allocates nothing; on two
// threads at most dwParAllocBound. The two-thread count is taken with
// runtime.MemStats at the process's GOMAXPROCS (testing.AllocsPerRun runs
// at one, where every worker comes late), as the least of fifteen runs.
// (Excluded from -race builds, whose instrumentation allocates.)
func TestDepthwiseConv2dBackpropAllocateNothing(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	dense := func(dt tensor.Dtype, shape ...int) *tensor.Dense {
		return testutil.Dense(t, dt, shape, testutil.Normal(r, testutil.Numel(shape)))
	}
	f32 := func(shape ...int) *tensor.Dense { return dense(tensor.Float32, shape...) }
	f64 := func(shape ...int) *tensor.Dense { return dense(tensor.Float64, shape...) }
	i32 := func(v ...int) *tensor.Dense { return testutil.Ints(t, v...) }
	i64 := func(v ...int64) *tensor.Dense { return testutil.Int64s(t, v...) }
	dw := func(stride int, format string) forward.DepthwiseConv2dAttrs {
		return forward.DepthwiseConv2dAttrs{Strides: []int{1, stride, stride, 1}, Padding: "SAME", DataFormat: format}
	}
	dwNCHW := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID", DataFormat: "NCHW"}
	dx := f32(4, 24, 24, 16)
	df := f32(3, 3, 16, 1)
	dx64, df64 := f64(16, 16, 16, 6), f64(3, 3, 6, 2)
	dxc, dfc := f32(8, 8, 48, 48), f32(3, 3, 8, 1)
	for _, c := range []struct {
		name  string
		op    string
		attrs any
		in    []*tensor.Dense
	}{
		{"dw/input/s1", "DepthwiseConv2dNativeBackpropInput", dw(1, "NHWC"), []*tensor.Dense{i32(4, 24, 24, 16), df, dx}},
		{"dw/input/s2", "DepthwiseConv2dNativeBackpropInput", dw(2, "NHWC"), []*tensor.Dense{i32(4, 48, 48, 16), df, dx}},
		{"dw/input/m2", "DepthwiseConv2dNativeBackpropInput", dw(1, "NHWC"), []*tensor.Dense{i32(16, 16, 16, 6), df64, f64(16, 16, 16, 12)}},
		{"dw/input/NCHW", "DepthwiseConv2dNativeBackpropInput", dwNCHW, []*tensor.Dense{i32(8, 8, 48, 48), dfc, f32(8, 8, 46, 46)}},
		{"dw/filter/s1", "DepthwiseConv2dNativeBackpropFilter", dw(1, "NHWC"), []*tensor.Dense{dx, i32(3, 3, 16, 1), dx}},
		{"dw/filter/s2", "DepthwiseConv2dNativeBackpropFilter", dw(2, "NHWC"), []*tensor.Dense{f32(4, 48, 48, 16), i32(3, 3, 16, 1), dx}},
		{"dw/filter/m2", "DepthwiseConv2dNativeBackpropFilter", dw(1, "NHWC"), []*tensor.Dense{dx64, i64(3, 3, 6, 2), f64(16, 16, 16, 12)}},
		{"dw/filter/NCHW", "DepthwiseConv2dNativeBackpropFilter", dwNCHW, []*tensor.Dense{dxc, i32(3, 3, 8, 1), f32(8, 8, 46, 46)}},
	} {
		for _, threads := range []int{1, 2} {
			run := registrytest.KernelRun(t, c.name, c.op, c.attrs, threads, c.in)
			testutil.CheckAllocs(t, c.name, threads, dwParAllocBound, run)
		}
	}
}
