package golden

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// sampleFiles are the files of the shared public sample (the other files
// of testdata/golden are the project's own generated families).
var sampleFiles = []string{"conv2d", "depthwise_conv2d", "fake_quant", "fractional_avg_pool", "fused_batch_norm"}

// TestParseSamples decodes the repository's copy of the shared golden
// cases: every case is well formed, and a few fields decode as written.
func TestParseSamples(t *testing.T) {
	var files []string
	for _, f := range sampleFiles {
		files = append(files, filepath.Join("../../testdata/golden", f+".json"))
	}
	total, withGrad, withErr, nullData := 0, 0, 0, 0
	for _, f := range files {
		cases, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			total++
			if c.Err != nil || len(c.Warnings) > 0 {
				t.Errorf("%s: %v %v", c, c.Err, c.Warnings)
			}
			if c.Grad != nil {
				withGrad++
			}
			if c.WantError {
				withErr++
				if c.Error == "" || len(c.Outputs) != 0 {
					t.Errorf("%s: error case with error %q and %d outputs", c, c.Error, len(c.Outputs))
				}
			}
			for _, o := range c.Outputs {
				if !o.HasData() {
					nullData++
				}
			}
		}
	}
	if total != 52 || withErr != 10 || withGrad != 32 || nullData != 7 {
		t.Errorf("total %d, error cases %d, grad cases %d, shape-only outputs %d", total, withErr, withGrad, nullData)
	}

	cases, err := ReadFile("../../testdata/golden/conv2d.json")
	if err != nil {
		t.Fatal(err)
	}
	c := cases[0]
	if c.Op != "Conv2D" || c.Name != "conv2d/fwd/nchw-valid-s31-k2x1/f64-dyadic/0000" || c.Index != 0 ||
		*c.Rtol != 1e-9 || *c.Atol != 1e-12 || c.Attrs["padding"] != "VALID" {
		t.Errorf("case 0 decoded as %+v", c)
	}
	if s, ok := c.Attrs["strides"].([]any); !ok || len(s) != 4 || s[2] != 3.0 {
		t.Errorf("strides = %#v; ParseAttrs wants JSON-decoded values ([]any of float64)", c.Attrs["strides"])
	}
	in := c.Inputs[0]
	if d, ok := in.Data.([]float64); !ok || in.Name != "input" || !tensorx.SameShape(in.Shape, []int{1, 1, 4, 3}) || d[0] != -1.125 {
		t.Errorf("input 0 = %+v", in)
	}
	if len(c.Grad.Expected) != 2 || c.Grad.Expected[1].Name != "d_filter" {
		t.Errorf("grad = %+v", c.Grad)
	}
}

// TestParseAllFiles decodes every golden file of the repository, the
// generated families included: every case is well formed.
func TestParseAllFiles(t *testing.T) {
	files, err := filepath.Glob("../../testdata/golden/*.json")
	if err != nil || len(files) < len(sampleFiles) {
		t.Fatalf("golden files: %v, %v", files, err)
	}
	for _, f := range files {
		cases, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.Err != nil || len(c.Warnings) > 0 {
				t.Errorf("%s: %v %v", c, c.Err, c.Warnings)
			}
		}
	}
}

func TestParseData(t *testing.T) {
	src := `{"cases": [{"name": "n", "op": "X", "inputs": [
		{"dtype": "float32", "shape": [3], "data": [0.1, "NaN", "-Inf"]},
		{"dtype": "float64", "shape": [], "data": [0.1]},
		{"dtype": "int64", "shape": [2], "data": [-9223372036854775808, 1e3]},
		{"dtype": "bool", "shape": [1, 0], "data": []}],
		"outputs": [{"dtype": "float", "shape": [2], "data": null}]}]}`
	cases, err := Parse("x.json", []byte(src))
	if err != nil || len(cases) != 1 || cases[0].Err != nil {
		t.Fatalf("%v %+v", err, cases)
	}
	c := cases[0]
	f32 := c.Inputs[0].Data.([]float32)
	if f32[0] != float32(0.1) || !math.IsNaN(float64(f32[1])) || !math.IsInf(float64(f32[2]), -1) {
		t.Errorf("float32 data %v", f32)
	}
	if c.Inputs[1].Data.([]float64)[0] != 0.1 || len(c.Inputs[1].Shape) != 0 {
		t.Errorf("float64 scalar %+v", c.Inputs[1])
	}
	if i64 := c.Inputs[2].Data.([]int64); i64[0] != math.MinInt64 || i64[1] != 1000 {
		t.Errorf("int64 data %v", i64)
	}
	d, err := c.Inputs[3].Dense()
	if err != nil || d.Dtype() != tensor.Bool || !tensorx.SameShape(d.Shape(), []int{1, 0}) {
		t.Errorf("empty bool tensor: %v %v", d, err)
	}
	if o := c.Outputs[0]; o.Dtype != tensor.Float32 || o.HasData() {
		t.Errorf("shape-only output %+v", o)
	}
	if _, err := o0Dense(c); err == nil {
		t.Error("Dense of a shape-only tensor succeeded")
	}
	if c.String() != `x.json #0 "n" (X)` {
		t.Errorf("String() = %q", c.String())
	}
}

