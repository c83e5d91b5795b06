package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// smNaiveSoftmax is softmax written from the definition, without the max
// shift: exp(x_i) / Σ_j exp(x_j), and log-softmax as x_i - log Σ_j exp(x_j).
func smNaiveSoftmax(x []float64, cols int, log bool) []float64 {
	out := make([]float64, len(x))
	for r := 0; r*cols < len(x); r++ {
		row := x[r*cols : (r+1)*cols]
		var s float64
		for _, v := range row {
			s += math.Exp(v)
		}
		for i, v := range row {
			if log {
				out[r*cols+i] = v - math.Log(s)
			} else {
				out[r*cols+i] = math.Exp(v) / s
			}
		}
	}
	return out
}

// smCompare compares got with want at tolerance tol·(1 + |want|); any NaN
// fails.
func smCompare(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	testutil.Close(t, what, got, want, testutil.Tol{Abs: tol, Rel: tol})
}

func smTol(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 2e-6
	}
	return 1e-13
}

var smDtypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

var smShapes = [][]int{{1}, {5}, {3, 4}, {2, 3, 5}, {1, 1}, {4, 1}, {1, 9}, {2, 2, 1, 3}, {7, 33}, {0, 3}, {3, 0}, {2, 0, 4}, {0}}

func TestSoftmaxForwardVsNaive(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		for _, dt := range smDtypes {
			for _, sh := range smShapes {
				n, _ := tensorx.Numel(sh)
				x := testutil.RandVals(r, n, 3, 0)
				in := testutil.Dense(t, dt, sh, x)
				x = testutil.Float64s(t, in) // the values the kernel sees
				cols := sh[len(sh)-1]
				var want []float64
				if cols > 0 {
					want = smNaiveSoftmax(x, cols, op == "LogSoftmax")
				}
				for _, shift := range []float64{0, 1000, -1000} {
					xs := make([]float64, n)
					for i := range x {
						xs[i] = x[i] + shift
					}
					if dt == tensor.Float32 && shift != 0 {
						continue // x+1000 is not exact in float32; see TestSoftmaxLargeLogits
					}
					out, err := registrytest.Run(t, op, nil, 2, testutil.Dense(t, dt, sh, xs))
					if err != nil {
						t.Fatalf("%s %v %v: %v", op, dt, sh, err)
					}
					testutil.ShapeIs(t, op, out[0], sh...)
					smCompare(t, fmt.Sprintf("%s %v %v shift %v", op, dt, sh, shift), testutil.Float64s(t, out[0]), want, smTol(dt)*(1+math.Abs(shift)))
				}
			}
		}
	}
}

