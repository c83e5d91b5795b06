package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

func mustNew[T tensorx.Elem](t testing.TB, shape []int, data []T) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// file assembles a safetensors file from a header string and data bytes.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func f32bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// The byte-exact encodings below are the format's own test vectors (the
// reference implementation's serialization tests): the writer must produce
// exactly these bytes.
func TestMarshalMatchesReference(t *testing.T) {
	cases := []struct {
		name    string
		tensors map[string]*tensor.Dense
		md      map[string]string
		want    []byte
	}{
		{
			name:    "one F32 tensor, header already a multiple of 8",
			tensors: map[string]*tensor.Dense{"attn.0": mustNew(t, []int{1, 2, 3}, []float32{0, 1, 2, 3, 4, 5})},
			want:    file(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`, f32bytes(0, 1, 2, 3, 4, 5)),
		},
		{
			name:    "header padded with spaces",
			tensors: map[string]*tensor.Dense{"attn0": mustNew(t, []int{1, 1, 2, 3}, []float32{0, 1, 2, 3, 4, 5})},
			want:    file(`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `, f32bytes(0, 1, 2, 3, 4, 5)),
		},
		{
			name: "empty",
			want: file(`{}      `, nil),
		},
		{
			name: "metadata only",
			md:   map[string]string{"framework": "pt"},
			want: file(`{"__metadata__":{"framework":"pt"}}     `, nil),
		},
	}
	for _, c := range cases {
		got, err := Marshal(c.tensors, c.md)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if _, _, err := Unmarshal(got); err != nil {
			t.Errorf("%s: reading back: %v", c.name, err)
		}
	}
}

func TestLayoutOrder(t *testing.T) {
	ts := map[string]*tensor.Dense{
		"b_f32":  mustNew(t, []int{1}, []float32{1}),
		"a_f32":  mustNew(t, []int{1}, []float32{1}),
		"z_bool": mustNew(t, []int{3}, []bool{true, false, true}),
		"y_i32":  mustNew(t, []int{1}, []int32{1}),
		"x_f64":  mustNew(t, []int{1}, []float64{1}),
		"w_i64":  mustNew(t, []int{1}, []int64{1}),
	}
	b, err := Marshal(ts, map[string]string{"b": "2", "a": "1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range h.Tensors {
		names = append(names, ti.Name)
	}
	want := "w_i64 x_f64 a_f32 b_f32 y_i32 z_bool"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("buffer order %q, want %q", got, want)
	}
	if h.DataStart%8 != 0 {
		t.Errorf("data starts at %d, not 8-aligned", h.DataStart)
	}
	hdr := string(b[8:h.DataStart])
	if !strings.HasPrefix(hdr, `{"__metadata__":{"a":"1","b":"2"},"w_i64":`) {
		t.Errorf("header %q does not start with the sorted metadata then w_i64", hdr)
	}
	for _, ti := range h.Tensors {
		if ti.Begin%uint64(dtypes[ti.Dtype].size) != 0 {
			t.Errorf("%s at offset %d is not aligned", ti.Name, ti.Begin)
		}
	}
}

func sameBits(a, b *tensor.Dense) bool {
	if a.Dtype() != b.Dtype() || !tensorx.SameShape(a.Shape(), b.Shape()) {
		return false
	}
	switch a.Dtype() {
	case tensor.Float32:
		x, y := tensorx.MustSlice[float32](a), tensorx.MustSlice[float32](b)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return len(x) == len(y)
	case tensor.Float64:
		x, y := tensorx.MustSlice[float64](a), tensorx.MustSlice[float64](b)
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return len(x) == len(y)
	case tensor.Int32:
		return slicesEqual(tensorx.MustSlice[int32](a), tensorx.MustSlice[int32](b))
	case tensor.Int64:
		return slicesEqual(tensorx.MustSlice[int64](a), tensorx.MustSlice[int64](b))
	case tensor.Bool:
		return slicesEqual(tensorx.MustSlice[bool](a), tensorx.MustSlice[bool](b))
	}
	return false
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	nan := math.Float32frombits(0x7fc00123) // a NaN with a payload
	transposed := mustNew(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	if err := transposed.T(); err != nil {
		t.Fatal(err)
	}
	ts := map[string]*tensor.Dense{
		"f32":                   mustNew(t, []int{2, 2}, []float32{1.5, float32(math.Copysign(0, -1)), nan, float32(math.Inf(-1))}),
		"f64":                   mustNew(t, []int{3}, []float64{math.Pi, -1e-300, math.MaxFloat64}),
		"i32":                   mustNew(t, []int{1, 2}, []int32{math.MinInt32, math.MaxInt32}),
		"i64":                   mustNew(t, []int{2}, []int64{math.MinInt64, 42}),
		"bool":                  mustNew(t, []int{5}, []bool{true, false, false, true, true}),
		"scalar":                mustNew(t, []int{}, []float32{7}),
		"empty":                 mustNew(t, []int{0, 4}, []float32{}),
		"empty2":                mustNew(t, []int{3, 0}, []int64{}),
		"transposed":            transposed,
		"näme \"quoted\"\n\x01": mustNew(t, []int{1}, []float64{2}),
	}
	md := map[string]string{"format": "pt", "version": "1", "esc\t\"\\": "ünï\u2028"}
	b, err := Marshal(ts, md)
	if err != nil {
		t.Fatal(err)
	}
	got, gotMD, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ts) {
		t.Fatalf("read %d tensors, want %d", len(got), len(ts))
	}
	for name, want := range ts {
		w, err := tensorx.Contiguous(want)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := got[name]
		if !ok {
			t.Errorf("tensor %q missing", name)
			continue
		}
		if !sameBits(g, w) {
			t.Errorf("tensor %q: got %v %v, want %v %v", name, g.Shape(), g.Data(), w.Shape(), w.Data())
		}
	}
	if len(gotMD) != len(md) {
		t.Errorf("metadata %v, want %v", gotMD, md)
	}
	for k, v := range md {
		if gotMD[k] != v {
			t.Errorf("metadata[%q] = %q, want %q", k, gotMD[k], v)
		}
	}
	// The transposed view was written in logical (row-major) order.
	tr := tensorx.MustSlice[float64](got["transposed"])
	if want := []float64{1, 4, 2, 5, 3, 6}; !slicesEqual(tr, want) || !tensorx.SameShape(got["transposed"].Shape(), []int{3, 2}) {
		t.Errorf("transposed: %v %v, want [3 2] %v", got["transposed"].Shape(), tr, want)
	}
	// No metadata written: none read; empty metadata: an empty map.
	b, _ = Marshal(nil, nil)
	if _, m, _ := Unmarshal(b); m != nil {
		t.Errorf("nil metadata read back as %v", m)
	}
	b, _ = Marshal(nil, map[string]string{})
	if _, m, err := Unmarshal(b); err != nil || m == nil || len(m) != 0 {
		t.Errorf("empty metadata read back as %v, %v", m, err)
	}
}

func TestReadForeignLayouts(t *testing.T) {
	// Writers other than the reference may order entries freely, skip the
	// padding and omit metadata; all of it is valid.
	data := append(f32bytes(1, 2), 1, 0, 0, 0) // b: F32[2] then a: I32[1]
	hdr := ` { "a" : {"shape":[],"data_offsets":[8,12],"dtype":"I32"}, "b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}, "z": {"dtype":"F16","shape":[0],"data_offsets":[12,12]} ,"__metadata__":null}` + "\n\t "
	_, err := ParseHeader(file(hdr, data))
	if err != nil {
		t.Fatalf("valid file rejected: %v", err)
	}
	// F16 is valid in the format, but tapegrad cannot hold it.
	_, _, err = Unmarshal(file(hdr, data))
	if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"z" has dtype F16`) {
		t.Errorf("F16 tensor: got %v, want ErrUnsupported naming it", err)
	}
	hdr = strings.Replace(hdr, `"z": {"dtype":"F16","shape":[0],"data_offsets":[12,12]} ,`, "", 1)
	ts, md, err := Unmarshal(file(hdr, data))
	if err != nil {
		t.Fatal(err)
	}
	if md != nil || len(ts) != 2 || ts["a"].Int32s()[0] != 1 || ts["b"].Float32s()[1] != 2 {
		t.Errorf("got %v %v", ts, md)
	}
}

func TestReadMalformed(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	data := f32bytes(1, 2)
	huge := binary.LittleEndian.AppendUint64(nil, MaxHeaderSize+1)
	bad := func(h string) []byte { return file(h, data) }
	withLen := func(n uint64, rest string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty file", nil, "shorter than the 8-byte header length"},
		{"short length field", []byte{1, 0, 0}, "shorter than the 8-byte header length"},
		{"header too large", append(huge, "{}"...), "exceeds the limit"},
		{"length beyond file", withLen(100, "{}"), "exceeds the 2 bytes after the length field"},
		{"length near 2^64", withLen(math.MaxUint64, "{}"), "exceeds the limit"},
		{"zero-length header", withLen(0, ""), "ends early"},
		{"invalid UTF-8", bad("{\"\xff\":1}"), "not valid UTF-8"},
		{"not JSON", bad("hello"), "not valid JSON"},
		{"not an object", bad("[1,2]"), `want "{"`},
		{"truncated JSON", bad(`{"a":{"dtype":"F32"`), "ends early"},
		{"trailing JSON", bad(ok + `{}`), "data after its JSON object"},
		{"trailing garbage", bad(ok + `x`), "invalid data after its JSON object"},
		{"trailing NUL padding", bad(ok + "\x00"), "invalid data after its JSON object"},
		{"duplicate tensor", bad(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`), `duplicate key "a"`},
		{"duplicate metadata", bad(`{"__metadata__":{},"__metadata__":{},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`), "duplicate key"},
		{"duplicate metadata key", bad(`{"__metadata__":{"k":"1","k":"2"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`), `duplicate key "k"`},
		{"metadata not strings", bad(`{"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`), "want a string, got number 1"},
		{"metadata not object", bad(`{"__metadata__":"x","a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`), "must be an object of strings"},
		{"tensor not object", bad(`{"a":[1]}`), `tensor "a": want "{"`},
		{"duplicate field", bad(`{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}`), `duplicate field "dtype"`},
		{"unknown field", bad(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"offsets":[0,8]}}`), `unknown field "offsets"`},
		{"missing dtype", bad(`{"a":{"shape":[2],"data_offsets":[0,8]}}`), `missing field "dtype"`},
		{"missing shape", bad(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`), `missing field "shape"`},
		{"missing offsets", bad(`{"a":{"dtype":"F32","shape":[2]}}`), `missing field "data_offsets"`},
		{"dtype not string", bad(`{"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}`), "want a string"},
		{"shape not array", bad(`{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`), `want "["`},
		{"negative dim", bad(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`), "-2 is not a non-negative"},
		{"fractional dim", bad(`{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`), "2.0 is not a non-negative"},
		{"exponent dim", bad(`{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`), "2e0 is not a non-negative"},
		{"dim beyond uint64", bad(`{"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,8]}}`), "not a non-negative 64-bit integer"},
		{"nested dim", bad(`{"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}}`), "want a non-negative integer"},
		{"null dim", bad(`{"a":{"dtype":"F32","shape":[null],"data_offsets":[0,8]}}`), "got null"},
		{"one offset", bad(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`), "must hold 2 integers, got 1"},
		{"three offsets", bad(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`), "must hold 2 integers, got 3"},
		{"end before begin", bad(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`), "end before they begin"},
		{"size mismatch", bad(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`), "hold 8 bytes, but F32[3] needs 12"},
		{"dtype size mismatch", bad(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}`), "needs 16"},
		{"element count overflow", bad(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`), "overflows"},
		{"byte size overflow", bad(`{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}}`), "byte size of shape"},
		{"gap at start", bad(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`), "leaving bytes [0, 4)"},
		{"overlap", bad(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`), "overlap"},
		{"gap between", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, f32bytes(1, 2, 3)), "leaving bytes [4, 8)"},
		{"truncated data", file(ok, data[:6]), "truncated"},
		{"trailing bytes", file(ok, append(data, 0)), "1 trailing bytes"},
		{"bad bool", file(`{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}), "BOOL element 1 is byte 2"},
	}
	for _, c := range cases {
		_, _, err := Unmarshal(c.b)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v does not wrap ErrFormat", c.name, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
		}
	}
	// Well-formed but beyond tapegrad.
	unsup := []struct{ name, h, want string }{
		{"unknown dtype", `{"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}}`, `unknown dtype "Q7"`},
		{"rank 17", `{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}}`, "rank 17"},
		{"U8", `{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, "dtype U8"},
	}
	for _, c := range unsup {
		_, _, err := Unmarshal(bad(c.h))
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrUnsupported containing %q", c.name, err, c.want)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	u8 := tensor.New(tensor.WithShape(2), tensor.WithBacking([]uint8{1, 2}))
	f := mustNew(t, []int{1}, []float32{1})
	cases := []struct {
		name    string
		tensors map[string]*tensor.Dense
		md      map[string]string
		want    string
	}{
		{"reserved name", map[string]*tensor.Dense{MetadataKey: f}, nil, "cannot be a tensor name"},
		{"nil tensor", map[string]*tensor.Dense{"a": nil}, nil, "is nil"},
		{"uint8", map[string]*tensor.Dense{"a": u8}, nil, "cannot be stored"},
		{"bad name", map[string]*tensor.Dense{"a\xff": f}, nil, "not valid UTF-8"},
		{"bad metadata", nil, map[string]string{"k": "\xfe"}, "not valid UTF-8"},
	}
	for _, c := range cases {
		_, err := Marshal(c.tensors, c.md)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	first := map[string]*tensor.Dense{"w": mustNew(t, []int{2}, []float32{1, 2})}
	if err := WriteFile(path, first, map[string]string{"step": "1"}); err != nil {
		t.Fatal(err)
	}
	ts, md, err := ReadFile(path)
	if err != nil || md["step"] != "1" || !sameBits(ts["w"], first["w"]) {
		t.Fatalf("read back %v %v %v", ts, md, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	// A failing write leaves the previous file untouched and no temp file.
	u8 := tensor.New(tensor.WithShape(1), tensor.WithBacking([]uint8{1}))
	if err := WriteFile(path, map[string]*tensor.Dense{"w": u8}, nil); err == nil {
		t.Fatal("no error for an unsupported dtype")
	}
	// Overwrite with new content.
	second := map[string]*tensor.Dense{"w": mustNew(t, []int{3}, []float64{3, 4, 5})}
	if err := WriteFile(path, second, nil); err != nil {
		t.Fatal(err)
	}
	ts, md, err = ReadFile(path)
	if err != nil || md != nil || !sameBits(ts["w"], second["w"]) {
		t.Fatalf("after overwrite: %v %v %v", ts, md, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "ckpt.safetensors" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only ckpt.safetensors", names)
	}
	// A missing directory is an error, not a panic.
	if err := WriteFile(filepath.Join(dir, "nope", "x.safetensors"), second, nil); err == nil {
		t.Error("no error writing into a missing directory")
	}
	if _, _, err := ReadFile(filepath.Join(dir, "missing.safetensors")); err == nil {
		t.Error("no error reading a missing file")
	}
	// A corrupted file names the file in the error.
	if err := os.WriteFile(path, []byte("garbage!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(path); err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt file: %v", err)
	}
}

func TestRead(t *testing.T) {
	b, err := Marshal(map[string]*tensor.Dense{"x": mustNew(t, []int{1}, []int32{9})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := Read(bytes.NewReader(b))
	if err != nil || ts["x"].Int32s()[0] != 9 {
		t.Fatalf("%v %v", ts, err)
	}
	// The decoded tensors do not alias the input.
	ts, _, _ = Unmarshal(b)
	b[len(b)-1] = 0x7f
	if ts["x"].Int32s()[0] != 9 {
		t.Error("decoded tensor aliases the input bytes")
	}
}
