package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// spec is one workload of workloads.json, the definitions that the PyTorch
// side (torch/bench_torch.py) reads. Shapes are NHWC.
type spec struct {
	ID      string             `json:"id"`
	Kind    string             `json:"kind"`
	Systems []string           `json:"systems"`
	Modes   []string           `json:"modes"`
	Flops   map[string]float64 `json:"flops"`
	Bytes   map[string]float64 `json:"bytes"`

	// Single-op workloads.
	Op      string            `json:"op"`
	GradOps map[string]string `json:"grad_ops"`
	Attrs   map[string]any    `json:"attrs"`
	Input   []int             `json:"input"`
	Filter  []int             `json:"filter"`
	Output  []int             `json:"output"`
	C       int               `json:"C"`
	Wrt     []string          `json:"wrt"`
	// W7: the values of scale, offset, mean and variance.
	Params map[string]float64 `json:"params"`
	// W8: x = XScale·N(0, 1); per-channel min in MinRange, max in MaxRange.
	XScale   float64   `json:"x_scale"`
	MinRange []float64 `json:"min_range"`
	MaxRange []float64 `json:"max_range"`
	// W9: PyTorch's fixed pooling sequences.
	RowSeq []int `json:"row_seq"`
	ColSeq []int `json:"col_seq"`

	// W10.
	Classes int     `json:"classes"`
	LR      float64 `json:"lr"`
	BN      struct {
		Epsilon              float64 `json:"epsilon"`
		ExponentialAvgFactor float64 `json:"exponential_avg_factor"`
	} `json:"bn"`
	Layers []layerSpec `json:"layers"`

	// GEMM: square matrices of this size.
	Size int `json:"size"`
}

// layerSpec is one layer of W10's model.
type layerSpec struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Cin      int    `json:"cin"`
	Cout     int    `json:"cout"`
	Channels int    `json:"channels"`
	K        int    `json:"k"`
	Stride   int    `json:"stride"`
	Padding  string `json:"padding"`
	Bias     bool   `json:"bias"`
	Output   []int  `json:"output"`
}

// loadSpecs reads workloads.json.
func loadSpecs(t *testing.T) []spec {
	t.Helper()
	b, err := os.ReadFile("workloads.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Workloads []spec `json:"workloads"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("workloads.json: %v", err)
	}
	return doc.Workloads
}

