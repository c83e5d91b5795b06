package nn

import (
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// naiveFracAvg averages x [n, h, w, c] over the cells of the pooling
// sequences (cell a covers rows rows[a] .. rows[a+1]−1, or rows[a+1] when
// overlapping, clamped to h−1).
func naiveFracAvg(x []float64, n, h, w, c int, rows, cols []int64, overlapping bool) []float64 {
	end := func(seq []int64, i, size int) int {
		e := int(seq[i+1])
		if !overlapping {
			e--
		}
		return min(e, size-1)
	}
	oh, ow := len(rows)-1, len(cols)-1
	out := make([]float64, 0, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for k := 0; k < c; k++ {
					s, cnt := 0.0, 0
					for y := int(rows[i]); y <= end(rows, i, h); y++ {
						for xx := int(cols[j]); xx <= end(cols, j, w); xx++ {
							s += x[((b*h+y)*w+xx)*c+k]
							cnt++
						}
					}
					out = append(out, s/float64(cnt))
				}
			}
		}
	}
	return out
}

// sequences runs the op with the layer's attrs for mode on a tape seeded
// like run's, returning the pooling sequences the layer's Forward drew.
func sequences(t *testing.T, p *FractionalAvgPool, x *tensor.Dense, training bool) ([]int64, []int64) {
	t.Helper()
	tp := autodiff.NewTape(autodiff.Seed(1))
	a := p.eval
	if training {
		a = p.train
	}
	_, rs, cs := autodiff.FractionalAvgPool(tp.Constant(x), a)
	rows, err := rs.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	cols, err := cs.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	return rows, cols
}

func TestFractionalAvgPool(t *testing.T) {
	r := rnd(14)
	for _, c := range []struct {
		ratio float64
		opts  FractionalPoolOpts
		shape []int
	}{
		{1.44, FractionalPoolOpts{}, []int{2, 7, 6, 2}},
		{1.5, FractionalPoolOpts{RatioW: 2, Overlapping: true}, []int{1, 6, 8, 3}},
		{1.3, FractionalPoolOpts{PseudoRandom: true, EvalSeed: 7}, []int{2, 5, 5, 1}},
	} {
		name := fmt.Sprintf("%v %+v", c.ratio, c.opts)
		p := NewFractionalAvgPool(c.ratio, c.opts)
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		x := randT(r, false, c.shape...)
		xs := f64(t, x)
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		rw := c.opts.RatioW
		if rw == 0 {
			rw = c.ratio
		}
		for _, training := range []bool{true, false} {
			got, shape := run(t, p, x, training)
			if want := []int{n, int(float32(h) / float32(c.ratio)), int(float32(w) / float32(rw)), ch}; fmt.Sprint(shape) != fmt.Sprint(want) {
				t.Fatalf("%s: shape %v, want %v", name, shape, want)
			}
			rows, cols := sequences(t, p, x, training)
			assertClose(t, name, got, naiveFracAvg(xs, n, h, w, ch, rows, cols, c.opts.Overlapping), 1e-14)
			checkModule(t, fmt.Sprintf("FractionalAvgPool %s training %v", name, training), p, x, training, false)
		}
		// Evaluation: the same grid on every call, whatever the tape.
		e1, _ := run(t, p, x, false)
		tp := autodiff.NewTape(autodiff.Training(false), autodiff.Seed(12345))
		e2, err := p.Forward(tp, tp.Constant(x)).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, name+" eval fixed", e2, e1, 0)
	}
	// Training draws a new grid every step: over a few steps on one tape,
	// the outputs differ.
	p := NewFractionalAvgPool(1.7, FractionalPoolOpts{})
	x := randT(r, false, 1, 12, 12, 1)
	tp := autodiff.NewTape(autodiff.Seed(3))
	distinct := map[string]bool{}
	for i := 0; i < 6; i++ {
		tp.Reset()
		v, err := p.Forward(tp, tp.Constant(x)).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		distinct[fmt.Sprint(v)] = true
	}
	if len(distinct) < 2 {
		t.Fatal("training drew the same pooling grid six times")
	}
}

func TestFractionalAvgPoolErrors(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		opts  FractionalPoolOpts
	}{
		{0.5, FractionalPoolOpts{}}, {math.NaN(), FractionalPoolOpts{}}, {math.Inf(1), FractionalPoolOpts{}},
		{1.5, FractionalPoolOpts{RatioW: 0.9}},
	} {
		p := NewFractionalAvgPool(c.ratio, c.opts)
		assertErr(t, "ratio", p.Err(), autodiff.ErrInvalidArgument, "nn.NewFractionalAvgPool", ">= 1")
		tp := autodiff.NewTape()
		y := p.Forward(tp, tp.Full(tensor.Float32, []int{1, 4, 4, 1}, 1))
		assertErr(t, "ratio forward", y.Err(), autodiff.ErrInvalidArgument, ">= 1")
	}
	// Input errors are the op's (NHWC 4-D only).
	tp := autodiff.NewTape()
	y := NewFractionalAvgPool(1.5, FractionalPoolOpts{}).Forward(tp, tp.Full(tensor.Float32, []int{4, 4}, 1))
	assertErr(t, "rank", y.Err(), nil, "FractionalAvgPool")
}
