package backward_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// biasGradNaive sums g over every dimension but cd, in float64.
func biasGradNaive(g []float64, shape []int, cd int) []float64 {
	inner := 1
	for _, d := range shape[cd+1:] {
		inner *= d
	}
	out := make([]float64, shape[cd])
	for i, v := range g {
		out[i/inner%shape[cd]] += v
	}
	return out
}

// TestBiasAddGrad compares BiasAddGrad with the naive float64 sums, for
// both data formats, float64 and float32, on 1 and 3 threads.
func TestBiasAddGrad(t *testing.T) {
	r := rand.New(rand.NewSource(26))
	shapes := [][]int{{2, 3}, {1, 5}, {3, 1}, {2, 3, 4}, {2, 2, 3, 4}, {1, 3, 2, 2, 2}, {2, 0, 3}, {0, 3}, {3, 4, 5, 6, 2, 3}, {64, 300}, {8, 33, 17, 9}}
	for _, s := range shapes {
		for _, format := range []string{"NHWC", "NCHW", ""} {
			if format == "NCHW" && len(s) < 3 {
				continue
			}
			cd := len(s) - 1
			if format == "NCHW" {
				cd = 1
			}
			x := testutil.RandDense(t, r, s...)
			wantG := biasGradNaive(x.Float64s(), s, cd)
			at := forward.BiasAddAttrs{DataFormat: format}
			name := fmt.Sprintf("BiasAddGrad %v %q", s, format)
			for _, threads := range []int{1, 3} {
				g := registrytest.MustRun(t, "BiasAddGrad", at, threads, x)[0]
				testutil.ShapeIs(t, "BiasAddGrad", g, []int{s[cd]}...)
				testutil.Close(t, name, g.Float64s(), wantG, testutil.Tol{Abs: 1e-12, Rel: 1e-12, NaN: true})
				g = registrytest.MustRun(t, "BiasAddGrad", at, threads, testutil.To32(t, x))[0]
				testutil.Close(t, name+" float32", testutil.Float64s(t, g), wantG, testutil.Tol{Abs: 1e-5, Rel: 1e-5, NaN: true})
			}
		}
	}
}

// TestBiasAddGradAccuracy: float32 sums accumulate in float64.
func TestBiasAddGradAccuracy(t *testing.T) {
	rows := 1 << 12
	v := make([]float32, 2*rows)
	v[0], v[1] = 1<<24, 1<<24
	for i := 2; i < len(v); i++ {
		v[i] = 1
	}
	g := registrytest.MustRun(t, "BiasAddGrad", nil, 2, testutil.New(t, []int{rows, 2}, v))[0]
	want := float32(1<<24 + rows - 1)
	if got := g.Float32s(); got[0] != want || got[1] != want {
		t.Fatalf("BiasAddGrad float32 = %v, want %v", got, want)
	}
}

func TestBiasAddGradErrors(t *testing.T) {
	r := rand.New(rand.NewSource(27))
	nchw := forward.BiasAddAttrs{DataFormat: "NCHW"}
	_, err := registrytest.Run(t, "BiasAddGrad", nil, 1, testutil.RandDense(t, r, 4))
	testutil.WantErr(t, err, registry.ErrShape, "BiasAddGrad", "Input tensor must be at least 2D: [4]")
	_, err = registrytest.Run(t, "BiasAddGrad", nchw, 1, testutil.RandDense(t, r, 4, 2))
	testutil.WantErr(t, err, registry.ErrShape, "BiasAddGrad", "at least rank 3")
}

// TestBiasAddGradSamples runs every sample of BiasAddGrad through the op.
func TestBiasAddGradSamples(t *testing.T) {
	d, err := registry.Lookup("BiasAddGrad")
	if err != nil {
		t.Fatal(err)
	}
	if d.Samples == nil {
		t.Fatal("BiasAddGrad has no sample generator")
	}
	ss := d.Samples(rand.New(rand.NewSource(9)))
	if len(ss) < 3 {
		t.Fatalf("BiasAddGrad: only %d samples", len(ss))
	}
	for _, s := range ss {
		if _, err := registrytest.Run(t, "BiasAddGrad", s.Attrs, 1, s.Inputs...); err != nil {
			t.Errorf("BiasAddGrad sample %s: %v", s.Name, err)
		}
	}
}