// TestWorkloadsMatchJSON checks that cmd/bench runs exactly the workloads
// of workloads.json that name tapegrad among their systems, in the same
// order, with the same modes, flop and byte counts, ops, attrs (both
// normalised through the registry, so TensorFlow's defaults count too),
// input shapes and data ranges. PyTorch's side reads the same file, so a
// change on either side that this test does not see cannot make the two
// benchmarks time different work.
func TestWorkloadsMatchJSON(t *testing.T) {
	specs := loadSpecs(t)
	seen := map[string]bool{}
	var want []string
	for _, s := range specs {
		if seen[s.ID] {
			t.Errorf("workloads.json: %s twice", s.ID)
		}
		seen[s.ID] = true
		if len(s.Modes) == 0 || len(s.Systems) == 0 {
			t.Errorf("workloads.json: %s has no modes or no systems", s.ID)
		}
		if slices.Contains(s.Systems, "tapegrad") {
			want = append(want, s.ID)
		}
	}
	var got []string
	for _, w := range workloads {
		got = append(got, w.name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cmd/bench runs %v; workloads.json lists %v for tapegrad (same order)", got, want)
	}
	byID := map[string]spec{}
	for _, s := range specs {
		byID[s.ID] = s
	}
	for _, w := range workloads {
		s := byID[w.name]
		t.Run(w.name, func(t *testing.T) {
			ms, err := w.build(1)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			modes := map[string]mode{}
			var names []string
			for _, m := range ms {
				names = append(names, m.name)
				modes[m.name] = m
				if m.flops != s.Flops[m.name] {
					t.Errorf("%s: flops %v, workloads.json %v", m.name, m.flops, s.Flops[m.name])
				}
				if m.bytes != s.Bytes[m.name] {
					t.Errorf("%s: bytes %v, workloads.json %v", m.name, m.bytes, s.Bytes[m.name])
				}
			}
			if !slices.Equal(names, s.Modes) {
				t.Fatalf("modes %v, workloads.json %v", names, s.Modes)
			}
			switch s.Kind {
			case "conv2d", "depthwise":
				checkConv(t, s, modes)
			case "batchnorm":
				checkBatchNorm(t, s, modes)
			case "fakequant":
				checkFakeQuant(t, s, modes)
			case "fracavgpool":
				checkFracPool(t, s, modes)
			case "train_step":
				checkW10(t, s)
			case "gemm":
				if w.name != fmt.Sprintf("GEMM%d", s.Size) {
					t.Errorf("name %s for size %d", w.name, s.Size)
				}
			default:
				t.Fatalf("workloads.json: kind %q has no check here", s.Kind)
			}
		})
	}
}

// checkCall checks the op, attrs and input shapes of a mode; for fwdbwd
// (wrt > 0) also the upstream's shape and the differentiated inputs.
func checkCall(t *testing.T, m mode, op string, attrs map[string]any, attrOp string, shapes [][]int, upstream []int, wrt int) {
	t.Helper()
	c := m.call
	if c == nil {
		t.Fatalf("%s: no op recorded", m.name)
	}
	if c.op != op {
		t.Errorf("%s: op %s, workloads.json %s", m.name, c.op, op)
	}
	want, err := parseAttrs(attrOp, attrs)
	if err != nil {
		t.Fatalf("%s: workloads.json attrs: %v", m.name, err)
	}
	if !reflect.DeepEqual(c.attrs, want) {
		t.Errorf("%s: attrs %s, workloads.json %s", m.name, showAttrs(c.attrs), showAttrs(want))
	}
	var got [][]int
	for _, d := range c.inputs {
		got = append(got, []int(d.Shape()))
	}
	if !reflect.DeepEqual(got, shapes) {
		t.Errorf("%s: input shapes %v, workloads.json %v", m.name, got, shapes)
	}
	if wrt == 0 {
		return
	}
	if c.upstream == nil || !slices.Equal([]int(c.upstream.Shape()), upstream) {
		t.Errorf("%s: upstream %v, want shape %v", m.name, c.upstream, upstream)
	}
	if c.wrt != wrt {
		t.Errorf("%s: gradients w.r.t. %d inputs, workloads.json %d", m.name, c.wrt, wrt)
	}
}

// showAttrs formats an attr struct with its pointer fields' values.
func showAttrs(a any) string {
	v := reflect.ValueOf(a)
	if v.Kind() != reflect.Struct {
		return fmt.Sprintf("%+v", a)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%v", v.Type().Field(i).Name, f)
	}
	b.WriteByte('}')
	return b.String()
}

// int32s returns the values of an int32 tensor.
func int32s(t *testing.T, d *tensor.Dense) []int {
	t.Helper()
	s, err := tensorx.Slice[int32](d)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(s))
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}

func checkConv(t *testing.T, s spec, modes map[string]mode) {
	checkCall(t, modes["fwd"], s.Op, s.Attrs, s.Op, [][]int{s.Input, s.Filter}, nil, 0)
	checkCall(t, modes["fwdbwd"], s.Op, s.Attrs, s.Op, [][]int{s.Input, s.Filter}, s.Output, 2)
	// The gradient ops take the forward's attrs and the other operand's
	// shape as an int32 vector.
	bi, bf := modes["bwd_input"], modes["bwd_filter"]
	checkCall(t, bi, s.GradOps["bwd_input"], s.Attrs, s.Op, [][]int{{4}, s.Filter, s.Output}, nil, 0)
	checkCall(t, bf, s.GradOps["bwd_filter"], s.Attrs, s.Op, [][]int{s.Input, {4}, s.Output}, nil, 0)
	if bi.call != nil && len(bi.call.inputs) == 3 {
		if got := int32s(t, bi.call.inputs[0]); !slices.Equal(got, s.Input) {
			t.Errorf("bwd_input: input_sizes %v, workloads.json %v", got, s.Input)
		}
	}
	if bf.call != nil && len(bf.call.inputs) == 3 {
		if got := int32s(t, bf.call.inputs[1]); !slices.Equal(got, s.Filter) {
			t.Errorf("bwd_filter: filter_sizes %v, workloads.json %v", got, s.Filter)
		}
	}
}

