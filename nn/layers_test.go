package nn

import (
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

func TestDense(t *testing.T) {
	r := rnd(1)
	d := NewDense(3, 4, DenseOpts{Rand: r, Dtype: tensor.Float64, BiasInit: HeUniform})
	x := randT(r, false, 2, 3)
	got, shape := run(t, d, x, true)
	w, b, xs := f64(t, d.Weight.Data), f64(t, d.Bias.Data), f64(t, x)
	want := make([]float64, 2*4)
	for i := 0; i < 2; i++ {
		for j := 0; j < 4; j++ {
			s := b[j]
			for k := 0; k < 3; k++ {
				s += xs[i*3+k] * w[k*4+j]
			}
			want[i*4+j] = s
		}
	}
	if fmt.Sprint(shape) != "[2 4]" {
		t.Fatalf("shape %v", shape)
	}
	assertClose(t, "Dense", got, want, 1e-12)
	checkModule(t, "Dense", d, x, true, true)
	checkModule(t, "Dense no bias", NewDense(3, 2, DenseOpts{Rand: r, Dtype: tensor.Float64, NoBias: true}), x, false, false)

	if n := len(NewDense(3, 2, DenseOpts{Rand: r, NoBias: true}).Params()); n != 1 {
		t.Fatalf("NoBias: %d params", n)
	}
	for _, p := range d.Params() {
		if p.Name != "weight" && p.Name != "bias" {
			t.Fatalf("param name %q", p.Name)
		}
	}
}

func TestDenseErrors(t *testing.T) {
	r := rnd(1)
	cases := []struct {
		name string
		d    *Dense
		frag string
	}{
		{"zero in", NewDense(0, 2, DenseOpts{Rand: r}), "positive"},
		{"negative out", NewDense(2, -1, DenseOpts{Rand: r}), "positive"},
		{"no rand", NewDense(2, 2, DenseOpts{}), "Rand is nil"},
		{"int dtype", NewDense(2, 2, DenseOpts{Rand: r, Dtype: tensor.Int32}), "float32 or float64"},
	}
	for _, c := range cases {
		assertErr(t, c.name, c.d.Err(), nil, "nn.NewDense", c.frag)
		// Forward records the error on the tape; Backward returns it.
		tp := autodiff.NewTape()
		y := c.d.Forward(tp, tp.Full(tensor.Float32, []int{1, 2}, 1))
		assertErr(t, c.name+" forward", tp.Backward(y), nil, c.frag)
	}
	// A wrong input shape is the op's error, on the tape.
	d := NewDense(3, 2, DenseOpts{Rand: r})
	tp := autodiff.NewTape()
	y := d.Forward(tp, tp.Full(tensor.Float32, []int{2, 5}, 1))
	assertErr(t, "shape", y.Err(), autodiff.ErrShape, "MatMul")
}

// naiveConv is a float64 reference of Conv2D (NHWC, filter HWIO with
// in/groups input channels, explicit paddings top/left) plus bias.
func naiveConv(x []float64, n, h, w, c int, f []float64, kh, kw, cf, o int, bias []float64,
	sh, sw, dh, dw, padT, padL, oh, ow int) []float64 {
	groups := c / cf
	og := o / groups
	out := make([]float64, n*oh*ow*o)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for oc := 0; oc < o; oc++ {
					g := oc / og
					s := 0.0
					if bias != nil {
						s = bias[oc]
					}
					for a := 0; a < kh; a++ {
						for e := 0; e < kw; e++ {
							y, xx := i*sh+a*dh-padT, j*sw+e*dw-padL
							if y < 0 || y >= h || xx < 0 || xx >= w {
								continue
							}
							for ic := 0; ic < cf; ic++ {
								s += x[((b*h+y)*w+xx)*c+g*cf+ic] * f[((a*kw+e)*cf+ic)*o+oc]
							}
						}
					}
					out[((b*oh+i)*ow+j)*o+oc] = s
				}
			}
		}
	}
	return out
}