// TestSoftmaxLargeLogits checks logits whose exp overflows (or underflows
// to zero) in the naive formula, in both dtypes, against exact values.
func TestSoftmaxLargeLogits(t *testing.T) {
	x := []float64{1000, -1000, 0, 1000, 999, 998, -1000, -1000, -1001, 88, 89, 90}
	e1, e2 := math.Exp(-1), math.Exp(-2)
	s := 1 + e1 + e2
	t2 := 2 + e1
	// Rows: [1000,-1000,0]; [1000,999,998] (shifted [0,-1,-2]);
	// [-1000,-1000,-1001] (shifted [0,0,-1]); [88,89,90] (exp overflows
	// float32).
	wantSM := []float64{1, 0, 0, 1 / s, e1 / s, e2 / s, 1 / t2, 1 / t2, e1 / t2, e2 / s, e1 / s, 1 / s}
	ls := math.Log(s)
	lt := math.Log(t2)
	wantLSM := []float64{0, -2000, -1000, -ls, -1 - ls, -2 - ls, -lt, -lt, -1 - lt, -2 - ls, -1 - ls, -ls}
	for _, dt := range smDtypes {
		for op, want := range map[string][]float64{"Softmax": wantSM, "LogSoftmax": wantLSM} {
			out, err := registrytest.Run(t, op, nil, 1, testutil.Dense(t, dt, []int{4, 3}, x))
			if err != nil {
				t.Fatal(err)
			}
			got := testutil.Float64s(t, out[0])
			for i := range got {
				if math.IsNaN(got[i]) || math.IsInf(got[i], 0) || math.Abs(got[i]-want[i]) > 4*smTol(dt)*(1+math.Abs(want[i])) {
					t.Fatalf("%s %v: element %d = %v, want %v", op, dt, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSoftmaxThreadsDeterministic: the result does not depend on the
// thread count.
func TestSoftmaxThreadsDeterministic(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	sh := []int{300, 257}
	x := testutil.RandVals(r, 300*257, 4, 0)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		a, err := registrytest.Run(t, op, nil, 1, testutil.Dense(t, tensor.Float32, sh, x))
		if err != nil {
			t.Fatal(err)
		}
		b, err := registrytest.Run(t, op, nil, 4, testutil.Dense(t, tensor.Float32, sh, x))
		if err != nil {
			t.Fatal(err)
		}
		av, bv := a[0].Float32s(), b[0].Float32s()
		for i := range av {
			if math.Float32bits(av[i]) != math.Float32bits(bv[i]) {
				t.Fatalf("%s: element %d differs between 1 and 4 threads: %v vs %v", op, i, av[i], bv[i])
			}
		}
	}
}

func TestSoftmaxErrors(t *testing.T) {
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		_, err := registrytest.Run(t, op, nil, 1, testutil.New(t, []int{}, []float64{1}))
		testutil.WantErr(t, err, registry.ErrShape, op+":", "logits must have >= 1 dimension, got []")
		_, err = registrytest.Run(t, op, nil, 1, testutil.New(t, []int{2}, []int32{1, 2}))
		testutil.WantErr(t, err, registry.ErrDtype, op)
		_, err = registrytest.Run(t, op, nil, 1, testutil.New(t, []int{2}, []float64{1, 2}), testutil.New(t, []int{2}, []float64{1, 2}))
		testutil.WantErr(t, err, registry.ErrInvalidArgument, op)
	}
}

// smNaiveXent is the cross entropy from its definition on broadcast 2-D
// inputs: loss_b = -Σ_c labels[b,c] log p[b,c], backprop = p - labels.
func smNaiveXent(f, l []float64, fs0, fs1, ls0, ls1, batch, classes int) (loss, back []float64) {
	loss = make([]float64, batch)
	back = make([]float64, batch*classes)
	for b := 0; b < batch; b++ {
		row := make([]float64, classes)
		for c := range row {
			row[c] = f[b*fs0+c*fs1]
		}
		p := smNaiveSoftmax(row, classes, false)
		lp := smNaiveSoftmax(row, classes, true)
		for c := range row {
			lc := l[b*ls0+c*ls1]
			loss[b] -= lc * lp[c]
			back[b*classes+c] = p[c] - lc
		}
	}
	return loss, back
}

func TestSoftmaxCrossEntropyVsNaive(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	cases := []struct {
		fs, ls, out []int
	}{
		{[]int{3, 4}, []int{3, 4}, []int{3, 4}},
		{[]int{1, 6}, []int{1, 6}, []int{1, 6}},
		{[]int{5, 1}, []int{5, 1}, []int{5, 1}},
		{[]int{1, 1}, []int{1, 1}, []int{1, 1}},
		{[]int{9, 31}, []int{9, 31}, []int{9, 31}},
		{[]int{1, 4}, []int{3, 4}, []int{3, 4}},
		{[]int{4}, []int{3, 4}, []int{3, 4}},
		{[]int{3, 1}, []int{3, 4}, []int{3, 4}},
		{[]int{}, []int{2, 3}, []int{2, 3}},
		{[]int{3, 4}, []int{4}, []int{3, 4}},
		{[]int{3, 4}, []int{3, 1}, []int{3, 4}},
		{[]int{3, 4}, []int{1, 1}, []int{3, 4}},
		{[]int{3, 4}, []int{}, []int{3, 4}},
		{[]int{1, 4}, []int{3, 1}, []int{3, 4}},
		{[]int{0, 4}, []int{0, 4}, []int{0, 4}},
		{[]int{3, 0}, []int{3, 0}, []int{3, 0}},
		{[]int{0, 4}, []int{4}, []int{0, 4}},
	}
	for _, dt := range smDtypes {
		for _, c := range cases {
			nf, _ := tensorx.Numel(c.fs)
			nl, _ := tensorx.Numel(c.ls)
			fin := testutil.Dense(t, dt, c.fs, testutil.RandVals(r, nf, 3, 0))
			lin := testutil.Dense(t, dt, c.ls, testutil.RandVals(r, nl, 1, 0))
			out, err := registrytest.Run(t, "SoftmaxCrossEntropyWithLogits", nil, 2, fin, lin)
			if err != nil {
				t.Fatalf("%v %v %v: %v", dt, c.fs, c.ls, err)
			}
			batch, classes := c.out[0], c.out[1]
			fs0, fs1 := smStrides2(c.fs, c.out)
			ls0, ls1 := smStrides2(c.ls, c.out)
			loss, back := smNaiveXent(testutil.Float64s(t, fin), testutil.Float64s(t, lin), fs0, fs1, ls0, ls1, batch, classes)
			what := fmt.Sprintf("%v features %v labels %v", dt, c.fs, c.ls)
			testutil.ShapeIs(t, what+" loss", out[0], []int{batch}...)
			testutil.ShapeIs(t, what+" backprop", out[1], c.out...)
			smCompare(t, what+" loss", testutil.Float64s(t, out[0]), loss, 4*smTol(dt))
			smCompare(t, what+" backprop", testutil.Float64s(t, out[1]), back, smTol(dt))
		}
	}
}

// The naive stride helper must itself be right for the test to mean
// anything: check it on a hand-computed case.
func TestSoftmaxCrossEntropyStrides(t *testing.T) {
	for _, c := range []struct {
		s, full []int
		s0, s1  int
	}{
		{[]int{3, 4}, []int{3, 4}, 4, 1},
		{[]int{1, 4}, []int{3, 4}, 0, 1},
		{[]int{4}, []int{3, 4}, 0, 1},
		{[]int{3, 1}, []int{3, 4}, 1, 0},
		{[]int{}, []int{3, 4}, 0, 0},
	} {
		s0, s1 := smStrides2(c.s, c.full)
		if s0 != c.s0 || s1 != c.s1 {
			t.Fatalf("strides of %v in %v = %d,%d, want %d,%d", c.s, c.full, s0, s1, c.s0, c.s1)
		}
	}
}

func TestSoftmaxCrossEntropyLargeLogits(t *testing.T) {
	// Rows [1000,-1000,0] and [-1000,-1000,-1000+ln 2] with one-hot and
	// mixed labels.
	f := []float64{1000, -1000, 0, -1000, -1000, -1000 + math.Ln2}
	l := []float64{0, 1, 0, 0.25, 0.25, 0.5}
	// row 1: log p = [0, -2000, -1000]; loss = 2000.
	// row 2: p = [1/4, 1/4, 1/2]; loss = -(0.25 ln .25 *2 + 0.5 ln .5) = 1.5 ln 2.
	wantLoss := []float64{2000, 1.5 * math.Ln2}
	wantBack := []float64{1, -1, 0, 0, 0, 0}
	for _, dt := range smDtypes {
		out, err := registrytest.Run(t, "SoftmaxCrossEntropyWithLogits", nil, 1, testutil.Dense(t, dt, []int{2, 3}, f), testutil.Dense(t, dt, []int{2, 3}, l))
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-6
		if dt == tensor.Float32 {
			tol = 1e-4
		}
		smCompare(t, dt.String()+" loss", testutil.Float64s(t, out[0]), wantLoss, tol)
		smCompare(t, dt.String()+" backprop", testutil.Float64s(t, out[1]), wantBack, tol)
	}
}

func TestSoftmaxCrossEntropyErrors(t *testing.T) {
	const op = "SoftmaxCrossEntropyWithLogits"
	f := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.New(t, shape, make([]float64, n))
	}
	_, err := registrytest.Run(t, op, nil, 1, f(2, 3), f(2, 4))
	testutil.WantErr(t, err, registry.ErrShape, op+":", "logits and labels must be broadcastable: logits_size=[2,3] labels_size=[2,4]")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3), f(3, 3))
	testutil.WantErr(t, err, registry.ErrShape, "must be broadcastable")
	for _, c := range [][2][]int{{{3}, {3}}, {{2, 2, 3}, {2, 2, 3}}, {{1, 2, 3}, {2, 3}}, {{}, {}}, {{3}, {}}, {{2, 1, 3}, {4, 1}}} {
		_, err = registrytest.Run(t, op, nil, 1, f(c[0]...), f(c[1]...))
		testutil.WantErr(t, err, registry.ErrShape, op+":", "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional")
	}
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3), testutil.New(t, []int{2, 3}, make([]float32, 6)))
	testutil.WantErr(t, err, registry.ErrDtype, op+":", "labels")
	_, err = registrytest.Run(t, op, nil, 1, testutil.New(t, []int{2, 3}, make([]int32, 6)), testutil.New(t, []int{2, 3}, make([]int32, 6)))
	testutil.WantErr(t, err, registry.ErrDtype, op)
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, op)
}

