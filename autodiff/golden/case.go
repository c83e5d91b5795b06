package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Tensor is one TENSOR of a case file.
type Tensor struct {
	// Name is the tensor's name in the file ("" if it has none).
	Name string
	// Dtype is float32, float64, int32, int64 or bool.
	Dtype tensor.Dtype
	// Shape is the tensor's shape; [] for a scalar.
	Shape []int
	// Data holds the row-major elements as []float32, []float64, []int32,
	// []int64 or []bool, or nil where the file has "data": null (only dtype
	// and shape are checked).
	Data any
}

// HasData reports whether the tensor carries elements (data not null).
func (t *Tensor) HasData() bool { return t.Data != nil }

// Dense returns a tensor holding t's data. The tensor shares t's slice, so
// it must not be modified (the tape copies what it is given).
func (t *Tensor) Dense() (*tensor.Dense, error) {
	switch d := t.Data.(type) {
	case []float32:
		return tensorx.New(t.Shape, d)
	case []float64:
		return tensorx.New(t.Shape, d)
	case []int32:
		return tensorx.New(t.Shape, d)
	case []int64:
		return tensorx.New(t.Shape, d)
	case []bool:
		return tensorx.New(t.Shape, d)
	case nil:
		return nil, fmt.Errorf("tensor %q has no data", t.Name)
	}
	return nil, fmt.Errorf("tensor %q holds %T", t.Name, t.Data)
}

// IsFloat reports whether the tensor's dtype is float32 or float64.
func (t *Tensor) IsFloat() bool { return isFloat(t.Dtype) }

func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// GradCheck is the "grad" object of a case.
type GradCheck struct {
	// Upstream has one entry per output: the gradient flowing into it, nil
	// for none (zeros).
	Upstream []*Tensor
	// Expected has one entry per input: the expected gradient with respect
	// to it, nil where it is not checked.
	Expected []*Tensor
}

// Case is one decoded golden case.
type Case struct {
	// File is the path of the case file and Index the case's position in
	// its "cases" list (from 0).
	File  string
	Index int
	// Name is the case's name ("" if it has none).
	Name string
	// Op is the TensorFlow op type.
	Op string
	// Attrs are the op's attributes as decoded from JSON (numbers are
	// float64), ready for OpDef.ParseAttrs; nil if the case has none.
	Attrs map[string]any
	// Inputs and Outputs are the op's inputs and expected outputs in
	// TensorFlow's order; Outputs is empty for error cases.
	Inputs, Outputs []*Tensor
	// Grad is the gradient check, or nil.
	Grad *GradCheck
	// WantError is set for error cases; Error is the advisory substring of
	// the expected error message.
	WantError bool
	Error     string
	// Rtol and Atol are the case's tolerances, nil where the case gives
	// none (DefaultTol applies).
	Rtol, Atol *float64
	// Err is set when the case is malformed: it cannot be run and counts
	// as a failure. The other fields may be partly filled.
	Err error
	// Warnings are non-fatal remarks about the case file (unknown keys).
	Warnings []string
}

// String identifies the case in reports: file, index, name and op.
func (c *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d", c.File, c.Index)
	if c.Name != "" {
		fmt.Fprintf(&b, " %q", c.Name)
	}
	if c.Op != "" {
		fmt.Fprintf(&b, " (%s)", c.Op)
	}
	return b.String()
}

// Tol returns the tolerance of the case for a float tensor of dtype dt:
// the case's rtol and atol, each replaced by DefaultTol(dt)'s where the
// case gives none.
func (c *Case) Tol(dt tensor.Dtype) Tol {
	t := DefaultTol(dt)
	if c.Rtol != nil {
		t.Rtol = *c.Rtol
	}
	if c.Atol != nil {
		t.Atol = *c.Atol
	}
	return t
}

// FileError is a problem with a whole case file (unreadable, not JSON, no
// "cases" list); none of its cases can be run.
type FileError struct {
	File string
	Err  error
}

// Error returns the file name and the problem.
func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// ReadFile reads and parses a case file. A *FileError means no case could
// be read; otherwise every case is returned, malformed ones with Err set.
func ReadFile(path string) ([]*Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	return Parse(path, b)
}