// nchwToNHWC permutes a 4-D buffer from [n, c, h, w] to [n, h, w, c].
func nchwToNHWC(v []float64, n, c, h, w int) []float64 {
	out := make([]float64, len(v))
	for b := 0; b < n; b++ {
		for k := 0; k < c; k++ {
			for i := 0; i < h; i++ {
				for j := 0; j < w; j++ {
					out[((b*h+i)*w+j)*c+k] = v[((b*c+k)*h+i)*w+j]
				}
			}
		}
	}
	return out
}

// nhwcToNCHW permutes a 4-D buffer from [n, h, w, c] to [n, c, h, w].
func nhwcToNCHW(v []float64, n, h, w, c int) []float64 {
	out := make([]float64, len(v))
	for b := 0; b < n; b++ {
		for k := 0; k < c; k++ {
			for i := 0; i < h; i++ {
				for j := 0; j < w; j++ {
					out[((b*c+k)*h+i)*w+j] = v[((b*h+i)*w+j)*c+k]
				}
			}
		}
	}
	return out
}

// samePads returns TensorFlow's SAME output size and leading padding.
func samePads(in, k, s, d int) (out, before int) {
	out = (in + s - 1) / s
	eff := (k-1)*d + 1
	total := max((out-1)*s+eff-in, 0)
	return out, total / 2
}

type convCase struct {
	name           string
	in, out, k     int
	opts           ConvOpts
	n, h, w        int
	grad2          bool
	kh, kw, cf     int
	sh, sw, dh, dw int
}

func TestConv2D(t *testing.T) {
	cases := []convCase{
		{name: "valid", in: 2, out: 3, k: 2, n: 2, h: 4, w: 3, grad2: true},
		{name: "same-s2", in: 2, out: 2, k: 3, opts: ConvOpts{Padding: "SAME", Strides: []int{2}}, n: 1, h: 5, w: 4},
		{name: "explicit-dil", in: 1, out: 2, k: 2, opts: ConvOpts{Padding: "EXPLICIT", ExplicitPaddings: []int{1, 0, 2, 1}, Dilations: []int{2, 1}}, n: 1, h: 4, w: 3},
		{name: "nchw-same", in: 2, out: 2, opts: ConvOpts{KernelSize: [2]int{3, 2}, Padding: "SAME", DataFormat: "NCHW", Strides: []int{1, 2}}, n: 2, h: 3, w: 4},
		{name: "groups", in: 4, out: 6, k: 2, opts: ConvOpts{Groups: 2, Padding: "SAME"}, n: 1, h: 3, w: 3, grad2: true},
		{name: "nchw-groups-explicit", in: 4, out: 2, k: 2, opts: ConvOpts{Groups: 2, DataFormat: "NCHW", Padding: "EXPLICIT", ExplicitPaddings: []int{0, 1, 1, 0}}, n: 1, h: 3, w: 3},
		{name: "no-bias", in: 1, out: 1, k: 1, opts: ConvOpts{NoBias: true}, n: 1, h: 2, w: 2},
	}
	r := rnd(2)
	for _, c := range cases {
		o := c.opts
		o.Rand, o.Dtype, o.BiasInit = r, tensor.Float64, GlorotNormal
		conv := NewConv2D(c.in, c.out, c.k, o)
		if err := conv.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ws := conv.Weight.Data.Shape()
		kh, kw, cf := ws[0], ws[1], ws[2]
		if cf != c.in/max(1, c.opts.Groups) || ws[3] != c.out {
			t.Fatalf("%s: filter shape %v", c.name, ws)
		}
		sh, sw, _ := pair("", "", c.opts.Strides)
		dh, dw, _ := pair("", "", c.opts.Dilations)
		var oh, ow, pt, pl int
		switch c.opts.Padding {
		case "SAME":
			oh, pt = samePads(c.h, kh, sh, dh)
			ow, pl = samePads(c.w, kw, sw, dw)
		case "EXPLICIT":
			p := c.opts.ExplicitPaddings
			pt, pl = p[0], p[2]
			oh = (c.h+p[0]+p[1]-(kh-1)*dh-1)/sh + 1
			ow = (c.w+p[2]+p[3]-(kw-1)*dw-1)/sw + 1
		default:
			oh = (c.h-(kh-1)*dh-1)/sh + 1
			ow = (c.w-(kw-1)*dw-1)/sw + 1
		}
		nchw := c.opts.DataFormat == "NCHW"
		var x *tensor.Dense
		if nchw {
			x = randT(r, false, c.n, c.in, c.h, c.w)
		} else {
			x = randT(r, false, c.n, c.h, c.w, c.in)
		}
		xs := f64(t, x)
		if nchw {
			xs = nchwToNHWC(xs, c.n, c.in, c.h, c.w)
		}
		var bias []float64
		if conv.Bias != nil {
			bias = f64(t, conv.Bias.Data)
		}
		want := naiveConv(xs, c.n, c.h, c.w, c.in, f64(t, conv.Weight.Data), kh, kw, cf, c.out, bias, sh, sw, dh, dw, pt, pl, oh, ow)
		if nchw {
			want = nhwcToNCHW(want, c.n, oh, ow, c.out)
		}
		got, _ := run(t, conv, x, true)
		assertClose(t, c.name, got, want, 1e-12)
		checkModule(t, "Conv2D "+c.name, conv, x, true, c.grad2)
	}
}