func TestSparseSoftmaxCrossEntropyVsNaive(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	shapes := [][2]int{{3, 4}, {1, 6}, {5, 1}, {1, 1}, {17, 29}, {0, 4}}
	for _, dt := range smDtypes {
		for _, ldt := range []tensor.Dtype{tensor.Int32, tensor.Int64} {
			for _, sh := range shapes {
				batch, classes := sh[0], sh[1]
				fin := testutil.Dense(t, dt, []int{batch, classes}, testutil.RandVals(r, batch*classes, 3, 0))
				idx := make([]int, batch)
				for i := range idx {
					idx[i] = r.Intn(classes)
				}
				lin := smIndexTensor(t, ldt, idx)
				out, err := registrytest.Run(t, "SparseSoftmaxCrossEntropyWithLogits", nil, 2, fin, lin)
				if err != nil {
					t.Fatalf("%v %v %v: %v", dt, ldt, sh, err)
				}
				onehot := make([]float64, batch*classes)
				for b, c := range idx {
					onehot[b*classes+c] = 1
				}
				loss, back := smNaiveXent(testutil.Float64s(t, fin), onehot, classes, 1, classes, 1, batch, classes)
				what := fmt.Sprintf("%v %v %v", dt, ldt, sh)
				testutil.ShapeIs(t, what+" loss", out[0], []int{batch}...)
				testutil.ShapeIs(t, what+" backprop", out[1], []int{batch, classes}...)
				smCompare(t, what+" loss", testutil.Float64s(t, out[0]), loss, 4*smTol(dt))
				smCompare(t, what+" backprop", testutil.Float64s(t, out[1]), back, smTol(dt))
			}
		}
	}
}