// Parse parses the contents of a case file; path is used in messages.
func Parse(path string, data []byte) ([]*Case, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &FileError{File: path, Err: jsonError(data, err)}
	}
	if top == nil {
		return nil, &FileError{File: path, Err: errors.New(`want an object {"cases": [...]}, got null`)}
	}
	raw, ok := top["cases"]
	if !ok {
		return nil, &FileError{File: path, Err: errors.New(`no "cases" list (want an object {"cases": [...]})`)}
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || isNull(raw) {
		return nil, &FileError{File: path, Err: fmt.Errorf(`"cases" must be a list, got %s`, kindOf(raw))}
	}
	cases := make([]*Case, len(list))
	for i, r := range list {
		c := &Case{File: path, Index: i}
		if err := c.parse(r); err != nil {
			c.Err = err
		}
		cases[i] = c
	}
	return cases, nil
}

// jsonError describes a failure to decode a case file: the line and column
// of a syntax error, or the kind of value found instead of an object.
func jsonError(data []byte, err error) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New(`the file is empty (want an object {"cases": [...]})`)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf(`want an object {"cases": [...]}, got %s`, te.Value)
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	pos := min(max(se.Offset-1, 0), int64(len(data))) // the offending byte
	line := 1 + bytes.Count(data[:pos], []byte("\n"))
	col := pos - int64(bytes.LastIndexByte(data[:pos], '\n'))
	return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, err)
}

var knownCaseKeys = map[string]bool{
	"name": true, "op": true, "attrs": true, "inputs": true, "outputs": true,
	"grad": true, "error": true, "rtol": true, "atol": true,
}

func (c *Case) parse(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return fmt.Errorf("a case must be a JSON object, got %s", kindOf(raw))
	}
	if r, ok := m["name"]; ok && !isNull(r) {
		if err := json.Unmarshal(r, &c.Name); err != nil {
			return fmt.Errorf("name must be a string, got %s", kindOf(r))
		}
	}
	var unknown []string
	for k := range m {
		if !knownCaseKeys[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		c.Warnings = append(c.Warnings, fmt.Sprintf("unknown key %q ignored", k))
	}

	r, ok := m["op"]
	if !ok || isNull(r) {
		return errors.New(`missing "op"`)
	}
	if err := json.Unmarshal(r, &c.Op); err != nil {
		return fmt.Errorf("op must be a string, got %s", kindOf(r))
	}
	if c.Op == "" {
		return errors.New(`"op" is empty`)
	}

	if r, ok := m["attrs"]; ok && !isNull(r) {
		if err := json.Unmarshal(r, &c.Attrs); err != nil {
			return fmt.Errorf("attrs must be an object, got %s", kindOf(r))
		}
	}

	if r, ok := m["error"]; ok && !isNull(r) {
		if err := json.Unmarshal(r, &c.Error); err != nil {
			return fmt.Errorf("error must be a string, got %s", kindOf(r))
		}
		c.WantError = true
	}

	var err error
	for _, k := range []string{"rtol", "atol"} {
		r, ok := m[k]
		if !ok || isNull(r) {
			continue
		}
		var v float64
		if json.Unmarshal(r, &v) != nil || v < 0 || math.IsInf(v, 0) {
			return fmt.Errorf("%s must be a finite number >= 0, got %s", k, r)
		}
		if k == "rtol" {
			c.Rtol = &v
		} else {
			c.Atol = &v
		}
	}

	r, ok = m["inputs"]
	if !ok || isNull(r) {
		return errors.New(`missing "inputs" (use [] for an op without inputs)`)
	}
	if c.Inputs, err = parseTensorList(r, "inputs", false, false); err != nil {
		return err
	}

	ro, hasOut := m["outputs"]
	hasOut = hasOut && !isNull(ro)
	rg, hasGrad := m["grad"]
	hasGrad = hasGrad && !isNull(rg)
	if c.WantError {
		if hasOut {
			return errors.New(`an error case must not list "outputs"`)
		}
		if hasGrad {
			return errors.New(`an error case must not have "grad"`)
		}
		return nil
	}
	if !hasOut {
		return errors.New(`missing "outputs" (or "error" for a case the op must refuse)`)
	}
	if c.Outputs, err = parseTensorList(ro, "outputs", false, true); err != nil {
		return err
	}
	if hasGrad {
		if c.Grad, err = c.parseGrad(rg); err != nil {
			return err
		}
	}
	return nil
}

