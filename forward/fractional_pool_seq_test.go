package forward

import (
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestFractionalPoolSeeds checks the op-level seed handling: non-zero
// seeds give the same sequences on every call and thread count (rows from
// the generator's first blocks, columns after the rows' reservation);
// zero seeds draw from the context's source.
func TestFractionalPoolSeeds(t *testing.T) {
	x := testutil.New(t, []int{2, 23, 17, 3}, testutil.Arange(2*23*17*3))
	a := FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.73, 1}, Deterministic: true, Seed: 123, Seed2: 456}
	// Expected sequences straight from the generator.
	g := philox.New(123, 456)
	wantRows, wantCols := make([]int64, 16), make([]int64, 10)
	fracpool.Sequence(wantRows, 23, 15, &g, false)
	fracpool.Sequence(wantCols, 17, 9, &g, false)
	for _, op := range []string{fpAvgName, fpMaxName} {
		var first []*tensor.Dense
		for i, threads := range []int{1, 4, 1} {
			out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, int64(i)), op, a, x)
			if fmt.Sprint(out[1].Int64s()) != fmt.Sprint(wantRows) || fmt.Sprint(out[2].Int64s()) != fmt.Sprint(wantCols) {
				t.Fatalf("%s: sequences %v %v, want %v %v", op, out[1].Int64s(), out[2].Int64s(), wantRows, wantCols)
			}
			if first == nil {
				first = out
			} else if testutil.BitDiff(out[0].Float64s(), first[0].Float64s(), false) >= 0 {
				t.Fatalf("%s: output differs between calls/thread counts", op)
			}
		}
	}
	// Seeds 0: drawn from the context's source. The same source seed gives
	// the same sequences; other source seeds give others.
	a = FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.73, 1}}
	seqs := map[string]bool{}
	var ref string
	for s := int64(0); s < 8; s++ {
		out := registrytest.MustRunKC(t, registrytest.SeededKC(2, s), fpAvgName, a, x)
		key := fmt.Sprint(out[1].Int64s(), out[2].Int64s())
		seqs[key] = true
		if s == 3 {
			ref = key
		}
	}
	if len(seqs) < 4 {
		t.Fatalf("only %d distinct sequence pairs from 8 source seeds", len(seqs))
	}
	if out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 3), fpAvgName, a, x); fmt.Sprint(out[1].Int64s(), out[2].Int64s()) != ref {
		t.Fatal("the same source seed gave different sequences")
	}
	// The draws use the source: two calls on one context differ.
	kc := registrytest.SeededKC(1, 5)
	o1 := registrytest.MustRunKC(t, kc, fpAvgName, a, x)
	k1 := fmt.Sprint(o1[1].Int64s(), o1[2].Int64s())
	differ := false
	for i := 0; i < 5 && !differ; i++ {
		o := registrytest.MustRunKC(t, kc, fpAvgName, a, x)
		differ = fmt.Sprint(o[1].Int64s(), o[2].Int64s()) != k1
	}
	if !differ {
		t.Fatal("zero seeds gave the same sequences on six calls of one context")
	}
	// Deterministic with zero seeds also draws from the source (no kernel
	// instances to cache them in); a nil source is allowed.
	a.Deterministic = true
	if _, err := registrytest.RunKC(t, nil, fpAvgName, a, x); err != nil {
		t.Fatal(err)
	}
}

type fpErrCase struct {
	name string
	op   string
	attr any
	in   []*tensor.Dense
	kind error
	msg  string
}