func smIndexTensor(t *testing.T, dt tensor.Dtype, idx []int) *tensor.Dense {
	t.Helper()
	if dt == tensor.Int64 {
		v := make([]int64, len(idx))
		for i, x := range idx {
			v[i] = int64(x)
		}
		return testutil.New(t, []int{len(idx)}, v)
	}
	v := make([]int32, len(idx))
	for i, x := range idx {
		v[i] = int32(x)
	}
	return testutil.New(t, []int{len(idx)}, v)
}

func TestSparseSoftmaxCrossEntropyLargeLogits(t *testing.T) {
	f := []float64{1000, -1000, 0, -1000, -1000, -1000 + math.Ln2}
	for _, dt := range smDtypes {
		out, err := registrytest.Run(t, "SparseSoftmaxCrossEntropyWithLogits", nil, 1, testutil.Dense(t, dt, []int{2, 3}, f), smIndexTensor(t, tensor.Int32, []int{1, 2}))
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-6
		if dt == tensor.Float32 {
			tol = 1e-4
		}
		smCompare(t, dt.String()+" loss", testutil.Float64s(t, out[0]), []float64{2000, math.Ln2}, tol)
		smCompare(t, dt.String()+" backprop", testutil.Float64s(t, out[1]), []float64{1, -1, 0, 0.25, 0.25, -0.5}, tol)
	}
}

