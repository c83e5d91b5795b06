//go:build !race

package forward

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestKernelsAllocateNothing checks that the kernels of the ops a training
// step runs most (elementwise, broadcasting, reductions, shapes, MatMul,
// BiasAdd, cross entropy, pooling) allocate nothing of their own when their
// buffers are recycled and they run on one thread: output shapes stay on
// the stack (KernelCtx copies them), results go through kc.Results, and
// loops run without a closure for parallel.For. (Excluded from -race
// builds, whose instrumentation allocates.)
func TestKernelsAllocateNothing(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	f32 := func(shape ...int) *tensor.Dense {
		d, err := tensorx.New(shape, make([]float32, tensorx.Len(SampleNormal(r, shape...))))
		if err != nil {
			t.Fatal(err)
		}
		for i := range d.Float32s() {
			d.Float32s()[i] = float32(r.NormFloat64())
		}
		return d
	}
	i32 := func(v ...int) *tensor.Dense { return testutil.Ints(t, v...) }
	labels, _ := tensorx.New([]int{4}, []int32{0, 2, 1, 2})
	cases := []struct {
		op    string
		attrs any
		in    []*tensor.Dense
	}{
		{"Relu", nil, []*tensor.Dense{f32(4, 5)}},
		{"AddV2", nil, []*tensor.Dense{f32(4, 5), f32(4, 5)}},
		{"Mul", nil, []*tensor.Dense{f32(4, 5), f32()}},
		{"Sub", nil, []*tensor.Dense{f32(4, 5), f32(5)}},
		{"RealDiv", nil, []*tensor.Dense{f32(2, 3, 5), f32(2, 1, 5)}},
		{"BroadcastTo", nil, []*tensor.Dense{f32(1, 5), i32(4, 5)}},
		{"Reshape", nil, []*tensor.Dense{f32(4, 5), i32(-1, 10)}},
		{"Transpose", nil, []*tensor.Dense{f32(4, 5), i32(1, 0)}},
		{"Sum", SumAttrs{}, []*tensor.Dense{f32(4, 5), i32(0)}},
		{"Sum", SumAttrs{KeepDims: true}, []*tensor.Dense{f32(4, 5), i32(1)}},
		{"Mean", SumAttrs{}, []*tensor.Dense{f32(2, 3, 5), i32(0, 1)}},
		{"tapegrad.ReducedShape", nil, []*tensor.Dense{i32(2, 3, 5), i32(1)}},
		{"MatMul", MatMulAttrs{TransposeB: true}, []*tensor.Dense{f32(4, 5), f32(3, 5)}},
		{"BiasAdd", BiasAddAttrs{DataFormat: "NHWC"}, []*tensor.Dense{f32(4, 5), f32(5)}},
		{"BiasAdd", BiasAddAttrs{DataFormat: "NCHW"}, []*tensor.Dense{f32(2, 5, 3, 3), f32(5)}},
		{"SparseSoftmaxCrossEntropyWithLogits", nil, []*tensor.Dense{f32(4, 3), labels}},
		{"Cast", CastAttrs{DstT: tensor.Int64}, []*tensor.Dense{i32(2, 3)}},
		{"AddN", nil, []*tensor.Dense{f32(4, 5), f32(4, 5), f32(4, 5)}},
		{"OnesLike", nil, []*tensor.Dense{f32(4, 5)}},
		{"Fill", nil, []*tensor.Dense{i32(4, 5), f32()}},
		{"Softmax", nil, []*tensor.Dense{f32(4, 3)}},
		{"FractionalAvgPool", FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Deterministic: true, Seed: 1, Seed2: 1},
			[]*tensor.Dense{f32(2, 6, 6, 3)}},
	}
	for _, c := range cases {
		run := registrytest.KernelRun(t, c.op, c.op, c.attrs, 1, c.in)
		run()
		if n := testing.AllocsPerRun(20, run); n != 0 {
			t.Errorf("%s %v: %v allocations per run", c.op, c.in[0].Shape(), n)
		}
	}
}