func (c *Case) parseGrad(raw json.RawMessage) (*GradCheck, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("grad must be an object, got %s", kindOf(raw))
	}
	for k := range m {
		if k != "upstream" && k != "expected" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("unknown key %q in grad ignored", k))
		}
	}
	g := &GradCheck{}
	var err error
	r, ok := m["upstream"]
	if !ok || isNull(r) {
		return nil, errors.New(`grad: missing "upstream"`)
	}
	if g.Upstream, err = parseTensorList(r, "grad.upstream", true, false); err != nil {
		return nil, err
	}
	r, ok = m["expected"]
	if !ok || isNull(r) {
		return nil, errors.New(`grad: missing "expected"`)
	}
	if g.Expected, err = parseTensorList(r, "grad.expected", true, true); err != nil {
		return nil, err
	}
	if len(g.Upstream) != len(c.Outputs) {
		return nil, fmt.Errorf("grad.upstream has %d entries for %s", len(g.Upstream), plural(len(c.Outputs), "output"))
	}
	if len(g.Expected) != len(c.Inputs) {
		return nil, fmt.Errorf("grad.expected has %d entries for %s", len(g.Expected), plural(len(c.Inputs), "input"))
	}
	for i, u := range g.Upstream {
		if u == nil {
			continue
		}
		o := c.Outputs[i]
		if u.Dtype != o.Dtype || !tensorx.SameShape(u.Shape, o.Shape) {
			return nil, fmt.Errorf("grad.upstream[%d] is %v %v but output %d is %v %v", i, u.Dtype, u.Shape, i, o.Dtype, o.Shape)
		}
	}
	for j, e := range g.Expected {
		if e == nil {
			continue
		}
		in := c.Inputs[j]
		if !in.IsFloat() {
			return nil, fmt.Errorf("grad.expected[%d] must be null: input %d is %v, and integer and bool inputs are not differentiable", j, j, in.Dtype)
		}
		if e.Dtype != in.Dtype || !tensorx.SameShape(e.Shape, in.Shape) {
			return nil, fmt.Errorf("grad.expected[%d] is %v %v but input %d is %v %v", j, e.Dtype, e.Shape, j, in.Dtype, in.Shape)
		}
	}
	return g, nil
}

// parseTensorList parses a JSON list of TENSORs. nullEntry allows null
// entries (grad lists); nullData allows "data": null.
func parseTensorList(raw json.RawMessage, what string, nullEntry, nullData bool) ([]*Tensor, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || isNull(raw) {
		return nil, fmt.Errorf("%s must be a list, got %s", what, kindOf(raw))
	}
	out := make([]*Tensor, len(list))
	for i, r := range list {
		where := fmt.Sprintf("%s[%d]", what, i)
		if isNull(r) {
			if !nullEntry {
				return nil, fmt.Errorf("%s is null", where)
			}
			continue
		}
		t, err := parseTensor(r, nullData)
		if err != nil {
			if t != nil && t.Name != "" {
				where += fmt.Sprintf(" %q", t.Name)
			}
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		out[i] = t
	}
	return out, nil
}

// parseTensor parses one TENSOR. On error the returned tensor (if any)
// carries the name, for messages.
func parseTensor(raw json.RawMessage, nullData bool) (*Tensor, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("a tensor must be an object, got %s", kindOf(raw))
	}
	t := &Tensor{}
	if r, ok := m["name"]; ok && !isNull(r) {
		if err := json.Unmarshal(r, &t.Name); err != nil {
			return t, fmt.Errorf("name must be a string, got %s", kindOf(r))
		}
	}
	r, ok := m["dtype"]
	if !ok || isNull(r) {
		return t, errors.New(`missing "dtype"`)
	}
	var ds string
	if err := json.Unmarshal(r, &ds); err != nil {
		return t, fmt.Errorf("dtype must be a string, got %s", kindOf(r))
	}
	dt, err := registry.ParseDtype(ds)
	if err != nil {
		return t, fmt.Errorf("dtype %q is not one of float32, float64, int32, int64, bool", ds)
	}
	t.Dtype = dt

	r, ok = m["shape"]
	if !ok || isNull(r) {
		return t, errors.New(`missing "shape" (use [] for a scalar)`)
	}
	shapeElems, err := decodeList(r)
	if err != nil {
		return t, fmt.Errorf("shape must be a list of integers, got %s", kindOf(r))
	}
	t.Shape = make([]int, len(shapeElems))
	for i, e := range shapeElems {
		v, err := parseInt(e, 64)
		if err != nil || v < 0 || v > math.MaxInt32 {
			return t, fmt.Errorf("shape %s: dimension %d is not an integer >= 0", compact(r), i)
		}
		t.Shape[i] = int(v)
	}
	n, err := tensorx.Numel(t.Shape)
	if err != nil {
		return t, err
	}

	r, ok = m["data"]
	if !ok {
		return t, errors.New(`missing "data" (null checks only dtype and shape, where allowed)`)
	}
	if isNull(r) {
		if !nullData {
			return t, errors.New(`data is null; only outputs and expected gradients may omit their data`)
		}
		return t, nil
	}
	elems, err := decodeList(r)
	if err != nil {
		return t, fmt.Errorf("data must be a list, got %s", kindOf(r))
	}
	if len(elems) != n {
		return t, fmt.Errorf("data has %d elements but shape %v needs %d", len(elems), t.Shape, n)
	}
	if t.Data, err = convertData(dt, elems); err != nil {
		return t, err
	}
	return t, nil
}

