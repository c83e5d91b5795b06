package nn

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

func names(m Module) string {
	var s []string
	for _, p := range m.Params() {
		s = append(s, p.Name)
	}
	s = append(s, "|")
	for _, b := range m.Buffers() {
		s = append(s, b.Name)
	}
	return strings.Join(s, " ")
}

func TestSequentialNames(t *testing.T) {
	r := rnd(1)
	inner := NewSequential(NewDense(3, 3, DenseOpts{Rand: r}), NewBatchNorm(3, BatchNormOpts{}))
	m := NewSequential(
		Named("conv1", NewConv2D(1, 2, 3, ConvOpts{Rand: r})),
		ReLU(),
		Flatten(),
		Named("block", inner),
		NewDense(3, 2, DenseOpts{Rand: r, NoBias: true}),
	)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	want := "conv1.weight conv1.bias block.0.weight block.0.bias block.1.scale block.1.offset 4.weight | block.1.moving_mean block.1.moving_variance"
	if got := names(m); got != want {
		t.Fatalf("names\n%s, want\n%s", got, want)
	}
	if got := strings.Join(m.Names(), ","); got != "conv1,1,2,block,4" {
		t.Fatalf("layer names %s", got)
	}
	if len(m.Layers()) != 5 {
		t.Fatalf("%d layers", len(m.Layers()))
	}
	s := m.String()
	for _, frag := range []string{"conv1: *nn.Conv2D conv1.weight(3, 3, 1, 2)", "1: ReLU", "2: Flatten", "block: Sequential(", "block.1: BatchNorm"} {
		if !strings.Contains(s, frag) && !strings.Contains(s, strings.Replace(frag, "block.1", "1", 1)) {
			t.Fatalf("String() = %s\nlacks %q", s, frag)
		}
	}
}

func TestSequentialErrors(t *testing.T) {
	r := rnd(1)
	d := NewDense(2, 2, DenseOpts{Rand: r})
	for _, c := range []struct {
		name string
		s    *Sequential
		frag string
	}{
		{"layer error", NewSequential(ReLU(), NewDense(0, 1, DenseOpts{Rand: r})), "layer 1 (Dense): nn.NewDense"},
		{"nil layer", NewSequential(nil), "nil Module"},
		{"same name", NewSequential(Named("a", ReLU()), Named("a", ReLU())), `two layers are named "a"`},
		{"empty name", NewSequential(Named("", ReLU())), "invalid name"},
		{"slash", NewSequential(Named("a/b", ReLU())), "invalid name"},
		{"shared", NewSequential(d, d), "belongs to another layer"},
		{"lambda", NewSequential(NewLambda("f", nil)), "nil function"},
	} {
		assertErr(t, c.name, c.s.Err(), autodiff.ErrInvalidArgument, c.frag)
		tp := autodiff.NewTape()
		y := c.s.Forward(tp, tp.Full(tensor.Float32, []int{1, 2}, 1))
		assertErr(t, c.name+" forward", tp.Backward(y), autodiff.ErrInvalidArgument, c.frag)
		var oe *autodiff.OpError
		if !asOpError(tp.Err(), &oe) || oe.Phase != "forward" {
			t.Fatalf("%s: tape error %#v is not the layer's", c.name, tp.Err())
		}
	}
}

// TestSequentialGradient checks the gradient through a whole model, with
// respect to the input and every parameter.
func TestSequentialGradient(t *testing.T) {
	r := rnd(13)
	m := NewSequential(
		NewConv2D(2, 3, 2, ConvOpts{Rand: r, Dtype: tensor.Float64, Padding: "SAME", BiasInit: GlorotUniform}),
		NewBatchNorm(3, BatchNormOpts{Dtype: tensor.Float64}),
		NewLambda("Tanh", autodiff.Tanh),
		NewDepthwiseConv2D(3, 2, ConvOpts{Rand: r, Dtype: tensor.Float64, DepthMultiplier: 2}),
		GlobalAvgPool("NHWC"),
		NewDense(6, 2, DenseOpts{Rand: r, Dtype: tensor.Float64, BiasInit: HeUniform}),
	)
	x := randT(r, false, 2, 3, 3, 2)
	checkModule(t, "Sequential train", m, x, true, false)
	checkModule(t, "Sequential eval", m, x, false, false)
}

