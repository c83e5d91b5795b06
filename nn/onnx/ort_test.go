package onnx_test

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/orttest"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// A layer case: a model, the shape of one example, and the largest
// difference allowed between ONNX Runtime's output and Go's, relative to
// the largest |output|: tol for the graph as exported (ONNX Runtime's
// optimizations off: float32 rounding of sums taken in another order),
// tolOpt (if not 0) with every optimization on, where ONNX Runtime may
// swap in kernels that compute otherwise. It rewrites DequantizeLinear →
// Gemm into MatMulNBits, whose default accuracy level 4 quantises the
// activations to int8 on the fly: an int8 kernel, off by about 0.5% of
// the largest logit.
type layerCase struct {
	name   string
	build  func(r *rand.Rand) nn.Module
	shape  []int
	tol    float64
	tolOpt float64
}

var zero = 0.0

// bn returns a BatchNorm whose running statistics become the batch's
// (momentum 0) in the training passes of prepare.
func bn(c int, format string) *nn.BatchNorm {
	return nn.NewBatchNorm(c, nn.BatchNormOpts{Momentum: &zero, DataFormat: format})
}

// bnReLU is bn with the ReLU fused (BatchNormOpts.ReLU).
func bnReLU(c int, format string) *nn.BatchNorm {
	return nn.NewBatchNorm(c, nn.BatchNormOpts{Momentum: &zero, DataFormat: format, ReLU: true})
}

// act returns a FakeQuantActivation whose range becomes the batch's range
// (decay 0) in the training passes of prepare.
func act(o nn.ActQuantOpts) *nn.FakeQuantActivation {
	o.EMADecay = &zero
	return nn.NewFakeQuantActivation(o)
}

func conv(r *rand.Rand, in, out, k int, o nn.ConvOpts) *nn.Conv2D {
	o.Rand = r
	o.BiasInit = uniform(-0.5, 0.5)
	return nn.NewConv2D(in, out, k, o)
}

func dwconv(r *rand.Rand, in, k int, o nn.ConvOpts) *nn.DepthwiseConv2D {
	o.Rand = r
	o.BiasInit = uniform(-0.5, 0.5)
	return nn.NewDepthwiseConv2D(in, k, o)
}

func dense(r *rand.Rand, in, out int, noBias bool) *nn.Dense {
	return nn.NewDense(in, out, nn.DenseOpts{Rand: r, NoBias: noBias, BiasInit: uniform(-0.5, 0.5)})
}

func fqw(l nn.Quantizable, o nn.WeightQuantOpts) *nn.FakeQuantWeights {
	return nn.NewFakeQuantWeights(l, o)
}

// lnorm returns a LayerNorm with gamma and beta (those present) drawn
// from U(0.5, 1.5) and U(-0.5, 0.5).
func lnorm(r *rand.Rand, features int, o nn.LayerNormOpts) *nn.LayerNorm {
	l := nn.NewLayerNorm(features, o)
	if l.Gamma != nil {
		uniform(0.5, 1.5)(r, l.Gamma.Data)
	}
	if l.Beta != nil {
		uniform(-0.5, 0.5)(r, l.Beta.Data)
	}
	return l
}

