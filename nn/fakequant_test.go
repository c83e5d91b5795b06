package nn

import (
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// refChannelRanges computes per-channel quantisation ranges of w (element
// i in channel i mod ch) as TensorFlow's LastValueQuantize does.
func refChannelRanges(w []float64, ch int, symmetric, narrow bool, bits int) (lo, hi []float64) {
	lo, hi = make([]float64, ch), make([]float64, ch)
	for c := range lo {
		lo[c], hi[c] = math.Inf(1), math.Inf(-1)
	}
	for i, v := range w {
		lo[i%ch] = math.Min(lo[i%ch], v)
		hi[i%ch] = math.Max(hi[i%ch], v)
	}
	for c := range lo {
		if symmetric {
			ratio := -1.0
			if !narrow {
				ratio = -float64(int(1)<<bits-2) / float64(int(1)<<bits)
			}
			lo[c], hi[c] = math.Min(lo[c], hi[c]/ratio), math.Max(hi[c], lo[c]*ratio)
		} else {
			lo[c], hi[c] = math.Min(lo[c], 0), math.Max(hi[c], 0)
		}
	}
	return lo, hi
}

func vec(v []float64) *tensor.Dense {
	d, err := tensorx.New([]int{len(v)}, append([]float64(nil), v...))
	if err != nil {
		panic(err)
	}
	return d
}

// quantizeRef fake-quantises w (viewed as [..., ch]) per channel with the
// op itself, on a separate tape, and returns q(w) and the op's
// straight-through mask (1 inside the nudged range).
func quantizeRef(t *testing.T, w *tensor.Dense, qshape []int, lo, hi []float64, a forward.FakeQuantAttrs) (q, mask *tensor.Dense) {
	t.Helper()
	tp := autodiff.NewTape()
	wv := tp.Constant(w)
	if qshape != nil {
		wv = autodiff.Reshape(wv, qshape...)
	}
	l, h := tp.Constant(vec(lo)), tp.Constant(vec(hi))
	qv := autodiff.FakeQuantPerChannel(wv, l, h, a)
	mv, _, _ := autodiff.FakeQuantPerChannelGradient(tp.Full(tensor.Float64, wv.Shape(), 1), wv, l, h, a)
	var err error
	if q, err = autodiff.Reshape(qv, w.Shape()...).Tensor(); err != nil {
		t.Fatal(err)
	}
	if mask, err = autodiff.Reshape(mv, w.Shape()...).Tensor(); err != nil {
		t.Fatal(err)
	}
	return q, mask
}

// weightQuantCase wraps a freshly built layer.
type weightQuantCase struct {
	name  string
	layer func() Quantizable
	x     []int
	opts  WeightQuantOpts
}

func weightQuantCases() []weightQuantCase {
	r := rnd(7)
	f64 := tensor.Float64
	return []weightQuantCase{
		{"dense", func() Quantizable { return NewDense(4, 3, DenseOpts{Rand: r, Dtype: f64, BiasInit: GlorotUniform}) }, []int{2, 4}, WeightQuantOpts{}},
		{"dense-asym-wide-4bit", func() Quantizable { return NewDense(3, 2, DenseOpts{Rand: r, Dtype: f64}) }, []int{3, 3},
			WeightQuantOpts{NumBits: 4, NarrowRange: new(false), Symmetric: new(false)}},
		{"conv", func() Quantizable {
			return NewConv2D(2, 3, 2, ConvOpts{Rand: r, Dtype: f64, Padding: "SAME", BiasInit: GlorotUniform})
		}, []int{1, 3, 3, 2}, WeightQuantOpts{}},
		{"conv-groups-sym-wide", func() Quantizable {
			return NewConv2D(4, 2, 2, ConvOpts{Rand: r, Dtype: f64, Groups: 2, DataFormat: "NCHW"})
		}, []int{1, 4, 3, 3}, WeightQuantOpts{NarrowRange: new(false), NumBits: 3}},
		{"depthwise-m2", func() Quantizable {
			return NewDepthwiseConv2D(2, 2, ConvOpts{Rand: r, Dtype: f64, DepthMultiplier: 2, Padding: "SAME", BiasInit: GlorotUniform})
		}, []int{1, 3, 3, 2}, WeightQuantOpts{}},
		{"depthwise-asym", func() Quantizable {
			return NewDepthwiseConv2D(3, 2, ConvOpts{Rand: r, Dtype: f64})
		}, []int{2, 3, 3, 3}, WeightQuantOpts{Symmetric: new(false), NumBits: 4}},
	}
}

func TestFakeQuantWeightsForward(t *testing.T) {
	for _, c := range weightQuantCases() {
		l := c.layer()
		fq := NewFakeQuantWeights(l, c.opts)
		if err := fq.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		k := l.kernel()
		qshape := l.quantShape()
		ch := k.Data.Shape()[len(k.Data.Shape())-1]
		if qshape != nil {
			ch = qshape[len(qshape)-1]
		}
		// Initial ranges: TensorFlow's [-6, 6].
		assertClose(t, c.name+" initial min", f64(t, fq.Min.Data), repeat(-6, ch), 0)
		assertClose(t, c.name+" initial max", f64(t, fq.Max.Data), repeat(6, ch), 0)

		x := randT(rnd(8), false, c.x...)
		bits := fq.attrs.NumBits
		narrow := c.opts.NarrowRange == nil || *c.opts.NarrowRange
		sym := c.opts.Symmetric == nil || *c.opts.Symmetric
		lo, hi := refChannelRanges(f64(t, k.Data), ch, sym, narrow, bits)
		ref := func(lo, hi []float64) []float64 {
			q, _ := quantizeRef(t, k.Data, qshape, lo, hi, fq.attrs)
			tp := autodiff.NewTape()
			y := l.forwardKernel(tp, tp.Constant(x), tp.Constant(q), nil)
			v, err := y.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// Training: the ranges of the current kernel, stored.
		got, _ := run(t, fq, x, true)
		assertClose(t, c.name+" min", f64(t, fq.Min.Data), lo, 0)
		assertClose(t, c.name+" max", f64(t, fq.Max.Data), hi, 0)
		want := ref(lo, hi)
		assertClose(t, c.name+" train", got, want, 0)
		// Quantisation changes the output (the test is not vacuous).
		plain, _ := run(t, l, x, true)
		if closeTo(plain, got, 1e-9) < 0 {
			t.Fatalf("%s: quantised output equals the float one", c.name)
		}
		// Evaluation: the stored ranges, even after the kernel changed.
		ks := tensorx.MustSlice[float64](k.Data)
		for i := range ks {
			ks[i] *= 1.5
		}
		k.MarkModified()
		got, _ = run(t, fq, x, false)
		assertClose(t, c.name+" eval min", f64(t, fq.Min.Data), lo, 0)
		assertClose(t, c.name+" eval", got, ref(lo, hi), 0)
		// The next training step follows the kernel.
		lo2, hi2 := refChannelRanges(ks, ch, sym, narrow, bits)
		got, _ = run(t, fq, x, true)
		assertClose(t, c.name+" retrain min", f64(t, fq.Min.Data), lo2, 0)
		assertClose(t, c.name+" retrain max", f64(t, fq.Max.Data), hi2, 0)
		assertClose(t, c.name+" retrain", got, ref(lo2, hi2), 0)
	}
}

func repeat(v float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestFakeQuantWeightsGradient checks the straight-through gradients of a
// wrapped layer against TensorFlow's rule: the input and bias gradients
// are those of the layer with the quantised kernel q(w), the kernel
// gradient is the gradient with respect to q(w) where w lies in its
// channel's nudged range, 0 elsewhere.
func TestFakeQuantWeightsGradient(t *testing.T) {
	masked := 0 // kernel elements outside their nudged range, over all cases
	for _, c := range weightQuantCases() {
		l := c.layer()
		fq := NewFakeQuantWeights(l, c.opts)
		x := randT(rnd(9), false, c.x...)
		narrow := c.opts.NarrowRange == nil || *c.opts.NarrowRange
		sym := c.opts.Symmetric == nil || *c.opts.Symmetric
		f, in := moduleFunc(t, fq, x, true)
		kIdx := -1
		for i, p := range fq.Params() {
			if p == l.kernel() {
				kIdx = i + 1
			}
		}
		qshape := l.quantShape()
		rule := func(inputs, ups []*tensor.Dense) ([]*tensor.Dense, error) {
			w := inputs[kIdx]
			ch := w.Shape()[len(w.Shape())-1]
			if qshape != nil {
				ch = qshape[len(qshape)-1]
			}
			lo, hi := refChannelRanges(f64(t, w), ch, sym, narrow, fq.attrs.NumBits)
			q, mask := quantizeRef(t, w, qshape, lo, hi, fq.attrs)
			// Gradients of the plain layer at q(w).
			plainIn := append([]*tensor.Dense(nil), inputs...)
			plainIn[kIdx] = q
			tp := autodiff.NewTape()
			vals := make([]autodiff.Value, len(plainIn))
			for i, d := range plainIn {
				vals[i] = tp.Watch(d)
			}
			ps := fq.Params()
			b := func(p *autodiff.Param) autodiff.Value {
				for i, pp := range ps {
					if pp == p {
						return vals[i+1]
					}
				}
				return tp.Param(p)
			}
			y := forwardModule(l, tp, vals[0], b)
			g, err := tp.Grad([]autodiff.Value{y}, vals, []autodiff.Value{tp.Constant(ups[0])}, autodiff.GradOpts{})
			if err != nil {
				return nil, err
			}
			out := make([]*tensor.Dense, len(g))
			for i := range g {
				if out[i], err = g[i].Tensor(); err != nil {
					return nil, err
				}
			}
			gw, m := tensorx.MustSlice[float64](out[kIdx]), f64(t, mask)
			z := 0
			for _, v := range m {
				if v == 0 {
					z++
				}
			}
			masked += z
			for i := range gw {
				gw[i] *= m[i]
			}
			return out, nil
		}
		if err := gradcheck.CheckSurrogate(f, in, rule, gradcheck.Options{Seed: 3, Atol: 1e-12, Rtol: 1e-12}); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if masked == 0 {
		t.Error("no kernel element fell outside its nudged range: the mask is untested")
	}
}

func TestFakeQuantWeightsErrors(t *testing.T) {
	r := rnd(1)
	assertErr(t, "nil layer", NewFakeQuantWeights(nil, WeightQuantOpts{}).Err(), autodiff.ErrInvalidArgument, "nil layer")
	bad := NewDense(0, 1, DenseOpts{Rand: r})
	assertErr(t, "bad layer", NewFakeQuantWeights(bad, WeightQuantOpts{}).Err(), autodiff.ErrInvalidArgument, "wrapped layer", "nn.NewDense")
	for _, b := range []int{1, 17, -3} {
		fq := NewFakeQuantWeights(NewDense(1, 1, DenseOpts{Rand: r}), WeightQuantOpts{NumBits: b})
		assertErr(t, "bits", fq.Err(), autodiff.ErrInvalidArgument, "NumBits")
		if fq.Params() != nil || fq.Buffers() != nil {
			t.Fatal("a failed wrapper has state")
		}
		tp := autodiff.NewTape()
		y := fq.Forward(tp, tp.Full(tensor.Float32, []int{1, 1}, 1))
		assertErr(t, "bits forward", y.Err(), autodiff.ErrInvalidArgument, "NumBits")
	}
}

func TestFakeQuantActivation(t *testing.T) {
	r := rnd(10)
	x := randT(r, false, 3, 5)
	xs := f64(t, x)
	for i := range xs {
		xs[i] = xs[i]*3 + 0.5 // range about [-2.5, 3.5]
	}
	x, _ = tensorx.New([]int{3, 5}, append([]float64(nil), xs...))
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, v := range xs {
		xmin, xmax = math.Min(xmin, v), math.Max(xmax, v)
	}
	decay := 0.9
	c := 1 - decay // in float64 arithmetic, as TensorFlow's 1.0 - decay
	for _, sym := range []bool{false, true} {
		a := NewFakeQuantActivation(ActQuantOpts{Dtype: tensor.Float64, EMADecay: &decay, Symmetric: sym, NumBits: 5})
		if err := a.Err(); err != nil {
			t.Fatal(err)
		}
		if a.Params() != nil || len(a.Buffers()) != 2 || a.Min.Name != "min" || a.Max.Name != "max" {
			t.Fatalf("state: %v %v", a.Params(), a.Buffers())
		}
		m, M := math.Min(xmin, 0), math.Max(xmax, 0)
		if sym {
			ratio := -float64(30) / 32
			m, M = math.Min(xmin, xmax/ratio), math.Max(xmax, xmin*ratio)
		}
		lo, hi := -6-(-6-m)*c, 6-(6-M)*c
		quant := func(lo, hi float64) []float64 {
			tp := autodiff.NewTape()
			v, err := autodiff.FakeQuantVars(tp.Constant(x), tp.Scalar(tensor.Float64, lo), tp.Scalar(tensor.Float64, hi), forward.FakeQuantAttrs{NumBits: 5}).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		got, _ := run(t, a, x, true)
		assertClose(t, "ema min", f64(t, a.Min.Data), []float64{lo}, 1e-15)
		assertClose(t, "ema max", f64(t, a.Max.Data), []float64{hi}, 1e-15)
		assertClose(t, "train", got, quant(lo, hi), 0)
		lo2, hi2 := lo-(lo-m)*c, hi-(hi-M)*c
		got, _ = run(t, a, x, true)
		assertClose(t, "ema min 2", f64(t, a.Min.Data), []float64{lo2}, 1e-15)
		assertClose(t, "train 2", got, quant(lo2, hi2), 0)
		got, _ = run(t, a, x, false)
		assertClose(t, "eval keeps min", f64(t, a.Min.Data), []float64{lo2}, 0)
		assertClose(t, "eval", got, quant(lo2, hi2), 0)

		// Straight-through gradient with the updated range.
		f, in := moduleFunc(t, a, x, true)
		rule := func(inputs, ups []*tensor.Dense) ([]*tensor.Dense, error) {
			tp := autodiff.NewTape()
			dx, _, _ := autodiff.FakeQuantVarsGradient(tp.Constant(ups[0]), tp.Constant(inputs[0]),
				tp.Scalar(tensor.Float64, lo), tp.Scalar(tensor.Float64, hi), forward.FakeQuantAttrs{NumBits: 5})
			d, err := dx.Tensor()
			return []*tensor.Dense{d}, err
		}
		// moduleFunc restores the buffers to their state at its creation
		// (after two steps): each evaluation updates them from lo2, hi2.
		lo, hi = lo2-(lo2-m)*c, hi2-(hi2-M)*c
		if err := gradcheck.CheckSurrogate(f, in, rule, gradcheck.Options{Seed: 4}); err != nil {
			t.Errorf("symmetric %v: %v", sym, err)
		}
	}
	// Learned ranges: the gradients of FakeQuantWithMinMaxVars.
	a := NewFakeQuantActivation(ActQuantOpts{Dtype: tensor.Float64, Learned: true, InitMin: new(-2.0), InitMax: new(3.0)})
	if a.Buffers() != nil || len(a.Params()) != 2 || a.MinParam.Name != "min" {
		t.Fatalf("learned state: %v %v", a.Params(), a.Buffers())
	}
	f, in := moduleFunc(t, a, x, true)
	rule := func(inputs, ups []*tensor.Dense) ([]*tensor.Dense, error) {
		tp := autodiff.NewTape()
		dx, dlo, dhi := autodiff.FakeQuantVarsGradient(tp.Constant(ups[0]), tp.Constant(inputs[0]),
			tp.Constant(inputs[1]), tp.Constant(inputs[2]), forward.FakeQuantAttrs{NumBits: 8})
		var out []*tensor.Dense
		for _, v := range []autodiff.Value{dx, dlo, dhi} {
			d, err := v.Tensor()
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	if err := gradcheck.CheckSurrogate(f, in, rule, gradcheck.Options{Seed: 5}); err != nil {
		t.Error(err)
	}
	// Some values lie outside [-2, 3]: the range gradients are not zero.
	tp := autodiff.NewTape()
	y := a.Forward(tp, tp.Constant(x))
	if err := tp.Backward(autodiff.Sum(y, nil, false)); err != nil {
		t.Fatal(err)
	}
	if g := f64(t, a.MinParam.Grad)[0] + f64(t, a.MaxParam.Grad)[0]; g == 0 {
		t.Fatal("no gradient reached the learned range")
	}
}

func TestFakeQuantActivationErrors(t *testing.T) {
	for _, c := range []struct {
		o    ActQuantOpts
		frag string
	}{
		{ActQuantOpts{NumBits: 1}, "NumBits"},
		{ActQuantOpts{EMADecay: new(1.5)}, "EMADecay"},
		{ActQuantOpts{InitMin: new(1.0), InitMax: new(0.0)}, "InitMin"},
		{ActQuantOpts{Dtype: tensor.Bool}, "float32 or float64"},
	} {
		a := NewFakeQuantActivation(c.o)
		assertErr(t, c.frag, a.Err(), nil, "nn.NewFakeQuantActivation", c.frag)
	}
	a := NewFakeQuantActivation(ActQuantOpts{})
	tp := autodiff.NewTape()
	y := a.Forward(tp, tp.Full(tensor.Float64, []int{2}, 1))
	assertErr(t, "dtype", y.Err(), autodiff.ErrDtype, "float32")
	// Empty batches leave the range unchanged.
	tp = autodiff.NewTape()
	y = a.Forward(tp, tp.Full(tensor.Float32, []int{0, 3}, 1))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if v := tensorx.MustSlice[float32](a.Min.Data)[0]; v != -6 {
		t.Fatalf("empty batch moved the range to %v", v)
	}
}