func TestSparseSoftmaxCrossEntropyErrors(t *testing.T) {
	const op = "SparseSoftmaxCrossEntropyWithLogits"
	f := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.New(t, shape, make([]float64, n))
	}
	for _, ldt := range []tensor.Dtype{tensor.Int32, tensor.Int64} {
		_, err := registrytest.Run(t, op, nil, 1, f(3, 4), smIndexTensor(t, ldt, []int{0, 4, 1}))
		testutil.WantErr(t, err, registry.ErrInvalidArgument, op+":", "Received a label value of 4 which is outside the valid range of [0, 4).  Label values: 0 4 1")
		_, err = registrytest.Run(t, op, nil, 1, f(3, 4), smIndexTensor(t, ldt, []int{7, -1, 2}))
		testutil.WantErr(t, err, registry.ErrInvalidArgument, "Received a label value of -1 which is outside the valid range of [0, 4)")
		_, err = registrytest.Run(t, op, nil, 1, f(1, 1), smIndexTensor(t, ldt, []int{1}))
		testutil.WantErr(t, err, registry.ErrInvalidArgument, "Received a label value of 1 which is outside the valid range of [0, 1)")
	}
	_, err := registrytest.Run(t, op, nil, 1, f(3), smIndexTensor(t, tensor.Int32, []int{0, 1, 2}))
	testutil.WantErr(t, err, registry.ErrShape, op+":", "logits must be 2-D, but got shape [3]")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3, 4), smIndexTensor(t, tensor.Int32, []int{0, 1}))
	testutil.WantErr(t, err, registry.ErrShape, "logits must be 2-D, but got shape [2,3,4]")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3), testutil.New(t, []int{2, 1}, []int32{0, 1}))
	testutil.WantErr(t, err, registry.ErrShape, op+":", "labels must be 1-D, but got shape [2,1]")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3), testutil.New(t, []int{}, []int32{0}))
	testutil.WantErr(t, err, registry.ErrShape, "labels must be 1-D, but got shape []")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3), smIndexTensor(t, tensor.Int32, []int{0, 1, 2}))
	testutil.WantErr(t, err, registry.ErrShape, op+":", "logits and labels must have the same first dimension, got logits shape [2,3] and labels shape [3]")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 0), smIndexTensor(t, tensor.Int32, []int{0, 0}))
	testutil.WantErr(t, err, registry.ErrShape, op+":", "Must have at least one class, but got logits shape [2,0]")
	_, err = registrytest.Run(t, op, nil, 1, f(2, 3), f(2))
	testutil.WantErr(t, err, registry.ErrDtype, op+":", "labels must be int32 or int64")
	_, err = registrytest.Run(t, op, nil, 1, smIndexTensor(t, tensor.Int32, []int{0, 1}), smIndexTensor(t, tensor.Int32, []int{0, 1}))
	testutil.WantErr(t, err, registry.ErrDtype, op)
	// An empty batch needs no label check.
	out, err := registrytest.Run(t, op, nil, 1, f(0, 3), smIndexTensor(t, tensor.Int64, nil))
	if err != nil {
		t.Fatal(err)
	}
	testutil.ShapeIs(t, "empty loss", out[0], []int{0}...)
	testutil.ShapeIs(t, "empty backprop", out[1], []int{0, 3}...)
}

// TestSoftmaxSamplesValid: every sample of the family runs forward and its
// dense labels are distributions where their shape allows it.
func TestSoftmaxSamplesValid(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, op := range []string{"Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		if def.Samples == nil {
			t.Fatalf("%s has no Samples", op)
		}
		ss := def.Samples(r)
		if len(ss) < 4 {
			t.Fatalf("%s: only %d samples", op, len(ss))
		}
		for _, s := range ss {
			if _, err := registry.Run(def, nil, s.Attrs, s.Inputs); err != nil {
				t.Fatalf("%s sample %s: %v", op, s.Name, err)
			}
			if op == "SoftmaxCrossEntropyWithLogits" {
				// The labels as the kernel sees them: broadcast to the
				// backprop output's shape.
				out, _ := registry.Run(def, nil, nil, s.Inputs)
				lab := s.Inputs[1]
				full := out[1].Shape()
				cols := full[1]
				l0, l1 := smStrides2(lab.Shape(), full)
				lv := testutil.Float64s(t, lab)
				v := make([]float64, full[0]*cols)
				for b := 0; b < full[0]; b++ {
					for c := 0; c < cols; c++ {
						v[b*cols+c] = lv[b*l0+c*l1]
					}
				}
				for b := 0; b*cols < len(v); b++ {
					var sum float64
					for _, p := range v[b*cols : (b+1)*cols] {
						if p <= 0 {
							t.Fatalf("%s sample %s: label %v <= 0", op, s.Name, p)
						}
						sum += p
					}
					if math.Abs(sum-1) > 1e-12 {
						t.Fatalf("%s sample %s: labels row sums to %v", op, s.Name, sum)
					}
				}
			}
		}
	}
}