// uniform returns an initializer drawing from U(lo, hi).
func uniform(lo, hi float64) nn.Initializer {
	return func(r *rand.Rand, t *tensor.Dense) error {
		d := t.Float32s()
		for i := range d {
			d[i] = float32(lo + (hi-lo)*r.Float64())
		}
		return nil
	}
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

const (
	tolFloat    = 1e-5
	tolInt8Gemm = 1e-2
)

// Every layer kind of package nn, alone and in the combinations whose
// layouts differ (NHWC layers after a convolution get the NCHW tensor).
var layerCases = []layerCase{
	{"conv_same_bias", func(r *rand.Rand) nn.Module {
		return conv(r, 3, 5, 3, nn.ConvOpts{Padding: "SAME"})
	}, []int{7, 9, 3}, tolFloat, 0},
	{"conv_valid_stride2_nobias", func(r *rand.Rand) nn.Module {
		return conv(r, 3, 4, 3, nn.ConvOpts{Strides: []int{2}, NoBias: true})
	}, []int{9, 8, 3}, tolFloat, 0},
	{"conv_same_stride2_even", func(r *rand.Rand) nn.Module {
		return conv(r, 2, 3, 4, nn.ConvOpts{Padding: "SAME", Strides: []int{2, 3}})
	}, []int{10, 11, 2}, tolFloat, 0},
	{"conv_explicit_dilated_rect", func(r *rand.Rand) nn.Module {
		return conv(r, 2, 3, 0, nn.ConvOpts{KernelSize: [2]int{2, 3}, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 2, 0, 3}, Dilations: []int{2, 1}})
	}, []int{8, 7, 2}, tolFloat, 0},
	{"conv_groups", func(r *rand.Rand) nn.Module {
		return conv(r, 4, 6, 3, nn.ConvOpts{Padding: "SAME", Groups: 2})
	}, []int{6, 6, 4}, tolFloat, 0},
	{"conv_nchw", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 3, 4, 3, nn.ConvOpts{Padding: "SAME", DataFormat: "NCHW"}), bn(4, "NCHW"),
			nn.GlobalAvgPool("NCHW"))
	}, []int{3, 6, 5}, tolFloat, 0},
	{"depthwise_m2_stride2", func(r *rand.Rand) nn.Module {
		return dwconv(r, 3, 3, nn.ConvOpts{Padding: "SAME", Strides: []int{2}, DepthMultiplier: 2})
	}, []int{9, 7, 3}, tolFloat, 0},
	{"depthwise_valid_nobias", func(r *rand.Rand) nn.Module {
		return dwconv(r, 4, 3, nn.ConvOpts{NoBias: true, Dilations: []int{2}})
	}, []int{9, 9, 4}, tolFloat, 0},
	{"separable", func(r *rand.Rand) nn.Module {
		return nn.NewSeparableConv2D(3, 5, 3, nn.ConvOpts{Padding: "SAME", DepthMultiplier: 2, Rand: r, BiasInit: uniform(-1, 1)})
	}, []int{6, 7, 3}, tolFloat, 0},
	{"batchnorm_input", func(r *rand.Rand) nn.Module { return bn(3, "") }, []int{5, 4, 3}, tolFloat, 0},
	{"conv_bn_relu", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 3, 6, 3, nn.ConvOpts{Padding: "SAME"}), bn(6, ""), nn.ReLU())
	}, []int{8, 8, 3}, tolFloat, 0},
	{"conv_bn_fused_relu", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 3, 6, 3, nn.ConvOpts{Padding: "SAME"}), bnReLU(6, ""))
	}, []int{8, 8, 3}, tolFloat, 0},
	{"bn_fused_relu_nchw", func(r *rand.Rand) nn.Module { return bnReLU(4, "NCHW") }, []int{4, 5, 6}, tolFloat, 0},
	{"fracpool_pseudo", func(r *rand.Rand) nn.Module {
		return nn.NewFractionalAvgPool(1.5, nn.FractionalPoolOpts{PseudoRandom: true})
	}, []int{28, 28, 3}, tolFloat, 0},
	{"fracpool_random_rect", func(r *rand.Rand) nn.Module {
		return nn.NewFractionalAvgPool(1.44, nn.FractionalPoolOpts{RatioW: 1.73, EvalSeed: 7})
	}, []int{17, 23, 2}, tolFloat, 0},
	{"fracpool_overlapping_after_conv", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 2, 3, 3, nn.ConvOpts{Padding: "SAME"}),
			nn.NewFractionalAvgPool(2.2, nn.FractionalPoolOpts{Overlapping: true, PseudoRandom: true}))
	}, []int{15, 13, 2}, tolFloat, 0},
	{"global_avg_pool_input", func(r *rand.Rand) nn.Module { return nn.GlobalAvgPool("NHWC") }, []int{5, 6, 4}, tolFloat, 0},
	{"conv_global_avg_pool_dense", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 3, 6, 3, nn.ConvOpts{}), nn.GlobalAvgPool("NHWC"), dense(r, 6, 4, false))
	}, []int{7, 7, 3}, tolFloat, 0},
	{"flatten_dense", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(nn.Flatten(), dense(r, 5*4*3, 7, false))
	}, []int{5, 4, 3}, tolFloat, 0},
	{"conv_flatten_dense_nobias", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 2, 3, 3, nn.ConvOpts{}), nn.Flatten(), dense(r, 3*3*3, 4, true))
	}, []int{5, 5, 2}, tolFloat, 0},
	{"dense_relu6_dropout", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(dense(r, 6, 8, false), nn.NewDropout(0.5), nn.ReLU6())
	}, []int{6}, tolFloat, 0},
	{"dropout_only", func(r *rand.Rand) nn.Module { return nn.NewDropout(0.3) }, []int{4}, tolFloat, 0}, // output = input: Identity
	{"activations", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(
			conv(r, 2, 3, 3, nn.ConvOpts{Padding: "SAME"}),
			nn.NewLambda("tanh", autodiff.Tanh),
			nn.NewLambda("sigmoid", autodiff.Sigmoid),
			nn.NewLambda("square", autodiff.Square),
			nn.NewLambda("sqrt", autodiff.Sqrt),
			nn.NewLambda("exp", autodiff.Exp),
			nn.NewLambda("log", autodiff.Log),
			nn.NewLambda("rsqrt", autodiff.Rsqrt),
			nn.NewLambda("neg", autodiff.Neg),
			nn.NewLambda("softmax", autodiff.Softmax))
	}, []int{4, 5, 2}, tolFloat, 0},
	{"dense_log_softmax", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(dense(r, 5, 6, false), nn.NewLambda("log_softmax", autodiff.LogSoftmax))
	}, []int{5}, tolFloat, 0},
	{"nested_named", func(r *rand.Rand) nn.Module {
		block := nn.NewSequential(nn.Named("c", conv(r, 2, 4, 3, nn.ConvOpts{Padding: "SAME"})), nn.Named("bn", bn(4, "")), nn.ReLU())
		return nn.Named("net", nn.NewSequential(nn.Named("block", block), nn.GlobalAvgPool(""), nn.Named("fc", dense(r, 4, 3, false))))
	}, []int{6, 6, 2}, tolFloat, 0},

	// Pooling (issue 18): TensorFlow's SAME padding is asymmetric where
	// the total is odd (the extra row or column after), and an average
	// divides by the window's input elements only.
	{"maxpool_valid_input", func(r *rand.Rand) nn.Module { return nn.MaxPool2D(2, 2, nn.PoolOpts{}) }, []int{8, 7, 3}, tolFloat, 0},
	{"maxpool_same_stride2_asymmetric", func(r *rand.Rand) nn.Module {
		return nn.MaxPool2D(3, 3, nn.PoolOpts{Strides: [2]int{2, 2}, Padding: "SAME"})
	}, []int{8, 9, 2}, tolFloat, 0},
	{"avgpool_same_asymmetric_rect", func(r *rand.Rand) nn.Module {
		return nn.AvgPool2D(2, 3, nn.PoolOpts{Strides: [2]int{1, 2}, Padding: "SAME"})
	}, []int{7, 8, 2}, tolFloat, 0},
	{"avgpool_same_3x3_stride1", func(r *rand.Rand) nn.Module {
		return nn.AvgPool2D(3, 3, nn.PoolOpts{Strides: [2]int{1, 1}, Padding: "SAME"})
	}, []int{5, 6, 3}, tolFloat, 0},
	{"conv_relu_maxpool_avgpool_flatten_dense", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 2, 4, 3, nn.ConvOpts{Padding: "SAME"}), nn.ReLU(),
			nn.MaxPool2D(2, 2, nn.PoolOpts{}),
			nn.AvgPool2D(3, 3, nn.PoolOpts{Strides: [2]int{2, 2}, Padding: "SAME"}),
			nn.Flatten(), dense(r, 3*3*4, 5, false))
	}, []int{11, 12, 2}, tolFloat, 0},
	{"pool_nchw", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(conv(r, 3, 4, 3, nn.ConvOpts{Padding: "SAME", DataFormat: "NCHW"}),
			nn.MaxPool2D(3, 2, nn.PoolOpts{Strides: [2]int{2, 1}, Padding: "SAME", DataFormat: "NCHW"}),
			nn.AvgPool2D(2, 2, nn.PoolOpts{Strides: [2]int{3, 2}, Padding: "SAME", DataFormat: "NCHW"}),
			nn.MaxPool2D(1, 1, nn.PoolOpts{Strides: [2]int{2, 2}, Padding: "SAME", DataFormat: "NCHW"}))
	}, []int{3, 9, 7}, tolFloat, 0},

	// LayerNorm (issue 18), over the last Go axis wherever the layout
	// holds it, and the activation layers nn.Tanh, nn.Sigmoid.
	{"layernorm_input", func(r *rand.Rand) nn.Module { return lnorm(r, 6, nn.LayerNormOpts{}) }, []int{5, 6}, tolFloat, 0},
	{"dense_layernorm_tanh_dense_sigmoid", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(dense(r, 5, 8, false), lnorm(r, 8, nn.LayerNormOpts{Epsilon: 1e-5}), nn.Tanh(),
			dense(r, 8, 4, false), nn.Sigmoid())
	}, []int{5}, tolFloat, 0},
	{"conv_layernorm_channels_gap", func(r *rand.Rand) nn.Module { // the channels: ONNX axis 1 after the Conv
		return nn.NewSequential(conv(r, 2, 5, 3, nn.ConvOpts{Padding: "SAME"}), lnorm(r, 5, nn.LayerNormOpts{}), nn.GlobalAvgPool("NHWC"))
	}, []int{6, 7, 2}, tolFloat, 0},
	{"conv_nchw_layernorm_width", func(r *rand.Rand) nn.Module { // NCHW: over the columns
		return nn.NewSequential(conv(r, 2, 3, 3, nn.ConvOpts{Padding: "SAME", DataFormat: "NCHW"}), lnorm(r, 7, nn.LayerNormOpts{}))
	}, []int{2, 6, 7}, tolFloat, 0},
	{"layernorm_no_scale_no_center", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(lnorm(r, 4, nn.LayerNormOpts{NoScale: true, NoCenter: true, Epsilon: 0.5}), nn.Sigmoid())
	}, []int{3, 4}, tolFloat, 0},
	{"dense_tanh_sigmoid", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(dense(r, 6, 5, false), nn.Tanh(), dense(r, 5, 3, true), nn.Sigmoid())
	}, []int{6}, tolFloat, 0},

	// Quantisation-aware layers. The weights are exact (see
	// TestQuantizedWeightsBitExact); activations may differ by one grid
	// step where x/scale lands on a tie or within rounding of one.
	{"qat_conv_weights", func(r *rand.Rand) nn.Module {
		return fqw(conv(r, 3, 5, 3, nn.ConvOpts{Padding: "SAME"}), nn.WeightQuantOpts{})
	}, []int{6, 7, 3}, tolFloat, 0},
	{"qat_conv_weights_asymmetric_4bit", func(r *rand.Rand) nn.Module {
		return fqw(conv(r, 3, 4, 3, nn.ConvOpts{}), nn.WeightQuantOpts{NumBits: 4, NarrowRange: no(), Symmetric: no()})
	}, []int{6, 7, 3}, tolFloat, 0},
	{"qat_depthwise_weights", func(r *rand.Rand) nn.Module {
		return fqw(dwconv(r, 3, 3, nn.ConvOpts{Padding: "SAME", DepthMultiplier: 2}), nn.WeightQuantOpts{})
	}, []int{6, 7, 3}, tolFloat, 0},
	{"qat_dense_weights", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(nn.Flatten(), fqw(dense(r, 12, 5, false), nn.WeightQuantOpts{Symmetric: no()}))
	}, []int{2, 2, 3}, tolFloat, tolInt8Gemm},
	{"qat_activation", func(r *rand.Rand) nn.Module { return act(nn.ActQuantOpts{}) }, []int{5, 6, 3}, 0, 0},
	{"qat_activation_narrow_4bit", func(r *rand.Rand) nn.Module {
		return act(nn.ActQuantOpts{NumBits: 4, NarrowRange: true})
	}, []int{5, 6, 3}, 0, 0},
	{"qat_activation_learned_symmetric", func(r *rand.Rand) nn.Module {
		lo, hi := -1.3, 0.7
		return nn.NewFakeQuantActivation(nn.ActQuantOpts{Learned: true, Symmetric: true, InitMin: &lo, InitMax: &hi})
	}, []int{5, 6, 3}, 0, 0},
	{"qat_block", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(
			nn.Named("conv", fqw(conv(r, 2, 6, 3, nn.ConvOpts{Padding: "SAME", NoBias: true}), nn.WeightQuantOpts{})),
			bn(6, ""), nn.ReLU(), act(nn.ActQuantOpts{}),
			nn.NewFractionalAvgPool(1.5, nn.FractionalPoolOpts{PseudoRandom: true}),
			fqw(dwconv(r, 6, 3, nn.ConvOpts{Padding: "SAME", NoBias: true}), nn.WeightQuantOpts{}),
			bn(6, ""), nn.ReLU(), act(nn.ActQuantOpts{}),
			nn.Flatten(), fqw(dense(r, 6*6*6, 4, false), nn.WeightQuantOpts{}))
	}, []int{9, 9, 2}, tolFloat, tolInt8Gemm},
	{"qat_block_fused_relu", func(r *rand.Rand) nn.Module {
		return nn.NewSequential(
			nn.Named("conv", fqw(conv(r, 2, 6, 3, nn.ConvOpts{Padding: "SAME", NoBias: true}), nn.WeightQuantOpts{})),
			bnReLU(6, ""), act(nn.ActQuantOpts{}),
			fqw(dwconv(r, 6, 3, nn.ConvOpts{Padding: "SAME", NoBias: true}), nn.WeightQuantOpts{}),
			bnReLU(6, ""), act(nn.ActQuantOpts{}),
			nn.Flatten(), fqw(dense(r, 9*9*6, 4, false), nn.WeightQuantOpts{}))
	}, []int{9, 9, 2}, tolFloat, tolInt8Gemm},
}

