package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/orttest"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// TestExportORT trains the example briefly (float and QAT), exports it
// with -export, and compares ONNX Runtime's logits on the bundled test
// set with the Go model's: float, max|Δ| ≤ 1e-4·max|logit| and top-1
// agreement ≥ 99.9%; QAT, the exported kernels are INT8 and ONNX
// Runtime's accuracy is within 0.3 points of Go's fake-quant evaluation.
// Eight training steps leave the accuracy near chance, and the test set is
// cut to its first 300 images (for CI's time): the logits' max|Δ| is the
// telling check here (the accuracies are compared on a trained model with
// the variables below).
//
// To measure a fully trained model instead, set
// FASHIONMNIST_ONNX_CHECKPOINT (and FASHIONMNIST_ONNX_QAT=1 for a -qat
// checkpoint) and FASHIONMNIST_ONNX_DATA (e.g. /usr/share/datasets/fashion-mnist).
func TestExportORT(t *testing.T) {
	ort := orttest.Get(t)
	if ckpt := os.Getenv("FASHIONMNIST_ONNX_CHECKPOINT"); ckpt != "" {
		qat := os.Getenv("FASHIONMNIST_ONNX_QAT") == "1"
		dir := os.Getenv("FASHIONMNIST_ONNX_DATA")
		if dir == "" {
			dir = "data"
		}
		model := newModel(1, qat)
		if _, err := nn.LoadCheckpoint(ckpt, model, nil); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "model.onnx")
		var out bytes.Buffer
		if err := exportONNX(path, model, qat, &out); err != nil {
			t.Fatal(err)
		}
		t.Log(strings.TrimSpace(out.String()))
		for _, noOpt := range []bool{false, true} {
			t.Logf("ONNX Runtime optimizations off: %v", noOpt)
			compareONNX(t, ort, model, path, qat, dir, orttest.Options{NoOptimization: noOpt})
		}
		return
	}
	for _, qat := range []bool{false, true} {
		name := map[bool]string{false: "float", true: "qat"}[qat]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := smallConfig(dir, 1)
			c.qat, c.plot, c.export = qat, "", filepath.Join(dir, "model.onnx")
			c.dataDir = testSubset(t, 300)
			var out bytes.Buffer
			if err := run(c, &out, &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "exported "+c.export) || !strings.HasPrefix(lastLine(out.String()), "test accuracy: ") {
				t.Fatalf("output:\n%s", out.String())
			}
			model := newModel(c.seed, qat)
			if _, err := nn.LoadCheckpoint(c.checkpoint, model, nil); err != nil {
				t.Fatal(err)
			}
			compareONNX(t, ort, model, c.export, qat, c.dataDir, orttest.Options{})
		})
	}
}