func convertData(dt tensor.Dtype, elems []any) (any, error) {
	bad := func(i int, err error) error { return fmt.Errorf("data[%d]: %v", i, err) }
	switch dt {
	case tensor.Float32:
		out := make([]float32, len(elems))
		for i, e := range elems {
			v, err := parseFloat(e, 32)
			if err != nil {
				return nil, bad(i, err)
			}
			out[i] = float32(v)
		}
		return out, nil
	case tensor.Float64:
		out := make([]float64, len(elems))
		for i, e := range elems {
			v, err := parseFloat(e, 64)
			if err != nil {
				return nil, bad(i, err)
			}
			out[i] = v
		}
		return out, nil
	case tensor.Int32:
		out := make([]int32, len(elems))
		for i, e := range elems {
			v, err := parseInt(e, 32)
			if err != nil {
				return nil, bad(i, err)
			}
			out[i] = int32(v)
		}
		return out, nil
	case tensor.Int64:
		out := make([]int64, len(elems))
		for i, e := range elems {
			v, err := parseInt(e, 64)
			if err != nil {
				return nil, bad(i, err)
			}
			out[i] = v
		}
		return out, nil
	case tensor.Bool:
		out := make([]bool, len(elems))
		for i, e := range elems {
			v, ok := e.(bool)
			if !ok {
				return nil, bad(i, fmt.Errorf("want true or false, got %s", describe(e)))
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported dtype %v", dt)
}

// parseFloat converts a JSON element to a float of the given bit size:
// a number, or one of the strings "NaN", "Inf", "-Inf".
func parseFloat(e any, bits int) (float64, error) {
	switch v := e.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), bits)
		if err != nil {
			return 0, fmt.Errorf("%s is out of the float%d range", v, bits)
		}
		return f, nil
	case string:
		switch v {
		case "NaN", "nan":
			return math.NaN(), nil
		case "Inf", "+Inf", "inf", "Infinity":
			return math.Inf(1), nil
		case "-Inf", "-inf", "-Infinity":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf(`string %q is not a number (non-finite values are "NaN", "Inf", "-Inf")`, v)
	}
	return 0, fmt.Errorf("want a number, got %s", describe(e))
}

// parseInt converts a JSON number with an integral value to an integer
// that fits in bits bits.
func parseInt(e any, bits int) (int64, error) {
	n, ok := e.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want an integer, got %s", describe(e))
	}
	if v, err := strconv.ParseInt(string(n), 10, bits); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want an integer, got %s", n)
	}
	if lim := math.Ldexp(1, bits-1); f < -lim || f >= lim {
		return 0, fmt.Errorf("%s overflows int%d", n, bits)
	}
	return int64(f), nil
}

// decodeList decodes a JSON list keeping numbers as json.Number, so
// integers keep every digit and floats are rounded once, to their dtype.
func decodeList(raw json.RawMessage) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list")
	}
	return l, nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// kindOf names the JSON kind of raw, for messages.
func kindOf(raw json.RawMessage) string {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string " + compact(raw)
	case 't', 'f':
		return "a bool"
	case 'n':
		return "null"
	}
	return "the number " + compact(raw)
}

// describe names a decoded JSON element, for messages.
func describe(e any) string {
	switch v := e.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the bool %v", v)
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + string(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", e)
}

// compact shortens a raw JSON value for messages.
func compact(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