// prepare gives the model trained-like state: two training passes on
// random inputs set the batch-norm statistics, the weight ranges and the
// activation ranges (with momentum and decay 0, the last batch's).
func prepare(t *testing.T, m nn.Module, shape []int, r *rand.Rand) {
	t.Helper()
	tape := autodiff.NewTape(autodiff.Training(true), autodiff.NoGrad(), autodiff.Seed(1))
	for range 2 {
		tape.Reset()
		m.Forward(tape, tape.Constant(randInput(r, append([]int{4}, shape...))))
		if err := tape.Err(); err != nil {
			t.Fatalf("training pass: %v", err)
		}
	}
	// BatchNorm scales and offsets away from 1 and 0.
	for _, p := range m.Params() {
		if n := p.Name; strings.HasSuffix(n, "scale") || strings.HasSuffix(n, "offset") {
			for i, v := range p.Data.Float32s() {
				p.Data.Float32s()[i] = v + float32(r.Float64()-0.5)
			}
		}
	}
}

func randInput(r *rand.Rand, shape []int) *tensor.Dense {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.Float64()*2 - 0.5)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

// goEval runs m in evaluation mode.
func goEval(t testing.TB, m nn.Module, x *tensor.Dense) []float32 {
	t.Helper()
	tape := autodiff.NewTape(autodiff.Training(false), autodiff.NoGrad())
	y, err := m.Forward(tape, tape.Constant(x)).Float32s()
	if err != nil {
		t.Fatalf("Go evaluation: %v", err)
	}
	return y
}