func o0Dense(c *Case) (*tensor.Dense, error) { return c.Outputs[0].Dense() }

func TestParseFileErrors(t *testing.T) {
	for src, want := range map[string]string{
		"":                       "the file is empty",
		"{\n\"cases\": [1,,]}":   "invalid JSON at line 2, column 13",
		`"cases"`:                `want an object {"cases": [...]}, got string`,
		`null`:                   "got null",
		`{"case": []}`:           `no "cases" list`,
		`{"cases": "x"}`:         `"cases" must be a list, got a string "x"`,
		`{"cases": null}`:        `"cases" must be a list, got null`,
		`{"cases": [], "x": 1}x`: "invalid JSON at line 1, column 22",
	} {
		_, err := Parse("f.json", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "f.json: ") {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
	if cases, err := Parse("f.json", []byte(`{"cases": []}`)); err != nil || len(cases) != 0 {
		t.Errorf("empty list: %v %v", cases, err)
	}
}

func TestDefaultTolAndCaseTol(t *testing.T) {
	if DefaultTol(tensor.Float32) != (Tol{1e-6, 1e-6}) || DefaultTol(tensor.Float64) != (Tol{1e-12, 1e-12}) || DefaultTol(tensor.Int32) != (Tol{}) {
		t.Error("DefaultTol changed; update doc.go, cmd/opcheck and testdata/golden/README.md")
	}
	r := 0.5
	c := &Case{Rtol: &r}
	if c.Tol(tensor.Float32) != (Tol{Rtol: 0.5, Atol: 1e-6}) || c.Tol(tensor.Float64) != (Tol{Rtol: 0.5, Atol: 1e-12}) {
		t.Errorf("rtol only: %v %v", c.Tol(tensor.Float32), c.Tol(tensor.Float64))
	}
}

func dense[T tensorx.Elem](t *testing.T, shape []int, v ...T) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	f64 := func(shape []int, v ...float64) *Tensor {
		return &Tensor{Dtype: tensor.Float64, Shape: shape, Data: v}
	}
	tol := Tol{Rtol: 0.1, Atol: 0.01}
	for _, tc := range []struct {
		name string
		want *Tensor
		got  *tensor.Dense
		tol  Tol
		msg  string // "" = match
	}{
		{"exact", f64([]int{2}, 1, 2), dense(t, []int{2}, 1.0, 2.0), Tol{}, ""},
		{"within atol+rtol", f64([]int{2}, 0, 10), dense(t, []int{2}, 0.01, 11.01), tol, ""},
		{"just outside", f64([]int{1}, 10), dense(t, []int{1}, 11.02), tol, "1 of 1 elements out of tolerance; worst at [0]: got 11.02, want 10"},
		{"nan matches nan", f64([]int{1}, nan), dense(t, []int{1}, nan), Tol{}, ""},
		{"nan vs number", f64([]int{1}, nan), dense(t, []int{1}, 1.0), Tol{1e9, 1e9}, "got 1, want NaN, non-finite values must match exactly"},
		{"number vs nan", f64([]int{1}, 1), dense(t, []int{1}, nan), Tol{1e9, 1e9}, "got NaN, want 1"},
		{"inf matches inf", f64([]int{2}, inf, -inf), dense(t, []int{2}, inf, -inf), Tol{}, ""},
		{"inf vs big", f64([]int{1}, inf), dense(t, []int{1}, math.MaxFloat64), Tol{1, 1}, "got 1.7976931348623157e+308, want +Inf"},
		{"big vs inf", f64([]int{1}, 1e308), dense(t, []int{1}, inf), Tol{1, 1}, "got +Inf, want 1e+308"},
		{"worst is the most tolerances off", f64([]int{2, 2}, 100, 1, 0, 0), dense(t, []int{2, 2}, 150.0, 1.6, 0, 0), Tol{Rtol: 0.1}, "2 of 4 elements out of tolerance; worst at [0 1] (flat 1): got 1.6, want 1"},
		{"nan is worse than any finite miss", f64([]int{3}, 0, 1, 2), dense(t, []int{3}, 1e300, 1, nan), Tol{}, "2 of 3 elements out of tolerance; worst at [2]: got NaN"},
		{"dtype", f64([]int{1}, 1), dense(t, []int{1}, float32(1)), Tol{}, "dtype: got float32, want float64"},
		{"shape", f64([]int{2, 1}, 1, 2), dense(t, []int{1, 2}, 1.0, 2.0), Tol{}, "shape: got [1 2], want [2 1]"},
		{"scalar vs [1]", f64([]int{}, 1), dense(t, []int{1}, 1.0), Tol{}, "shape: got [1], want []"},
		{"shape only", &Tensor{Dtype: tensor.Float64, Shape: []int{2}}, dense(t, []int{2}, nan, 5.0), Tol{}, ""},
		{"empty", f64([]int{0, 2}), dense(t, []int{0, 2}, []float64{}...), Tol{}, ""},
		{"float32", &Tensor{Dtype: tensor.Float32, Shape: []int{1}, Data: []float32{0.1}}, dense(t, []int{1}, float32(0.2)), DefaultTol(tensor.Float32), "got 0.2, want 0.1"},
		{"int32 exact", &Tensor{Dtype: tensor.Int32, Shape: []int{2}, Data: []int32{1, 2}}, dense(t, []int{2}, int32(1), 3), Tol{10, 10}, "1 of 2 elements differ (integers compare exactly); worst at [1]: got 3, want 2"},
		{"int64 worst", &Tensor{Dtype: tensor.Int64, Shape: []int{3}, Data: []int64{0, 0, 0}}, dense(t, []int{3}, int64(1), -7, 3), Tol{}, "3 of 3 elements differ (integers compare exactly); worst at [1]: got -7, want 0"},
		{"bool", &Tensor{Dtype: tensor.Bool, Shape: []int{2}, Data: []bool{true, false}}, dense(t, []int{2}, true, true), Tol{}, "1 of 2 elements differ; first at [1]: got true, want false"},
		{"bool match", &Tensor{Dtype: tensor.Bool, Shape: []int{}, Data: []bool{true}}, dense(t, []int{}, true), Tol{}, ""},
	} {
		got := Compare(tc.want, tc.got, tc.tol)
		if (tc.msg == "") != (got == "") || !strings.Contains(got, tc.msg) {
			t.Errorf("%s: Compare = %q, want %q", tc.name, got, tc.msg)
		}
	}
}

// TestRunRecoversPanics hands Run a case whose grad lists are inconsistent
// with its inputs (something Parse rejects), so the runner itself indexes
// out of range: the panic must come back as a failure with a stack.
func TestRunRecoversPanics(t *testing.T) {
	in := &Tensor{Name: "x", Dtype: tensor.Float64, Shape: []int{1}, Data: []float64{1}}
	c := &Case{File: "mem", Name: "broken", Op: "Identity", Inputs: []*Tensor{in}, Outputs: []*Tensor{in},
		Grad: &GradCheck{Upstream: []*Tensor{nil}}}
	res := Run(c, Options{Threads: 1})
	if res.Passed() || !strings.HasPrefix(res.Failures[0], "panic: ") || !strings.Contains(res.Stack, "golden.Run") {
		t.Fatalf("result %+v", res)
	}
}

func TestRunMalformedAndUnregistered(t *testing.T) {
	c := &Case{File: "mem", Op: "Identity", Err: errMalformed}
	if res := Run(c, Options{}); res.Passed() || res.Failures[0] != "malformed case: bad" {
		t.Errorf("malformed: %+v", res)
	}
	c = &Case{File: "mem", Op: "golden_test.Missing"}
	if res := Run(c, Options{}); res.Passed() || res.Failures[0] != `op "golden_test.Missing" is not registered` {
		t.Errorf("unregistered: %+v", res)
	}
}

type stringError string

func (e stringError) Error() string { return string(e) }

const errMalformed = stringError("bad")
