package forward

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"syscall"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/dwconv"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// ---------------------------------------------------------------------
// The assembly paths against the Go paths and the float64 reference.

// dwAsmCase is one geometry of TestDepthwiseConv2dAsmPaths.
type dwAsmCase struct {
	n, h, w, c, sh, sw, dh, dw int
	padding                    string
	pads                       [4]int
	nchw                       bool
}

// dwAsmCases covers the assembly paths (3x3, multiplier 1, column stride
// 1 or 2, column dilation 1, at least 8 channels): channel counts with
// and without a tail, tiny and odd images (empty interiors, rows with
// one or two valid filter rows), large explicit paddings, row strides
// and dilations 1–3; and neighbours that fall back to Go (column
// dilation 2, column stride 3, 7 channels).
func dwAsmCases() []dwAsmCase {
	var out []dwAsmCase
	idx := 0
	for _, c := range []int{8, 9, 16, 23, 40} {
		for _, s := range [][2]int{{1, 1}, {2, 2}, {1, 2}, {2, 1}, {3, 1}, {3, 2}} {
			for _, d := range [][2]int{{1, 1}, {2, 1}, {3, 1}} {
				for _, in := range [][2]int{{1, 1}, {2, 3}, {5, 4}, {7, 13}, {12, 17}} {
					idx++
					if (c == 16 || c == 23) && idx%3 != 0 {
						continue
					}
					padding := []string{"SAME", "VALID", "EXPLICIT"}[idx%3]
					pads := [4]int{}
					if padding == "EXPLICIT" {
						pads = [][4]int{{1, 1, 1, 1}, {0, 2, 3, 0}, {4, 1, 0, 5}, {2, 3, 2, 2}}[idx%4]
					}
					out = append(out, dwAsmCase{n: 1 + idx%2, h: in[0], w: in[1], c: c, sh: s[0], sw: s[1], dh: d[0], dw: d[1],
						padding: padding, pads: pads, nchw: idx%7 == 0})
				}
			}
		}
	}
	return append(out,
		dwAsmCase{n: 2, h: 9, w: 11, c: 17, sh: 1, sw: 1, dh: 1, dw: 2, padding: "SAME"},
		dwAsmCase{n: 1, h: 9, w: 14, c: 16, sh: 1, sw: 3, dh: 1, dw: 1, padding: "SAME"},
		dwAsmCase{n: 2, h: 6, w: 9, c: 7, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
		dwAsmCase{n: 2, h: 31, w: 29, c: 24, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
		dwAsmCase{n: 1, h: 20, w: 70, c: 136, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
	)
}

// TestDepthwiseConv2dAsmPaths runs the three ops in float32 with the
// assembly paths on and off, against the float64 reference (relative to
// the sum of the terms' magnitudes), with NaN-filled outputs and scratch,
// and with 1 and 3 threads (bit-identical).
func TestDepthwiseConv2dAsmPaths(t *testing.T) {
	fast := 0
	for i, c := range dwAsmCases() {
		g, ok := newDwNaive(c.nchw, c.n, c.h, c.w, c.c, 1, 3, 3, c.sh, c.sw, c.dh, c.dw, c.padding, c.pads)
		if !ok {
			continue
		}
		geom := dwGeom{m: 1, kh: 3, kw: 3, c: c.c, sw: c.sw, dw: c.dw}
		if dwconv.Enabled && dwAsmFits(&geom) {
			fast++
		}
		gc := dwGridCase{g: g, ok: true, padding: c.padding, pads: c.pads}
		r := rand.New(rand.NewSource(int64(i)))
		attrs := dwAttrsFor(&g, c.padding, c.pads)
		xs, fs, ys := g.xShape(), g.fShape(), g.yShape()
		x := testutil.Round(tensor.Float32, testutil.Normal(r, testutil.Numel(xs)))
		f := testutil.Round(tensor.Float32, testutil.Normal(r, testutil.Numel(fs)))
		dy := testutil.Round(tensor.Float32, testutil.Normal(r, testutil.Numel(ys)))
		want := [3][]float64{g.forward(x, f), g.backpropInput(f, dy), g.backpropFilter(x, dy)}
		xa, fa, dya := testutil.Abs(x), testutil.Abs(f), testutil.Abs(dy)
		bound := [3][]float64{g.forward(xa, fa), g.backpropInput(fa, dya), g.backpropFilter(xa, dya)}
		shapes := [3][]int{ys, xs, fs}
		for _, asm := range []bool{true, false} {
			func() {
				old := dwUseAsm
				dwUseAsm = asm && dwconv.Enabled
				defer func() { dwUseAsm = old }()
				var first [3]*tensor.Dense
				for _, threads := range []int{1, 3} {
					name := fmt.Sprintf("%v/asm=%v/t%d", &gc, asm, threads)
					res := [3]*tensor.Dense{
						registrytest.MustRun(t, "DepthwiseConv2dNative", attrs, threads,
							testutil.Dense(t, tensor.Float32, xs, x), testutil.Dense(t, tensor.Float32, fs, f))[0],
						registrytest.MustRun(t, "DepthwiseConv2dNativeBackpropInput", attrs, threads,
							testutil.Ints(t, xs...), testutil.Dense(t, tensor.Float32, fs, f), testutil.Dense(t, tensor.Float32, ys, dy))[0],
						registrytest.MustRun(t, "DepthwiseConv2dNativeBackpropFilter", attrs, threads,
							testutil.Dense(t, tensor.Float32, xs, x), testutil.Ints(t, fs...), testutil.Dense(t, tensor.Float32, ys, dy))[0],
					}
					for k, op := range []string{"forward", "BackpropInput", "BackpropFilter"} {
						testutil.CloseBound(t, name+"/"+op, res[k], shapes[k], want[k], bound[k], 3e-6)
					}
					if threads == 1 {
						first = res
						continue
					}
					for k := range res {
						if !testutil.BitEqual(t, first[k], res[k]) {
							t.Fatalf("%s: op %d differs between 1 and %d threads", name, k, threads)
						}
					}
				}
			}()
		}
	}
	if dwconv.Enabled && fast < 100 {
		t.Fatalf("only %d cases take the assembly paths", fast)
	}
}

// TestDepthwiseConv2dAsmNonFinite checks that the assembly paths treat
// padding as absent, like the Go paths: an infinite filter tap or
// out_backprop value meets no padded zero (which would make a NaN), so
// both paths give the same infinities and NaNs, and close finite values.
func TestDepthwiseConv2dAsmNonFinite(t *testing.T) {
	if !dwconv.Enabled {
		t.Skip("no assembly kernels on this CPU or build")
	}
	inf := math.Inf(1)
	for i, c := range []dwAsmCase{
		{n: 1, h: 5, w: 7, c: 9, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
		{n: 2, h: 8, w: 9, c: 16, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
		{n: 1, h: 6, w: 12, c: 8, sh: 1, sw: 2, dh: 2, dw: 1, padding: "EXPLICIT", pads: [4]int{2, 1, 1, 2}},
	} {
		g, ok := newDwNaive(false, c.n, c.h, c.w, c.c, 1, 3, 3, c.sh, c.sw, c.dh, c.dw, c.padding, c.pads)
		if !ok {
			t.Fatalf("case %d: bad geometry", i)
		}
		r := rand.New(rand.NewSource(int64(i)))
		attrs := dwAttrsFor(&g, c.padding, c.pads)
		xs, fs, ys := g.xShape(), g.fShape(), g.yShape()
		x := testutil.Normal(r, testutil.Numel(xs))
		f := testutil.Normal(r, testutil.Numel(fs))
		dy := testutil.Normal(r, testutil.Numel(ys))
		// Channel 0: every tap +Inf, input and out_backprop positive, so
		// every output and input-gradient element with a valid tap is +Inf
		// (a padded zero times Inf would make it NaN). Channel 1: positive
		// input, out_backprop −Inf at the first two output pixels only,
		// whose windows cross the top border (and the left one): the
		// filter-gradient taps that read padding there stay finite.
		for k := range 9 {
			f[k*c.c] = inf
		}
		for e := range x {
			if ch := e % c.c; ch < 2 {
				x[e] = math.Abs(x[e]) + 0.5
			}
		}
		for e := range dy {
			if e%c.c == 0 {
				dy[e] = math.Abs(dy[e]) + 0.5
			}
		}
		dy[1], dy[c.c+1] = -inf, -inf
		var res [2][3][]float64
		for k, asm := range []bool{true, false} {
			func() {
				old := dwUseAsm
				dwUseAsm = asm
				defer func() { dwUseAsm = old }()
				res[k] = [3][]float64{
					testutil.Float64s(t, registrytest.MustRun(t, "DepthwiseConv2dNative", attrs, 1,
						testutil.Dense(t, tensor.Float32, xs, x), testutil.Dense(t, tensor.Float32, fs, f))[0]),
					testutil.Float64s(t, registrytest.MustRun(t, "DepthwiseConv2dNativeBackpropInput", attrs, 1,
						testutil.Ints(t, xs...), testutil.Dense(t, tensor.Float32, fs, f), testutil.Dense(t, tensor.Float32, ys, dy))[0]),
					testutil.Float64s(t, registrytest.MustRun(t, "DepthwiseConv2dNativeBackpropFilter", attrs, 1,
						testutil.Dense(t, tensor.Float32, xs, x), testutil.Ints(t, fs...), testutil.Dense(t, tensor.Float32, ys, dy))[0]),
				}
			}()
		}
		for k, op := range []string{"forward", "BackpropInput", "BackpropFilter"} {
			nonFinite, finite := 0, 0
			for e, a := range res[0][k] {
				b := res[1][k][e]
				switch {
				case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0):
					nonFinite++
					if !(math.IsNaN(a) && math.IsNaN(b)) && a != b {
						t.Fatalf("case %d %s: element %d is %v with assembly, %v in Go", i, op, e, a, b)
					}
				case math.Abs(a-b) > 1e-5*(1+math.Abs(b)):
					t.Fatalf("case %d %s: element %d is %v with assembly, %v in Go", i, op, e, a, b)
				default:
					finite++
				}
			}
			if nonFinite == 0 || finite == 0 {
				t.Fatalf("case %d %s: %d non-finite and %d finite elements, want both", i, op, nonFinite, finite)
			}
		}
	}
}

// ---------------------------------------------------------------------
// Benchmarks: W5 and W6 of perf/WORKLOADS.md (NHWC float32), one op per
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
	attrs := DepthwiseConv2dAttrs{Strides: []int{1, s, s, 1}, Padding: "SAME"}
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
	step()
	b.ResetTimer()
	cpu0 := dwBenchCPUTime()
	for range b.N {
		step()
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(dwBenchCPUTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(bytes)*float64(b.N)/sec/1e9, "GB/s")
}

// dwBenchCPUTime returns the process's user+system CPU time in
// nanoseconds.
func dwBenchCPUTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