// compareONNX runs the exported model in ONNX Runtime on the test split of
// dataDir and compares it with the Go model.
func compareONNX(t *testing.T, ort *orttest.ORT, model nn.Module, path string, qat bool, dataDir string, opts orttest.Options) {
	t.Helper()
	test, err := data.LoadMNISTDir(dataDir, "test")
	if err != nil {
		t.Fatal(err)
	}
	x, labels := test.Images, test.Labels.Int32s()
	n := len(labels)
	t0 := time.Now()
	var got []float32
	for lo := 0; lo < n; lo += 1000 { // batches of 1000 images (ORT's activations take 0.2 GB)
		hi := min(n, lo+1000)
		in := orttest.Tensor{Shape: []int{hi - lo, 28, 28, 1}, Data: x.Float32s()[lo*784 : hi*784]}
		res, err := ort.RunFile(t, path, map[string]orttest.Tensor{"input": in}, opts)
		if err != nil {
			t.Fatal(err)
		}
		lg := res["logits"]
		if len(lg.Shape) != 2 || lg.Shape[0] != hi-lo || lg.Shape[1] != 10 {
			t.Fatalf("logits %v, want [%d 10]", lg.Shape, hi-lo)
		}
		got = append(got, lg.Data...)
	}
	t.Logf("ONNX Runtime: %d images in %.1f s (with the session setups)", n, time.Since(t0).Seconds())
	want := goLogits(t, model, x)
	maxLogit, maxDiff := 0.0, 0.0
	agree, goRight, ortRight := 0, 0, 0
	for i := range n {
		g, w := got[i*10:][:10], want[i*10:][:10]
		for j := range 10 {
			maxLogit = math.Max(maxLogit, math.Abs(float64(w[j])))
			maxDiff = math.Max(maxDiff, math.Abs(float64(g[j]-w[j])))
		}
		a, b := argmax(g), argmax(w)
		if a == b {
			agree++
		}
		if int32(a) == labels[i] {
			ortRight++
		}
		if int32(b) == labels[i] {
			goRight++
		}
	}
	goAcc, ortAcc := float64(goRight)/float64(n), float64(ortRight)/float64(n)
	t.Logf("%d test images: max|ORT − Go| %.3g, max|logit| %.3g (ratio %.3g); top-1 agreement %.2f%%; accuracy Go %.4f, ORT %.4f",
		n, maxDiff, maxLogit, maxDiff/maxLogit, 100*float64(agree)/float64(n), goAcc, ortAcc)
	if !qat {
		if maxDiff > 1e-4*maxLogit {
			t.Errorf("max|ORT − Go| %.3g > 1e-4 × max|logit| %.3g", maxDiff, maxLogit)
		}
		if float64(agree) < 0.999*float64(n) {
			t.Errorf("top-1 agreement %d of %d < 99.9%%", agree, n)
		}
		return
	}
	if math.Abs(goAcc-ortAcc) > 0.003 {
		t.Errorf("accuracy: ORT %.4f, Go %.4f: more than 0.3 points apart", ortAcc, goAcc)
	}
	checkInt8Kernels(t, path)
}

// testSubset returns a data directory with the bundled training set and
// the first n images of the bundled test set (the test's cost is mostly
// evaluating the test set, in Go and in ONNX Runtime).
func testSubset(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"} {
		abs, err := filepath.Abs(filepath.Join("data", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		x, err := data.ReadIDX(filepath.Join("data", f+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		per := len(x.Data) / x.Dims[0]
		dims := append([]int{n}, x.Dims[1:]...)
		head := []byte{0, 0, byte(x.Type), byte(len(dims))}
		for _, d := range dims {
			head = binary.BigEndian.AppendUint32(head, uint32(d))
		}
		if err := os.WriteFile(filepath.Join(dir, f), append(head, x.Data[:n*per]...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goLogits evaluates model on x in batches of 500.
func goLogits(t *testing.T, model nn.Module, x *tensor.Dense) []float32 {
	t.Helper()
	tape := autodiff.NewTape(autodiff.Training(false), autodiff.NoGrad())
	n, per := x.Shape()[0], 28*28
	var out []float32
	for lo := 0; lo < n; lo += 500 {
		hi := min(n, lo+500)
		tape.Reset()
		b := tensor.New(tensor.WithShape(hi-lo, 28, 28, 1), tensor.WithBacking(x.Float32s()[lo*per:hi*per]))
		y, err := model.Forward(tape, tape.Constant(b)).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, y...)
	}
	return out
}

func argmax(v []float32) int {
	best := 0
	for j, x := range v {
		if x > v[best] {
			best = j
		}
	}
	return best
}

// checkInt8Kernels checks that the QAT model's conv and dense kernels are
// INT8 initializers (6 convolutions and the dense layer).
func checkInt8Kernels(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m pb.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range m.Graph.Initializer {
		name, typ := in.Name, pb.TensorProto_DataType(in.DataType).String()
		if strings.HasSuffix(name, "weight_quantized") {
			n++
			if typ != "INT8" {
				t.Errorf("%s is %s", name, typ)
			}
		} else if strings.HasSuffix(name, "weight") {
			t.Errorf("%s: a %s kernel", name, typ)
		}
	}
	if n != 11 {
		t.Errorf("%d int8 kernels, want 11 (conv1, conv2, dw2, pw2, dw3, pw3, dw4, pw4, dw5, pw5, fc)", n)
	}
}

// BenchmarkExportONNX exports the example's QAT model (the larger of the
// two): go test ./examples/fashionmnist -run '^$' -bench ExportONNX.
func BenchmarkExportONNX(b *testing.B) {
	model := newModel(1, true)
	for b.Loop() {
		if _, err := onnx.Marshal(model, onnxOptions); err != nil {
			b.Fatal(err)
		}
	}
}
