package backward_test

import (
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// Benchmarks of the Conv2D kernels on workloads W1–W4 of
// cmd/bench/README.md (NHWC float32, SAME padding), kernels alone on pooled
// buffers. The thread count is GOMAXPROCS: run with -cpu 1 or -cpu 2.

func convBench(b *testing.B, n, h, w, c, o, k, s int, modes ...string) {
	r := rand.New(rand.NewSource(1))
	a := forward.Conv2DAttrs{Strides: []int{1, s, s, 1}, Padding: "SAME"}
	oh, ow := (h+s-1)/s, (w+s-1)/s
	x := testutil.Dense(b, tensor.Float32, []int{n, h, w, c}, testutil.Normal(r, n*h*w*c))
	f := testutil.Dense(b, tensor.Float32, []int{k, k, c, o}, testutil.Normal(r, k*k*c*o))
	dy := testutil.Dense(b, tensor.Float32, []int{n, oh, ow, o}, testutil.Normal(r, n*oh*ow*o))
	pool := &testutil.PoolAlloc{}
	kc := &registry.KernelCtx{Alloc: pool, Threads: runtime.GOMAXPROCS(0)}
	xs, fs := testutil.Ints(b, n, h, w, c), testutil.Ints(b, k, k, c, o)
	run := func(op string, in ...*tensor.Dense) {
		def, err := registry.Lookup(op)
		if err != nil {
			b.Fatal(err)
		}
		out, err := registry.Run(def, kc, a, in)
		if err != nil {
			b.Fatal(err)
		}
		pool.Release(out[0])
	}
	step := func() {
		for _, m := range modes {
			switch m {
			case "fwd":
				run("Conv2D", x, f)
			case "bi":
				run("Conv2DBackpropInput", xs, f, dy)
			case "bf":
				run("Conv2DBackpropFilter", x, fs, dy)
			}
		}
	}
	benchCPU(b, step)
}

func BenchmarkConv2DW1Fwd(b *testing.B)       { convBench(b, 32, 32, 32, 16, 32, 3, 1, "fwd") }
func BenchmarkConv2DW1BwdInput(b *testing.B)  { convBench(b, 32, 32, 32, 16, 32, 3, 1, "bi") }
func BenchmarkConv2DW1BwdFilter(b *testing.B) { convBench(b, 32, 32, 32, 16, 32, 3, 1, "bf") }
func BenchmarkConv2DW1FwdBwd(b *testing.B)    { convBench(b, 32, 32, 32, 16, 32, 3, 1, "fwd", "bi", "bf") }
func BenchmarkConv2DW2FwdBwd(b *testing.B)    { convBench(b, 8, 56, 56, 64, 64, 3, 1, "fwd", "bi", "bf") }
func BenchmarkConv2DW3FwdBwd(b *testing.B)    { convBench(b, 8, 56, 56, 64, 128, 3, 2, "fwd", "bi", "bf") }
func BenchmarkConv2DW4FwdBwd(b *testing.B) {
	convBench(b, 8, 28, 28, 128, 256, 1, 1, "fwd", "bi", "bf")
}
func BenchmarkConv2DW2BwdFilter(b *testing.B) { convBench(b, 8, 56, 56, 64, 64, 3, 1, "bf") }
func BenchmarkConv2DW3BwdFilter(b *testing.B) { convBench(b, 8, 56, 56, 64, 128, 3, 2, "bf") }
func BenchmarkConv2DW4BwdFilter(b *testing.B) { convBench(b, 8, 28, 28, 128, 256, 1, 1, "bf") }

// BenchmarkConv2DW10Conv2BwdInput: the input gradient of W10's strided
// conv (N64 28×28, 32→64, 3×3 s2): the phase path.
func BenchmarkConv2DW10Conv2BwdInput(b *testing.B) { convBench(b, 64, 28, 28, 32, 64, 3, 2, "bi") }