func TestConv2DErrors(t *testing.T) {
	r := rnd(1)
	cases := []struct {
		name string
		c    *Conv2D
		frag string
	}{
		{"zero kernel", NewConv2D(1, 1, 0, ConvOpts{Rand: r}), "kernel size"},
		{"negative channels", NewConv2D(-1, 1, 1, ConvOpts{Rand: r}), "channel counts"},
		{"groups", NewConv2D(3, 4, 1, ConvOpts{Rand: r, Groups: 2}), "groups 2"},
		{"padding", NewConv2D(1, 1, 1, ConvOpts{Rand: r, Padding: "FULL"}), "padding must be"},
		{"explicit count", NewConv2D(1, 1, 1, ConvOpts{Rand: r, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 1}}), "4 ExplicitPaddings"},
		{"explicit negative", NewConv2D(1, 1, 1, ConvOpts{Rand: r, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 1, -1, 0}}), "non-negative"},
		{"explicit without", NewConv2D(1, 1, 1, ConvOpts{Rand: r, ExplicitPaddings: []int{1, 1, 1, 1}}), "need Padding"},
		{"strides", NewConv2D(1, 1, 1, ConvOpts{Rand: r, Strides: []int{1, 0}}), "strides must be positive"},
		{"dilations", NewConv2D(1, 1, 1, ConvOpts{Rand: r, Dilations: []int{1, 1, 1}}), "1 or 2 values"},
		{"format", NewConv2D(1, 1, 1, ConvOpts{Rand: r, DataFormat: "CHWN"}), "data format"},
		{"multiplier", NewConv2D(1, 1, 1, ConvOpts{Rand: r, DepthMultiplier: 2}), "DepthMultiplier"},
		{"rand", NewConv2D(1, 1, 1, ConvOpts{}), "Rand is nil"},
	}
	for _, c := range cases {
		assertErr(t, c.name, c.c.Err(), autodiff.ErrInvalidArgument, "nn.NewConv2D", c.frag)
		if c.c.Params() != nil {
			t.Fatalf("%s: a failed layer has parameters", c.name)
		}
	}
	// Input channel mismatch: Conv2D's own error.
	c := NewConv2D(3, 2, 1, ConvOpts{Rand: r})
	tp := autodiff.NewTape()
	y := c.Forward(tp, tp.Full(tensor.Float32, []int{1, 2, 2, 2}, 1))
	assertErr(t, "channels", y.Err(), nil, "Conv2D")
}

