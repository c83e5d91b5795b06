package onnx_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	pb "github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/orttest"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// runORT exports m for examples of shape and runs it on x.
func runORT(t *testing.T, ort *orttest.ORT, m nn.Module, shape []int, x *tensor.Dense, opts orttest.Options) []float32 {
	t.Helper()
	data, err := onnx.Marshal(m, onnx.Options{InputShape: shape})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ort.Run(t, data, map[string]orttest.Tensor{"input": {Shape: x.Shape(), Data: x.Float32s()}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out["output"].Data
}

// oneHot returns n images [h, w, c], image k holding 1 at the centre of
// channel k (n = c), 0 elsewhere: a convolution of it with a kernel whose
// taps fit the image has the kernel's taps as outputs, each a single
// product with 1 (exact in float32).
func oneHot(h, w, c int) *tensor.Dense {
	d := make([]float32, c*h*w*c)
	for k := range c {
		d[((k*h+h/2)*w+w/2)*c+k] = 1
	}
	return tensor.New(tensor.WithShape(c, h, w, c), tensor.WithBacking(d))
}

// TestQuantizedWeightsBitExact: the kernels ONNX Runtime computes with
// (DequantizeLinear of the int8 codes) are, bit for bit, the fake-quantised
// kernels Go evaluates with. One-hot inputs make each output one kernel
// value (times 1), so the outputs must be equal, not close.
func TestQuantizedWeightsBitExact(t *testing.T) {
	ort := orttest.Get(t)
	r := rand.New(rand.NewSource(5))
	cases := []struct {
		name  string
		m     nn.Module
		shape []int
		x     *tensor.Dense
		opt   bool // also with ONNX Runtime's optimizations on
	}{
		{"conv", fqw(conv(r, 4, 6, 3, nn.ConvOpts{Padding: "SAME", NoBias: true}), nn.WeightQuantOpts{}), []int{3, 3, 4}, oneHot(3, 3, 4), true},
		{"conv_4bit_asymmetric", fqw(conv(r, 3, 5, 3, nn.ConvOpts{Padding: "SAME", NoBias: true}), nn.WeightQuantOpts{NumBits: 4, NarrowRange: no(), Symmetric: no()}), []int{3, 3, 3}, oneHot(3, 3, 3), true},
		{"depthwise", fqw(dwconv(r, 5, 3, nn.ConvOpts{Padding: "SAME", NoBias: true, DepthMultiplier: 3}), nn.WeightQuantOpts{}), []int{3, 3, 5}, oneHot(3, 3, 5), true},
		{"dense", fqw(dense(r, 7, 4, true), nn.WeightQuantOpts{Symmetric: no()}), []int{7}, eye(7), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prepare(t, c.m, c.shape, r)
			want := goEval(t, c.m, c.x)
			for _, opt := range []bool{false, true} {
				if opt && !c.opt {
					continue
				}
				got := runORT(t, ort, c.m, c.shape, c.x, orttest.Options{NoOptimization: !opt})
				diff := 0
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] == 0 && want[i] == 0) {
						if diff < 3 {
							t.Errorf("optimizations %v: output %d: ORT %v, Go %v", opt, i, got[i], want[i])
						}
						diff++
					}
				}
				if diff > 0 {
					t.Errorf("optimizations %v: %d of %d kernel values differ", opt, diff, len(want))
				}
			}
		})
	}
}

func eye(n int) *tensor.Dense {
	d := make([]float32, n*n)
	for i := range n {
		d[i*n+i] = 1
	}
	return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(d))
}

// TestQuantizedInitializers: in the exported QAT model every conv and
// dense kernel is an INT8 initializer (with per-channel float scales and
// int8 zero points), and no float copy of a kernel is stored.
func TestQuantizedInitializers(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var block nn.Module
	for _, c := range layerCases {
		if c.name == "qat_block" {
			block = c.build(r)
			prepare(t, block, c.shape, r)
		}
	}
	data, err := onnx.Marshal(block, onnx.Options{InputShape: []int{9, 9, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var m pb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	kernels := map[int]bool{} // element counts of the kernels
	for _, p := range block.Params() {
		if strings.HasSuffix(p.Name, "weight") {
			kernels[p.Data.Shape().TotalSize()] = true
		}
	}
	quantized := 0
	for _, in := range m.Graph.Initializer {
		n := 1
		for _, d := range in.Dims {
			n *= int(d)
		}
		switch {
		case strings.HasSuffix(in.Name, "weight_quantized"):
			quantized++
			if in.DataType != int32(pb.TensorProto_INT8) || len(in.RawData) != n || !kernels[n] {
				t.Errorf("%s: type %v, %d bytes, %v: want an INT8 kernel", in.Name, pb.TensorProto_DataType(in.DataType), len(in.RawData), in.Dims)
			}
		case strings.HasSuffix(in.Name, "weight_zero_point"):
			if in.DataType != int32(pb.TensorProto_INT8) {
				t.Errorf("%s: type %v, want INT8", in.Name, pb.TensorProto_DataType(in.DataType))
			}
		case strings.HasSuffix(in.Name, "weight"):
			t.Errorf("%s: a %v copy of a kernel", in.Name, pb.TensorProto_DataType(in.DataType))
		}
	}
	if quantized != 3 {
		t.Errorf("%d quantised kernels, want 3 (conv, depthwise, dense)", quantized)
	}
	dq := 0
	for _, n := range m.Graph.Node {
		if n.OpType == "DequantizeLinear" && strings.HasSuffix(n.Input[0], "weight_quantized") {
			dq++
			if len(n.Attribute) != 1 || n.Attribute[0].Name != "axis" {
				t.Errorf("%s: attributes %v, want the channel axis", n.Name, n.Attribute)
			}
		}
	}
	if dq != 3 {
		t.Errorf("%d DequantizeLinear of kernels, want 3", dq)
	}
}

// actModel returns a FakeQuantActivation with the range [lo, hi].
func actModel(t *testing.T, lo, hi float64, o nn.ActQuantOpts) *nn.FakeQuantActivation {
	t.Helper()
	o.InitMin, o.InitMax = &lo, &hi
	f := nn.NewFakeQuantActivation(o)
	if f.Err() != nil {
		t.Fatal(f.Err())
	}
	return f
}

func column(v []float32) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(v), 1), tensor.WithBacking(v))
}

