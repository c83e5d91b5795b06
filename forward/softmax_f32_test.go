package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// smF32MaxUlps is the accuracy asserted for the float32 softmax family
// against its float64 kernels run on the same (float32) inputs: at most 4
// float32 ulps of the float64 result (ulps of the operand scale for the
// cross-entropy backprop, p - label, which cancels). The kernels round
// exp once (about half an ulp), then divide (or subtract the log-sum) in
// float32: about 2 ulps in all. math32.Exp alone is off by up to ~14 ulps.
const smF32MaxUlps = 4

// smUlp32 is the float32 ulp at |x| (the smallest subnormal at 0).
func smUlp32(x float64) float64 {
	f := float32(math.Abs(x))
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

// smF32Logits returns rows×cols float32-exact logits: multiples of 2^-8 in
// [-lim, lim] around centre, so that x - max(x) is exact in float32 and the
// test measures exp, not the subtraction. Rows cycle through centres and
// spreads: near +88 and -88 (the float32 exp overflow/underflow edges),
// spreads over all of [-88, 88], and ordinary [-10, 10].
func smF32Logits(r *rand.Rand, rows, cols int) []float64 {
	type band struct{ centre, lim float64 }
	bands := []band{{0, 10}, {88, 1}, {-88, 1}, {0, 88}, {80, 8}, {0, 30}}
	x := make([]float64, rows*cols)
	for i := range rows {
		b := bands[i%len(bands)]
		for j := range cols {
			v := b.centre + (2*r.Float64()-1)*b.lim
			x[i*cols+j] = math.Round(v*256) / 256
		}
	}
	return x
}

// smUlpCheck fails if got (float32 results) differs from want (float64
// results) by more than smF32MaxUlps ulps of max(|want|, scale[i]) (scale
// nil: of |want|), and returns the largest error seen in ulps.
func smUlpCheck(t *testing.T, what string, got, want, scale []float64) float64 {
	t.Helper()
	worst := 0.0
	for i := range want {
		s := math.Abs(want[i])
		if scale != nil {
			s = max(s, scale[i])
		}
		e := math.Abs(got[i]-want[i]) / smUlp32(s)
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) || e > smF32MaxUlps {
			t.Errorf("%s: element %d: float32 %v, float64 %v: %.1f ulps, want <= %d", what, i, got[i], want[i], e, smF32MaxUlps)
			return e
		}
		worst = max(worst, e)
	}
	return worst
}

// smRun32And64 runs op on the float32 inputs and on the same values as
// float64 and returns output k of each as float64.
func smRun32And64(t *testing.T, op string, k int, shapes [][]int, vals [][]float64, ints ...*tensor.Dense) (got, want []float64) {
	t.Helper()
	var res [2][]float64
	for i, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		var in []*tensor.Dense
		for j := range shapes {
			in = append(in, testutil.Dense(t, dt, shapes[j], vals[j]))
		}
		in = append(in, ints...)
		out, err := registrytest.Run(t, op, nil, 1, in...)
		if err != nil {
			t.Fatalf("%s %v: %v", op, dt, err)
		}
		res[i] = testutil.Float64s(t, out[k])
	}
	return res[0], res[1]
}

// TestSoftmaxFloat32Ulps: float32 Softmax, LogSoftmax and both
// cross-entropy ops agree with their float64 kernels on the same inputs
// within smF32MaxUlps, including logits near ±88 and spreads over
// [-88, 88].
func TestSoftmaxFloat32Ulps(t *testing.T) {
	r := rand.New(rand.NewSource(15))
	const rows, cols = 60, 37
	sh := []int{rows, cols}
	x := smF32Logits(r, rows, cols)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		got, want := smRun32And64(t, op, 0, [][]int{sh}, [][]float64{x})
		w := smUlpCheck(t, op, got, want, nil)
		t.Logf("%s: worst %.2f ulps", op, w)
	}

	// Dense labels: a distribution per row (powers of two, exact in
	// float32).
	lab := make([]float64, rows*cols)
	idx := make([]int, rows)
	for i := range rows {
		idx[i] = r.Intn(cols)
		lab[i*cols+idx[i]] = 0.5
		lab[i*cols+r.Intn(cols)] += 0.25
		lab[i*cols+r.Intn(cols)] += 0.25
	}
	for k, name := range []string{"loss", "backprop"} {
		got, want := smRun32And64(t, "SoftmaxCrossEntropyWithLogits", k, [][]int{sh, sh}, [][]float64{x, lab})
		var scale []float64
		if k == 1 {
			scale = make([]float64, len(want))
			for i := range want {
				scale[i] = max(math.Abs(want[i]+lab[i]), lab[i]) // max(p, label)
			}
		}
		w := smUlpCheck(t, "SoftmaxCrossEntropyWithLogits "+name, got, want, scale)
		t.Logf("SoftmaxCrossEntropyWithLogits %s: worst %.2f ulps", name, w)
	}
	for _, idt := range []tensor.Dtype{tensor.Int32, tensor.Int64} {
		for k, name := range []string{"loss", "backprop"} {
			what := fmt.Sprintf("SparseSoftmaxCrossEntropyWithLogits %v %s", idt, name)
			got, want := smRun32And64(t, "SparseSoftmaxCrossEntropyWithLogits", k, [][]int{sh}, [][]float64{x}, smIndexTensor(t, idt, idx))
			var scale []float64
			if k == 1 {
				scale = make([]float64, len(want))
				for i := range want {
					if i%cols == idx[i/cols] {
						scale[i] = 1 // p - 1
					}
				}
			}
			w := smUlpCheck(t, what, got, want, scale)
			t.Logf("%s: worst %.2f ulps", what, w)
		}
	}
}

// BenchmarkSoftmaxFloat32 is Softmax on a float32 [64, 1000] input.
func BenchmarkSoftmaxFloat32(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x := testutil.Dense(b, tensor.Float32, []int{64, 1000}, testutil.RandVals(r, 64*1000, 5, 0))
	b.SetBytes(64 * 1000 * 4)
	for b.Loop() {
		if _, err := registrytest.Run(b, "Softmax", nil, 1, x); err != nil {
			b.Fatal(err)
		}
	}
}