func fpErrCases(t *testing.T) []fpErrCase {
	f64 := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.New(t, shape, make([]float64, n))
	}
	ratio := func(r ...float32) FractionalPoolAttrs { return FractionalPoolAttrs{PoolingRatio: r} }
	x := f64(1, 6, 6, 2)
	var cs []fpErrCase
	for _, op := range []string{fpAvgName, fpMaxName} {
		kind := "average"
		if op == fpMaxName {
			kind = "max"
		}
		cs = append(cs,
			fpErrCase{"ratio-len", op, ratio(1, 2, 1), []*tensor.Dense{x}, registry.ErrInvalidArgument, "pooling_ratio field must specify 4 dimensions"},
			fpErrCase{"ratio-below-1", op, ratio(1, 0.5, 2, 1), []*tensor.Dense{x}, registry.ErrInvalidArgument, "pooling_ratio cannot be smaller than 1, got: 0.5"},
			fpErrCase{"FAPE2", op, ratio(1, -1, 3, 1), []*tensor.Dense{f64(3, 30, 30, 3)}, registry.ErrInvalidArgument, "pooling_ratio cannot be smaller than 1"},
			fpErrCase{"ratio-NaN", op, ratio(1, float32(math.NaN()), 2, 1), []*tensor.Dense{x}, registry.ErrInvalidArgument, "cannot be smaller than 1"},
			fpErrCase{"FAPE3", op, FractionalPoolAttrs{PoolingRatio: []float32{2, 3, 1.5, 1}, PseudoRandom: true, Overlapping: true},
				[]*tensor.Dense{f64(3, 30, 50, 3)}, registry.ErrUnimplemented, "Fractional " + kind + " pooling is not yet supported on the batch nor channel dimension"},
			fpErrCase{"channel-ratio", op, ratio(1, 2, 2, 1.5), []*tensor.Dense{x}, registry.ErrUnimplemented, "batch nor channel"},
			fpErrCase{"seed-not-deterministic", op, FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}, Seed2: 3},
				[]*tensor.Dense{x}, registry.ErrInvalidArgument, "Both seed and seed2 should be 0 if deterministic is false."},
			fpErrCase{"rank", op, ratio(1, 2, 2, 1), []*tensor.Dense{f64(6, 6, 2)}, registry.ErrShape, "tensor_in must be 4-dimensional"},
			fpErrCase{"FAPE1", op, ratio(1, 1.44, 1.73, 1), []*tensor.Dense{testutil.New(t, []int{1, 1, 1, 4}, []int64{1, 4, 2, 3})},
				registry.ErrInvalidArgument, "Pooling ratio is higher than input dimension size for dimension 1. Input dim size: 1 pooling ratio: 1.44"},
			fpErrCase{"empty-batch", op, ratio(1, 2, 2, 1), []*tensor.Dense{f64(0, 6, 6, 2)}, registry.ErrInvalidArgument, "for dimension 0"},
			fpErrCase{"empty-depth", op, ratio(1, 2, 2, 1), []*tensor.Dense{f64(1, 6, 6, 0)}, registry.ErrInvalidArgument, "for dimension 3"},
			fpErrCase{"dtype", op, ratio(1, 2, 2, 1), []*tensor.Dense{testutil.New(t, []int{1, 2, 2, 1}, []bool{true, false, true, false})}, registry.ErrDtype, "no kernel"},
		)
	}
	return cs
}

// TestFractionalPoolErrors checks the spec'd errors of the forward ops
// (FAPE1–FAPE3) and tapegrad's extra validation: an error wrapping the
// right sentinel, naming the op, never a panic. The gradient ops' errors
// (FAPE4–FAPE6, §7) are checked in package backward.
func TestFractionalPoolErrors(t *testing.T) {
	for _, c := range fpErrCases(t) {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.RunKC(t, registrytest.SeededKC(2, 1), c.op, c.attr, c.in...)
			testutil.WantErr(t, err, c.kind, c.op, c.msg)
		})
	}
}

// TestFractionalPoolAttrsParse checks the attrs parse from golden-case
// JSON (TensorFlow names, float list to float32).
func TestFractionalPoolAttrsParse(t *testing.T) {
	def, err := registry.Lookup(fpAvgName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := def.ParseAttrs(map[string]any{"pooling_ratio": []any{1.0, 1.4142135, 1.73, 1.0}, "pseudo_random": true,
		"overlapping": true, "deterministic": true, "seed": 3.0, "seed2": 4.0, "T": "float32"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err = def.NormalizeAttrs(a); err != nil {
		t.Fatal(err)
	}
	got := a.(FractionalPoolAttrs)
	if got.PoolingRatio[1] != float32(1.4142135) || !got.PseudoRandom || !got.Overlapping || !got.Deterministic || got.Seed != 3 || got.Seed2 != 4 {
		t.Fatalf("parsed %+v", got)
	}
	// 11 rows / float32(1.4142135) = 7.78 → 7; 9 / 1.73 = 5.2 → 5 (golden case 0003).
	if fracpool.OutputSize(11, got.PoolingRatio[1]) != 7 || fracpool.OutputSize(9, got.PoolingRatio[2]) != 5 {
		t.Fatal("output sizes")
	}
	if fracpool.OutputSize(6, float32(math.Sqrt(3))) != 3 || fracpool.OutputSize(6, float32(math.Sqrt(2))) != 4 || fracpool.OutputSize(32, 1.44) != 22 {
		t.Fatal("float32 output sizes")
	}
}