// TestNarrowGridNeedsClip: TensorFlow's grid [quant_min, quant_max] is
// narrower than uint8's [0, 255] with narrow_range (quant_min 1) or fewer
// than 8 bits (quant_max 2^bits − 1); QuantizeLinear alone saturates to
// [0, 255], so values beyond the nudged range would land on codes TF never
// produces. The exporter clips to the nudged range first: with the Clip
// ONNX Runtime matches Go on every value; without it (the test hook) the
// values beyond the grid differ — by exactly the extra codes.
func TestNarrowGridNeedsClip(t *testing.T) {
	ort := orttest.Get(t)
	for _, c := range []struct {
		name string
		o    nn.ActQuantOpts
	}{{"narrow_8bit", nn.ActQuantOpts{NarrowRange: true}}, {"4bit", nn.ActQuantOpts{NumBits: 4}}} {
		t.Run(c.name, func(t *testing.T) {
			m := actModel(t, -1, 1, c.o)
			var xs []float32
			for v := float32(-3); v <= 3; v += 0.01 {
				xs = append(xs, v)
			}
			x := column(xs)
			want := goEval(t, m, x)
			got := runORT(t, ort, m, []int{1}, x, orttest.Options{})
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("with the Clip: x %v: ORT %v, Go %v", xs[i], got[i], want[i])
				}
			}
			old := onnx.SetNoClipForTest(true)
			defer onnx.SetNoClipForTest(old)
			got = runORT(t, ort, m, []int{1}, x, orttest.Options{})
			lo, hi := want[0], want[len(want)-1] // the nudged range
			beyond := 0
			for i := range want {
				switch {
				case got[i] == want[i]:
				case got[i] < lo || got[i] > hi:
					beyond++
				default:
					t.Errorf("without the Clip: x %v: ORT %v inside the grid [%v, %v], Go %v", xs[i], got[i], lo, hi, want[i])
				}
			}
			if beyond == 0 {
				t.Errorf("without the Clip ONNX Runtime matched Go everywhere: the Clip would not be needed")
			}
			t.Logf("grid [%v, %v]: without the Clip %d of %d values fall outside it", lo, hi, beyond, len(xs))
		})
	}
}

// TestRoundingTies documents the one difference QDQ cannot remove:
// TensorFlow rounds x/scale half up (floor(v + 0.5)), QuantizeLinear
// half to even. With scale 1/16 (range [0, 255/16]) every x = (k + ½)/16
// is an exact tie: Go gives k + 1, ONNX Runtime k for even k, k + 1 for
// odd k. Other inputs (and random data, see TestLayersAgainstORT) agree.
func TestRoundingTies(t *testing.T) {
	ort := orttest.Get(t)
	m := actModel(t, 0, 255.0/16, nn.ActQuantOpts{})
	var xs []float32
	for k := range 255 {
		xs = append(xs, (float32(k)+0.5)/16, (float32(k)+0.25)/16)
	}
	x := column(xs)
	want := goEval(t, m, x)
	got := runORT(t, ort, m, []int{1}, x, orttest.Options{})
	ties := 0
	for i, v := range xs {
		k := i / 2
		if i%2 == 1 { // not a tie: both round to k
			if got[i] != want[i] || want[i] != float32(k)/16 {
				t.Errorf("x %v: ORT %v, Go %v, want %v", v, got[i], want[i], float32(k)/16)
			}
			continue
		}
		if want[i] != float32(k+1)/16 {
			t.Errorf("tie x %v: Go %v, want %v (half up)", v, want[i], float32(k+1)/16)
		}
		even := k + k%2
		if got[i] != float32(even)/16 {
			t.Errorf("tie x %v: ORT %v, want %v (half to even)", v, got[i], float32(even)/16)
		}
		if got[i] != want[i] {
			ties++
		}
	}
	if ties != 128 {
		t.Errorf("%d ties differ, want 128 (every even k in 0..254)", ties)
	}
}