func TestInitializers(t *testing.T) {
	for _, c := range []struct {
		shape   []int
		in, out float64
	}{
		{nil, 1, 1}, {[]int{5}, 5, 5}, {[]int{3, 7}, 3, 7}, {[]int{3, 2, 4, 5}, 24, 30}, {[]int{2, 2, 3, 1}, 12, 4},
	} {
		in, out := Fans(c.shape)
		if in != c.in || out != c.out {
			t.Fatalf("Fans(%v) = %v, %v, want %v, %v", c.shape, in, out, c.in, c.out)
		}
	}
	shape := []int{3, 3, 40, 60} // fan in 360, fan out 540
	for _, c := range []struct {
		name    string
		init    Initializer
		std     float64
		bound   float64
		uniform bool
	}{
		{"GlorotUniform", GlorotUniform, math.Sqrt(2.0 / 900), math.Sqrt(6.0 / 900), true},
		{"GlorotNormal", GlorotNormal, math.Sqrt(2.0 / 900), 2 * math.Sqrt(2.0/900) / truncatedStd, false},
		{"HeUniform", HeUniform, math.Sqrt(2.0 / 360), math.Sqrt(6.0 / 360), true},
		{"HeNormal", HeNormal, math.Sqrt(2.0 / 360), 2 * math.Sqrt(2.0/360) / truncatedStd, false},
	} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			d, _ := tensorx.Zeros(dt, shape)
			if err := c.init(rnd(1), d); err != nil {
				t.Fatal(err)
			}
			v, _ := tensorx.Float64s(d)
			mean, sq, maxAbs := 0.0, 0.0, 0.0
			for _, x := range v {
				mean += x
				sq += x * x
				maxAbs = math.Max(maxAbs, math.Abs(x))
			}
			mean /= float64(len(v))
			std := math.Sqrt(sq/float64(len(v)) - mean*mean)
			if math.Abs(mean) > 0.05*c.std || math.Abs(std-c.std) > 0.02*c.std {
				t.Fatalf("%s %v: mean %v std %v, want 0 and %v", c.name, dt, mean, std, c.std)
			}
			if maxAbs > c.bound*(1+1e-6) || maxAbs < 0.95*c.bound {
				t.Fatalf("%s %v: max |x| %v, bound %v", c.name, dt, maxAbs, c.bound)
			}
			// The same source gives the same values.
			e, _ := tensorx.Zeros(dt, shape)
			_ = c.init(rnd(1), e)
			w, _ := tensorx.Float64s(e)
			if closeTo(v, w, 0) >= 0 {
				t.Fatalf("%s: not reproducible", c.name)
			}
		}
	}
	d, _ := tensorx.Zeros(tensor.Float32, []int{2})
	for _, c := range []struct {
		init Initializer
		want float32
	}{{Ones, 1}, {Zeros, 0}, {Constant(2.5), 2.5}} {
		if err := c.init(nil, d); err != nil || tensorx.MustSlice[float32](d)[1] != c.want {
			t.Fatalf("constant initializer: %v %v", err, d)
		}
	}
	assertErr(t, "nil rand", GlorotUniform(nil, d), autodiff.ErrInvalidArgument, "nil *rand.Rand")
	i, _ := tensorx.Zeros(tensor.Int32, []int{2})
	assertErr(t, "int", HeNormal(rnd(1), i), autodiff.ErrDtype, "float32 or float64")
	assertErr(t, "int ones", Ones(nil, i), autodiff.ErrDtype)
	// A failing initializer makes the layer's error.
	failing := func(*rand.Rand, *tensor.Dense) error { return configError("boom") }
	assertErr(t, "failing init", NewDense(1, 1, DenseOpts{Rand: rnd(1), KernelInit: failing}).Err(),
		autodiff.ErrInvalidArgument, "nn.NewDense: initializing weight: boom")
}

func asOpError(err error, oe **autodiff.OpError) bool { return errors.As(err, oe) }