func checkBatchNorm(t *testing.T, s spec, modes map[string]mode) {
	c := []int{s.C}
	shapes := [][]int{s.Input, c, c, c, c}
	checkCall(t, modes["fwd"], s.Op, s.Attrs, s.Op, shapes, nil, 0)
	checkCall(t, modes["fwdbwd"], s.Op, s.Attrs, s.Op, shapes, s.Input, len(s.Wrt))
	call := modes["fwd"].call
	for i, name := range []string{"scale", "offset", "mean", "variance"} {
		want, ok := s.Params[name]
		if !ok {
			t.Fatalf("workloads.json: params lacks %s", name)
		}
		for _, v := range tensorx.MustSlice[float32](call.inputs[i+1]) {
			if float64(v) != want {
				t.Errorf("%s holds %v, workloads.json %v", name, v, want)
				break
			}
		}
	}
}

func checkFakeQuant(t *testing.T, s spec, modes map[string]mode) {
	c := []int{s.C}
	shapes := [][]int{s.Input, c, c}
	checkCall(t, modes["fwd"], s.Op, s.Attrs, s.Op, shapes, nil, 0)
	checkCall(t, modes["fwdbwd"], s.Op, s.Attrs, s.Op, shapes, s.Input, len(s.Wrt))
	in := modes["fwd"].call.inputs
	// x = x_scale·N(0, 1): its root mean square is x_scale to within a
	// percent at this size.
	var sq float64
	xs := tensorx.MustSlice[float32](in[0])
	for _, v := range xs {
		sq += float64(v) * float64(v)
	}
	if rms := math.Sqrt(sq / float64(len(xs))); math.Abs(rms/s.XScale-1) > 0.01 {
		t.Errorf("x has root mean square %.4f, workloads.json x_scale %v", rms, s.XScale)
	}
	for i, r := range [][]float64{s.MinRange, s.MaxRange} {
		for _, v := range tensorx.MustSlice[float32](in[i+1]) {
			if float64(v) < r[0] || float64(v) > r[1] {
				t.Errorf("%s %v outside workloads.json's %v", []string{"min", "max"}[i], v, r)
				break
			}
		}
	}
}

func checkFracPool(t *testing.T, s spec, modes map[string]mode) {
	checkCall(t, modes["fwd"], s.Op, s.Attrs, s.Op, [][]int{s.Input}, nil, 0)
	checkCall(t, modes["fwdbwd"], s.Op, s.Attrs, s.Op, [][]int{s.Input}, s.Output, len(s.Wrt))
	// PyTorch's fixed sequences cut the input into the output's cells of
	// one or two rows and columns, as TensorFlow's pseudo-random ones at
	// ratio 1.44 do.
	for i, seq := range [][]int{s.RowSeq, s.ColSeq} {
		in, out := s.Input[1+i], s.Output[1+i]
		if len(seq) != out+1 || seq[0] != 0 || seq[out] != in {
			t.Errorf("sequence %v does not cut %d into %d cells", seq, in, out)
			continue
		}
		for j := 1; j <= out; j++ {
			if d := seq[j] - seq[j-1]; d < 1 || d > 2 {
				t.Errorf("sequence %v: cell %d has size %d", seq, j-1, d)
			}
		}
	}
}

