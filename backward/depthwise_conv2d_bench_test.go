package backward_test

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// ---------------------------------------------------------------------
// Benchmarks: W5 and W6 of cmd/bench/README.md (NHWC float32), one op per
// mode through registry.Run on pooled buffers (outputs and scratch are
// recycled, as the tape's arena does), like the op calls of cmd/bench
// without the tape. Run with -cpu 1,2: the thread count is GOMAXPROCS.
// Reported: wall ms, CPU ms (steadier on the shared machine) and the
// bandwidth of one pass over the operands (inputs read, output written).

func BenchmarkDepthwiseConv2d(b *testing.B) {
	for _, w := range []struct {
		name       string
		n, h, c, s int
	}{{"W5", 8, 56, 128, 1}, {"W6", 8, 112, 32, 2}} {
		for _, mode := range []string{"fwd", "bwd_input", "bwd_filter", "fwdbwd"} {
			b.Run(w.name+"/"+mode, func(b *testing.B) { dwOpBench(b, w.n, w.h, w.c, w.s, mode) })
		}
	}
}

func dwOpBench(b *testing.B, n, h, c, s int, mode string) {
	r := rand.New(rand.NewSource(1))
	attrs := forward.DepthwiseConv2dAttrs{Strides: []int{1, s, s, 1}, Padding: "SAME"}
	oh := (h + s - 1) / s
	xs, fs, ys := []int{n, h, h, c}, []int{3, 3, c, 1}, []int{n, oh, oh, c}
	x := testutil.Dense(b, tensor.Float32, xs, testutil.Normal(r, testutil.Numel(xs)))
	f := testutil.Dense(b, tensor.Float32, fs, testutil.Normal(r, testutil.Numel(fs)))
	dy := testutil.Dense(b, tensor.Float32, ys, testutil.Normal(r, testutil.Numel(ys)))
	xsz, fsz := testutil.Ints(b, xs...), testutil.Ints(b, fs...)
	pool := &testutil.PoolAlloc{}
	kc := &registry.KernelCtx{Alloc: pool, Threads: runtime.GOMAXPROCS(0)}
	run := func(op string, in ...*tensor.Dense) {
		def, err := registry.Lookup(op)
		if err != nil {
			b.Fatal(err)
		}
		out, err := registry.Run(def, kc, attrs, in)
		if err != nil {
			b.Fatal(err)
		}
		pool.Release(out[0])
	}
	X, F, Y := 4*testutil.Numel(xs), 4*testutil.Numel(fs), 4*testutil.Numel(ys)
	var bytes int
	step := func() {
		if mode == "fwd" || mode == "fwdbwd" {
			run("DepthwiseConv2dNative", x, f)
		}
		if mode == "bwd_input" || mode == "fwdbwd" {
			run("DepthwiseConv2dNativeBackpropInput", xsz, f, dy)
		}
		if mode == "bwd_filter" || mode == "fwdbwd" {
			run("DepthwiseConv2dNativeBackpropFilter", x, fsz, dy)
		}
	}
	switch mode {
	case "fwd":
		bytes = X + F + Y
	case "bwd_input":
		bytes = Y + F + X
	case "bwd_filter":
		bytes = X + Y + F
	default:
		bytes = 3 * (X + Y + F)
	}
	benchCPU(b, step)
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(bytes)*float64(b.N)/sec/1e9, "GB/s")
}

// ---------------------------------------------------------------------
// Benchmarks: workloads W5 and W6 of cmd/bench/README.md (NHWC float32),
// kernels alone, on pooled buffers (no page faults of fresh memory). Run
// with -cpu 1 for the 1-thread figures: the thread count is GOMAXPROCS.

type dwBenchAlloc struct{ pool map[string]*tensor.Dense }

func (a *dwBenchAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	k := fmt.Sprint(dt, shape)
	if d, ok := a.pool[k]; ok {
		if zeroed {
			clear(d.Float64s()) // only float64 scratch is asked zeroed here
		}
		return d, nil
	}
	d, err := tensorx.Zeros(dt, shape)
	a.pool[k] = d
	return d, err
}

func (a *dwBenchAlloc) Release(*tensor.Dense) {}

func dwBench(b *testing.B, n, h, w, c, s int, modes ...string) {
	r := rand.New(rand.NewSource(1))
	a := forward.DepthwiseConv2dAttrs{Strides: []int{1, s, s, 1}, Padding: "SAME"}
	oh, ow := (h+s-1)/s, (w+s-1)/s
	x := testutil.Dense(b, tensor.Float32, []int{n, h, w, c}, testutil.Normal(r, n*h*w*c))
	f := testutil.Dense(b, tensor.Float32, []int{3, 3, c, 1}, testutil.Normal(r, 9*c))
	dy := testutil.Dense(b, tensor.Float32, []int{n, oh, ow, c}, testutil.Normal(r, n*oh*ow*c))
	kc := &registry.KernelCtx{Alloc: &dwBenchAlloc{pool: map[string]*tensor.Dense{}}, Threads: runtime.GOMAXPROCS(0)}
	run := func(op string, in ...*tensor.Dense) {
		def, _ := registry.Lookup(op)
		if _, err := registry.Run(def, kc, a, in); err != nil {
			b.Fatal(err)
		}
	}
	step := func() {
		for _, m := range modes {
			switch m {
			case "fwd":
				run("DepthwiseConv2dNative", x, f)
			case "bi":
				run("DepthwiseConv2dNativeBackpropInput", testutil.Ints(b, n, h, w, c), f, dy)
			case "bf":
				run("DepthwiseConv2dNativeBackpropFilter", x, testutil.Ints(b, 3, 3, c, 1), dy)
			}
		}
	}
	benchCPU(b, step)
}

func BenchmarkDepthwiseW5Fwd(b *testing.B)       { dwBench(b, 8, 56, 56, 128, 1, "fwd") }
func BenchmarkDepthwiseW5BwdInput(b *testing.B)  { dwBench(b, 8, 56, 56, 128, 1, "bi") }
func BenchmarkDepthwiseW5BwdFilter(b *testing.B) { dwBench(b, 8, 56, 56, 128, 1, "bf") }
func BenchmarkDepthwiseW5FwdBwd(b *testing.B)    { dwBench(b, 8, 56, 56, 128, 1, "fwd", "bi", "bf") }
func BenchmarkDepthwiseW6Fwd(b *testing.B)       { dwBench(b, 8, 112, 112, 32, 2, "fwd") }
func BenchmarkDepthwiseW6BwdInput(b *testing.B)  { dwBench(b, 8, 112, 112, 32, 2, "bi") }
func BenchmarkDepthwiseW6BwdFilter(b *testing.B) { dwBench(b, 8, 112, 112, 32, 2, "bf") }
func BenchmarkDepthwiseW6FwdBwd(b *testing.B)    { dwBench(b, 8, 112, 112, 32, 2, "fwd", "bi", "bf") }
