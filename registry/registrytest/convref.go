package registrytest

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// CheckConvRef runs the three ops of a convolution family (ops: the
// forward, the input and the filter backprop) with attrs on random
// inputs of g's geometry, in float64 and float32, with 1 and 3 threads,
// against the reference g; results must be bit-identical across thread
// counts. When the output size is negative (ok false) the forward must
// refuse the geometry with TensorFlow's message instead. An empty name in
// ops skips that op (for a package where only some of the family's ops
// are registered).
func CheckConvRef(t *testing.T, c fmt.Stringer, ops [3]string, g testutil.ConvRef, ok bool, attrs any, seed int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	xs, fs := g.XShape(), g.FShape()
	x := testutil.Normal(r, testutil.Numel(xs))
	f := testutil.Normal(r, testutil.Numel(fs))
	if !ok {
		if ops[0] == "" {
			return
		}
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			_, err := Run(t, ops[0], attrs, 1, testutil.Dense(t, dt, xs, x), testutil.Dense(t, dt, fs, f))
			if err == nil || !strings.Contains(err.Error(), "Computed output size would be negative") {
				t.Fatalf("%v: want a negative-output-size error, got %v", c, err)
			}
		}
		return
	}
	ys := g.YShape()
	dy := testutil.Normal(r, testutil.Numel(ys))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		rel := 1e-13
		if dt == tensor.Float32 {
			rel = 3e-6
		}
		xr, fr, dyr := testutil.Round(dt, x), testutil.Round(dt, f), testutil.Round(dt, dy)
		xa, fa, dya := testutil.Abs(xr), testutil.Abs(fr), testutil.Abs(dyr)
		var wantY, boundY, wantDx, boundDx, wantDf, boundDf []float64
		if ops[0] != "" {
			wantY, boundY = g.Forward(xr, fr), g.Forward(xa, fa)
		}
		if ops[1] != "" {
			wantDx, boundDx = g.BackpropInput(fr, dyr), g.BackpropInput(fa, dya)
		}
		if ops[2] != "" {
			wantDf, boundDf = g.BackpropFilter(xr, dyr), g.BackpropFilter(xa, dya)
		}
		var first [3]*tensor.Dense
		for _, threads := range []int{1, 3} {
			name := fmt.Sprintf("%v/%v/t%d", c, dt, threads)
			var res [3]*tensor.Dense
			if ops[0] != "" {
				out, err := Run(t, ops[0], attrs, threads, testutil.Dense(t, dt, xs, x), testutil.Dense(t, dt, fs, f))
				if err != nil {
					t.Fatalf("%s: %s: %v", name, ops[0], err)
				}
				testutil.CloseBound(t, name+"/"+ops[0], out[0], ys, wantY, boundY, rel)
				res[0] = out[0]
			}
			if ops[1] != "" {
				dx, err := Run(t, ops[1], attrs, threads, testutil.Ints(t, xs...), testutil.Dense(t, dt, fs, f), testutil.Dense(t, dt, ys, dy))
				if err != nil {
					t.Fatalf("%s: %s: %v", name, ops[1], err)
				}
				testutil.CloseBound(t, name+"/"+ops[1], dx[0], xs, wantDx, boundDx, rel)
				res[1] = dx[0]
			}
			if ops[2] != "" {
				df, err := Run(t, ops[2], attrs, threads, testutil.Dense(t, dt, xs, x), testutil.Ints(t, fs...), testutil.Dense(t, dt, ys, dy))
				if err != nil {
					t.Fatalf("%s: %s: %v", name, ops[2], err)
				}
				testutil.CloseBound(t, name+"/"+ops[2], df[0], fs, wantDf, boundDf, rel)
				res[2] = df[0]
			}
			if threads == 1 {
				first = res
				continue
			}
			for i := range res {
				if ops[i] != "" && !testutil.BitEqual(t, first[i], res[i]) {
					t.Fatalf("%s: %s differs between 1 and %d threads", name, ops[i], threads)
				}
			}
		}
	}
}