func TestActivations(t *testing.T) {
	r := rnd(3)
	x := randT(r, true, 3, 4)
	xs := f64(t, x)
	for i := range xs { // some values above 6 for ReLU6
		if i%5 == 0 {
			xs[i] *= 10
		}
	}
	x, _ = tensorx.New([]int{3, 4}, xs)
	for _, c := range []struct {
		m   Module
		ref func(float64) float64
	}{
		{ReLU(), func(v float64) float64 { return math.Max(v, 0) }},
		{ReLU6(), func(v float64) float64 { return math.Min(math.Max(v, 0), 6) }},
	} {
		got, _ := run(t, c.m, x, true)
		want := make([]float64, len(xs))
		for i, v := range xs {
			want[i] = c.ref(v)
		}
		assertClose(t, fmt.Sprint(c.m), got, want, 0)
		checkModule(t, fmt.Sprint(c.m), c.m, x, true, true)
	}
}

func TestFlattenAndGlobalAvgPool(t *testing.T) {
	r := rnd(4)
	x := randT(r, false, 2, 3, 2, 2)
	got, shape := run(t, Flatten(), x, true)
	if fmt.Sprint(shape) != "[2 12]" {
		t.Fatalf("Flatten shape %v", shape)
	}
	assertClose(t, "Flatten", got, f64(t, x), 0)
	checkModule(t, "Flatten", Flatten(), x, true, true)

	xs := f64(t, x)
	for _, format := range []string{"NHWC", "NCHW"} {
		g := GlobalAvgPool(format)
		got, shape := run(t, g, x, true)
		want := make([]float64, 0, 4)
		if format == "NHWC" { // [2, 3, 2, 2]: mean over axes 1, 2
			for b := 0; b < 2; b++ {
				for c := 0; c < 2; c++ {
					s := 0.0
					for i := 0; i < 6; i++ {
						s += xs[b*12+i*2+c]
					}
					want = append(want, s/6)
				}
			}
		} else { // mean over axes 2, 3
			for b := 0; b < 2; b++ {
				for c := 0; c < 3; c++ {
					s := 0.0
					for i := 0; i < 4; i++ {
						s += xs[b*12+c*4+i]
					}
					want = append(want, s/4)
				}
			}
		}
		if shape[0] != 2 || len(shape) != 2 {
			t.Fatalf("GlobalAvgPool %s shape %v", format, shape)
		}
		assertClose(t, "GlobalAvgPool "+format, got, want, 1e-14)
		checkModule(t, "GlobalAvgPool "+format, g, x, true, true)
	}

	assertErr(t, "format", moduleErr(GlobalAvgPool("NC")), autodiff.ErrInvalidArgument, "data format")
	tp := autodiff.NewTape()
	y := GlobalAvgPool("").Forward(tp, tp.Full(tensor.Float32, []int{2, 3}, 1))
	assertErr(t, "rank", y.Err(), autodiff.ErrShape, "4-D")
	tp = autodiff.NewTape()
	y = Flatten().Forward(tp, tp.Scalar(tensor.Float32, 1))
	assertErr(t, "flatten rank", y.Err(), autodiff.ErrShape, "rank >= 1")
	tp = autodiff.NewTape()
	y = Flatten().Forward(tp, autodiff.Value{})
	assertErr(t, "zero value", tp.Err(), autodiff.ErrInvalidValue)
	if y.Err() == nil {
		t.Fatal("Flatten of a zero Value is valid")
	}
}