func maxAbs(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(float64(x)))
	}
	return m
}

// TestLayersAgainstORT exports every layer case, runs it in ONNX Runtime
// on random inputs, and compares with the Go model.
func TestLayersAgainstORT(t *testing.T) {
	ort := orttest.Get(t)
	dir := t.TempDir()
	var files []string
	for _, c := range layerCases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(len(c.name))))
			m := c.build(r)
			if e, ok := m.(interface{ Err() error }); ok && e.Err() != nil {
				t.Fatal(e.Err())
			}
			if s, ok := m.(*nn.Sequential); ok && s.Err() != nil {
				t.Fatal(s.Err())
			}
			prepare(t, m, c.shape, r)
			data, err := onnx.Marshal(m, onnx.Options{InputShape: c.shape})
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, c.name+".onnx")
			if err := os.WriteFile(f, data, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			x := randInput(r, append([]int{3}, c.shape...))
			want := goEval(t, m, x)
			for _, noOpt := range []bool{false, true} {
				out, err := ort.RunFile(t, f, map[string]orttest.Tensor{"input": {Shape: x.Shape(), Data: x.Float32s()}}, orttest.Options{NoOptimization: noOpt})
				if err != nil {
					t.Fatal(err)
				}
				got := out["output"]
				if len(got.Data) != len(want) {
					t.Fatalf("ORT output %v, Go %d values", got.Shape, len(want))
				}
				label := "ORT, every optimization"
				if noOpt {
					label = "ORT, optimizations off"
				}
				compare(t, c, got.Data, want, label, !noOpt)
			}
		})
	}
	orttest.Check(t, files...)
}

// compare checks max|got − want| against c's tolerance (tolOpt for
// ONNX Runtime with its optimizations on, if set).
func compare(t *testing.T, c layerCase, got, want []float32, label string, optimized bool) {
	t.Helper()
	scale := math.Max(maxAbs(want), 1e-30)
	worst, at := 0.0, 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	tol := c.tol
	if optimized && c.tolOpt != 0 {
		tol = c.tolOpt
	}
	t.Logf("%s: max|Δ| %.3g = %.3g × max|y| %.3g", label, worst, worst/scale, scale)
	if !(worst <= tol*scale) {
		t.Errorf("%s: max|ONNX − Go| = %.4g at %d (ONNX %v, Go %v) > %.3g × max|y| %.4g", label, worst, at, got[at], want[at], tol, scale)
	}
}