// checkW10 checks W10's model layer by layer (names, parameter shapes,
// output shapes), its batch and its hyperparameters.
func checkW10(t *testing.T, s spec) {
	m, err := newW10(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := []int(m.x.Data.Shape()); !slices.Equal(got, s.Input) {
		t.Errorf("batch %v, workloads.json %v", got, s.Input)
	}
	if got := []int(m.lab.Data.Shape()); !slices.Equal(got, s.Input[:1]) {
		t.Errorf("labels %v, want [%d]", got, s.Input[0])
	}
	for _, l := range tensorx.MustSlice[int32](m.lab.Data) {
		if l < 0 || int(l) >= s.Classes {
			t.Errorf("label %d outside [0, %d)", l, s.Classes)
			break
		}
	}
	if m.opt.LR() != s.LR {
		t.Errorf("learning rate %v, workloads.json %v", m.opt.LR(), s.LR)
	}
	if w10BNEpsilon != s.BN.Epsilon || math.Abs((1-w10BNMomentum)-s.BN.ExponentialAvgFactor) > 1e-12 {
		t.Errorf("batch norm epsilon %v momentum %v, workloads.json %+v", w10BNEpsilon, w10BNMomentum, s.BN)
	}
	layers, names := m.model.Layers(), m.model.Names()
	tp := autodiff.NewTape(autodiff.Threads(1), autodiff.Training(true))
	x := tp.Param(m.x)
	// i counts cnn.go's layers, j workloads.json's: a BatchNorm with its
	// ReLU fused (BatchNormOpts.ReLU) stands for a batchnorm and the relu
	// after it.
	i := 0
	for j, l := range s.Layers {
		if l.Type == "relu" && i > 0 {
			if bn, ok := layers[i-1].(interface{ ReLU() bool }); ok && bn.ReLU() {
				if got := []int(x.Shape()); !slices.Equal(got, l.Output) {
					t.Errorf("workloads.json layer %d (relu, fused into %s): output %v, workloads.json %v", j, names[i-1], got, l.Output)
				}
				continue
			}
		}
		if i == len(layers) {
			t.Fatalf("%d layers, workloads.json has more (layer %d, %s)", len(layers), j, l.Type)
		}
		if l.Name != "" && names[i] != l.Name {
			t.Errorf("layer %d is %q, workloads.json %q", i, names[i], l.Name)
		}
		var want [][]int
		switch l.Type {
		case "conv2d":
			want = [][]int{{l.K, l.K, l.Cin, l.Cout}}
		case "depthwise":
			want = [][]int{{l.K, l.K, l.Channels, 1}}
		case "batchnorm":
			want = [][]int{{l.Channels}, {l.Channels}}
		case "dense":
			want = [][]int{{l.Cin, l.Cout}}
		case "relu", "global_avg_pool":
		default:
			t.Fatalf("workloads.json: layer type %q has no check here", l.Type)
		}
		if l.Bias {
			want = append(want, []int{l.Cout})
		}
		var got [][]int
		for _, p := range layers[i].Params() {
			got = append(got, []int(p.Data.Shape()))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("layer %d (%s %s): parameter shapes %v, workloads.json %v", i, names[i], l.Type, got, want)
		}
		if l.Padding != "" && l.Padding != "SAME" {
			t.Errorf("layer %d: padding %s; cnn.go builds SAME convolutions", i, l.Padding)
		}
		x = layers[i].Forward(tp, x)
		if err := tp.Err(); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		if got := []int(x.Shape()); !slices.Equal(got, l.Output) {
			t.Errorf("layer %d (%s %s): output %v, workloads.json %v", i, names[i], l.Type, got, l.Output)
		}
		i++
	}
	if i != len(layers) {
		t.Errorf("%d layers, workloads.json describes %d", len(layers), i)
	}
	if got := x.Shape(); len(got) != 2 || got[1] != s.Classes {
		t.Errorf("logits %v, want %d classes", got, s.Classes)
	}
}