func TestDropout(t *testing.T) {
	r := rnd(5)
	x := randT(r, true, 50, 40)
	xs := f64(t, x)
	d := NewDropout(0.3)
	// Evaluation: the identity.
	got, _ := run(t, d, x, false)
	assertClose(t, "eval", got, xs, 0)
	// Training: each element is 0 or x/(1-rate), about 30% zeros.
	got, _ = run(t, d, x, true)
	zeros := 0
	for i, v := range got {
		switch {
		case v == 0:
			zeros++
		case v != xs[i]*(1/(1-0.3)):
			t.Fatalf("element %d: %v from %v", i, v, xs[i])
		}
	}
	if frac := float64(zeros) / float64(len(got)); math.Abs(frac-0.3) > 0.04 {
		t.Fatalf("dropped fraction %v, want ~0.3", frac)
	}
	// Same seed, same mask; the tape's source continues across steps.
	again, _ := run(t, d, x, true)
	assertClose(t, "reproducible", again, got, 0)
	tp := autodiff.NewTape(autodiff.Seed(1))
	d.Forward(tp, tp.Constant(x))
	tp.Reset()
	next, err := d.Forward(tp, tp.Constant(x)).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	if closeTo(next, got, 0) < 0 {
		t.Fatal("two steps drew the same mask")
	}
	// Gradient: the same mask (gradcheck seeds every evaluation's tape
	// alike).
	small := randT(r, true, 3, 4)
	checkModule(t, "Dropout train", NewDropout(0.5), small, true, true)
	checkModule(t, "Dropout eval", NewDropout(0.5), small, false, false)
	// float32 works too.
	tp = autodiff.NewTape()
	y := d.Forward(tp, tp.Full(tensor.Float32, []int{10}, 2))
	v, err := y.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v {
		if e != 0 && e != float32(2)*(float32(1)/(float32(1)-float32(0.3))) {
			t.Fatalf("float32 element %v", e)
		}
	}

	for _, rate := range []float64{-0.1, 1, math.NaN()} {
		assertErr(t, "rate", NewDropout(rate).Err(), autodiff.ErrInvalidArgument, "rate")
		tp := autodiff.NewTape()
		y := NewDropout(rate).Forward(tp, tp.Full(tensor.Float32, []int{2}, 1))
		assertErr(t, "rate forward", y.Err(), autodiff.ErrInvalidArgument, "rate")
	}
	// The op itself refuses a bad rate, and integer inputs.
	tp = autodiff.NewTape()
	y = tp.Apply(OpDropoutMask, DropoutMaskAttrs{Rate: 1.5}, tp.Full(tensor.Float32, []int{2}, 1))[0]
	assertErr(t, "op rate", y.Err(), autodiff.ErrInvalidArgument, OpDropoutMask)
	tp = autodiff.NewTape()
	y = tp.Apply(OpDropoutMask, DropoutMaskAttrs{Rate: 0.5}, tp.Ints(1, 2))[0]
	assertErr(t, "op dtype", y.Err(), autodiff.ErrDtype)
}

func TestLosses(t *testing.T) {
	r := rnd(6)
	logits := randT(r, false, 4, 3)
	labels, _ := tensorx.New([]int{4}, []int32{0, 2, 1, 2})
	ls := f64(t, logits)
	want := 0.0
	for i, l := range []int{0, 2, 1, 2} {
		row := ls[i*3 : i*3+3]
		s := 0.0
		for _, v := range row {
			s += math.Exp(v)
		}
		want += math.Log(s) - row[l]
	}
	want /= 4
	tp := autodiff.NewTape()
	got, err := SparseSoftmaxCrossEntropy(tp.Constant(logits), tp.Constant(labels)).Item()
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "SparseSoftmaxCrossEntropy", []float64{got}, []float64{want}, 1e-13)

	pred, target := randT(r, false, 2, 3), randT(r, false, 2, 3)
	ps, ts := f64(t, pred), f64(t, target)
	want = 0
	for i := range ps {
		want += (ps[i] - ts[i]) * (ps[i] - ts[i])
	}
	want /= 6
	got, err = MSE(tp.Constant(pred), tp.Constant(target)).Item()
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "MSE", []float64{got}, []float64{want}, 1e-14)

	// Gradients: with respect to the logits; to both MSE arguments.
	if err := checkFunc(func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return []autodiff.Value{SparseSoftmaxCrossEntropy(in[0], in[1])}
	}, logits, labels); err != nil {
		t.Error(err)
	}
	if err := checkFunc(func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return []autodiff.Value{MSE(in[0], in[1])}
	}, pred, target); err != nil {
		t.Error(err)
	}
	// Bad labels are the op's error.
	bad, _ := tensorx.New([]int{4}, []int32{0, 3, 1, 2})
	tp = autodiff.NewTape()
	_, err = SparseSoftmaxCrossEntropy(tp.Constant(logits), tp.Constant(bad)).Item()
	assertErr(t, "label range", err, nil, "SparseSoftmaxCrossEntropyWithLogits")
}
