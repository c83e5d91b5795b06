package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Info describes one tensor of a file's header.
type Info struct {
	// Name is the tensor's name.
	Name string
	// Dtype is the safetensors dtype name ("F32", "I64", ...).
	Dtype string
	// Shape is the tensor's shape ([] for a scalar).
	Shape []int
	// Begin and End are the byte range of the data in the buffer.
	Begin, End uint64

	dims []uint64 // the shape as read
}

// Header is the parsed and validated header of a file.
type Header struct {
	// Tensors are ordered by their data offsets.
	Tensors []Info
	// Metadata is the "__metadata__" map, nil if the file has none.
	Metadata map[string]string
	// DataStart is the file offset of the byte buffer (8 + header length).
	DataStart int64
}

// ReadFile reads and validates the safetensors file at path.
func ReadFile(path string) (map[string]*tensor.Dense, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	ts, md, err := Unmarshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return ts, md, nil
}

// Read reads a whole safetensors stream from r and decodes it.
func Read(r io.Reader) (map[string]*tensor.Dense, map[string]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	return Unmarshal(b)
}

// Unmarshal validates the safetensors encoding b and returns its tensors
// (fresh, contiguous, not aliasing b) and its metadata (nil if absent).
func Unmarshal(b []byte) (map[string]*tensor.Dense, map[string]string, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, nil, err
	}
	data := b[h.DataStart:]
	// Refuse tensors tapegrad cannot hold only once the whole file is known
	// to be well-formed, so format errors take precedence.
	for _, ti := range h.Tensors {
		if !dtypes[ti.Dtype].known {
			return nil, nil, unsupportedErr("tensor %q has dtype %s; tapegrad reads F32, F64, I32, I64 and BOOL", ti.Name, ti.Dtype)
		}
	}
	out := make(map[string]*tensor.Dense, len(h.Tensors))
	for _, ti := range h.Tensors {
		t, err := decodeTensor(ti, data[ti.Begin:ti.End])
		if err != nil {
			return nil, nil, err
		}
		out[ti.Name] = t
	}
	return out, h.Metadata, nil
}

func decodeTensor(ti Info, raw []byte) (*tensor.Dense, error) {
	var t *tensor.Dense
	var err error
	switch ti.Dtype {
	case "F32":
		s := make([]float32, len(raw)/4)
		for i := range s {
			s[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		t, err = tensorx.New(ti.Shape, s)
	case "F64":
		s := make([]float64, len(raw)/8)
		for i := range s {
			s[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		t, err = tensorx.New(ti.Shape, s)
	case "I32":
		s := make([]int32, len(raw)/4)
		for i := range s {
			s[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		t, err = tensorx.New(ti.Shape, s)
	case "I64":
		s := make([]int64, len(raw)/8)
		for i := range s {
			s[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		t, err = tensorx.New(ti.Shape, s)
	case "BOOL":
		s := make([]bool, len(raw))
		for i, c := range raw {
			if c > 1 {
				return nil, formatErr("tensor %q: BOOL element %d is byte %d, want 0 or 1", ti.Name, i, c)
			}
			s[i] = c == 1
		}
		t, err = tensorx.New(ti.Shape, s)
	default:
		return nil, unsupportedErr("tensor %q has dtype %s", ti.Name, ti.Dtype)
	}
	if err != nil {
		return nil, unsupportedErr("tensor %q: %v", ti.Name, err)
	}
	return t, nil
}

// ParseHeader validates the whole layout of the safetensors encoding b (the
// header and how the tensors tile the byte buffer) without decoding data.
// Dtypes that are valid in the format but that tapegrad does not read are
// accepted here.
func ParseHeader(b []byte) (*Header, error) {
	if len(b) < 8 {
		return nil, formatErr("file of %d bytes is shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderSize {
		return nil, formatErr("header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, formatErr("header length %d exceeds the %d bytes after the length field", n, len(b)-8)
	}
	hb := b[8 : 8+n]
	if !utf8.Valid(hb) {
		return nil, formatErr("header is not valid UTF-8")
	}
	infos, md, err := parseJSON(hb)
	if err != nil {
		return nil, err
	}
	dataLen := uint64(len(b)) - 8 - n
	if err := checkLayout(infos, dataLen); err != nil {
		return nil, err
	}
	for i := range infos {
		ti := &infos[i]
		if len(ti.dims) > tensorx.MaxRank {
			return nil, unsupportedErr("tensor %q: rank %d exceeds tapegrad's maximum %d", ti.Name, len(ti.dims), tensorx.MaxRank)
		}
		ti.Shape = make([]int, len(ti.dims))
		for j, d := range ti.dims {
			if d > math.MaxInt32*64 {
				return nil, unsupportedErr("tensor %q: dimension %d of size %d is too large", ti.Name, j, d)
			}
			ti.Shape[j] = int(d)
		}
	}
	return &Header{Tensors: infos, Metadata: md, DataStart: int64(8 + n)}, nil
}

// checkLayout checks every tensor's byte length against its dtype and shape
// and that the ranges tile [0, dataLen) exactly; it sorts infos by offset.
func checkLayout(infos []Info, dataLen uint64) error {
	for _, ti := range infos {
		dt, ok := dtypes[ti.Dtype]
		if !ok {
			return unsupportedErr("tensor %q has unknown dtype %q", ti.Name, ti.Dtype)
		}
		if ti.End < ti.Begin {
			return formatErr("tensor %q: data_offsets [%d, %d] end before they begin", ti.Name, ti.Begin, ti.End)
		}
		numel := uint64(1)
		for _, d := range ti.dims {
			hi, lo := bits.Mul64(numel, uint64(d))
			if hi != 0 {
				return formatErr("tensor %q: the element count of shape %v overflows", ti.Name, ti.dims)
			}
			numel = lo
		}
		hi, nbytes := bits.Mul64(numel, uint64(dt.size))
		if hi != 0 {
			return formatErr("tensor %q: the byte size of shape %v overflows", ti.Name, ti.dims)
		}
		if got := ti.End - ti.Begin; got != nbytes {
			return formatErr("tensor %q: data_offsets [%d, %d] hold %d bytes, but %s%v needs %d", ti.Name, ti.Begin, ti.End, got, ti.Dtype, ti.dims, nbytes)
		}
	}
	slices.SortStableFunc(infos, func(a, b Info) int {
		if a.Begin != b.Begin {
			if a.Begin < b.Begin {
				return -1
			}
			return 1
		}
		if a.End != b.End {
			if a.End < b.End {
				return -1
			}
			return 1
		}
		return 0
	})
	var pos uint64
	for _, ti := range infos {
		switch {
		case ti.Begin > pos:
			return formatErr("tensor %q: data_offsets begin at %d, leaving bytes [%d, %d) of the buffer unused", ti.Name, ti.Begin, pos, ti.Begin)
		case ti.Begin < pos:
			return formatErr("tensor %q: data_offsets [%d, %d] overlap the previous tensor, which ends at %d", ti.Name, ti.Begin, ti.End, pos)
		}
		pos = ti.End
	}
	if pos != dataLen {
		if pos > dataLen {
			return formatErr("tensor data ends at byte %d of the buffer, but the file holds only %d bytes after the header (truncated file?)", pos, dataLen)
		}
		return formatErr("%d trailing bytes after the last tensor's data", dataLen-pos)
	}
	return nil
}

// parseJSON parses the header object strictly: no duplicate keys, no
// unknown fields, integer shapes and offsets, nothing after the object but
// whitespace.
func parseJSON(hb []byte) ([]Info, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(hb))
	dec.UseNumber()
	if err := expectDelim(dec, '{', "header"); err != nil {
		return nil, nil, err
	}
	var infos []Info
	var md map[string]string
	seen := make(map[string]bool)
	for dec.More() {
		key, err := stringToken(dec, "header key")
		if err != nil {
			return nil, nil, err
		}
		if seen[key] {
			return nil, nil, formatErr("header has duplicate key %q", key)
		}
		seen[key] = true
		if key == MetadataKey {
			if md, err = parseMetadata(dec); err != nil {
				return nil, nil, err
			}
			continue
		}
		ti, err := parseInfo(dec, key)
		if err != nil {
			return nil, nil, err
		}
		infos = append(infos, ti)
	}
	if err := expectDelim(dec, '}', "header"); err != nil {
		return nil, nil, err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, formatErr("header has invalid data after its JSON object: %v", err)
		}
		return nil, nil, formatErr("header has data after its JSON object: %v", tok)
	}
	return infos, md, nil
}

func jsonErr(what string, err error) error {
	if err == io.EOF {
		return formatErr("header JSON ends early in %s", what)
	}
	return formatErr("header is not valid JSON (in %s): %v", what, err)
}

func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonErr(what, err)
	}
	if tok != d {
		return formatErr("%s: want %q, got %v", what, d, describe(tok))
	}
	return nil
}

func stringToken(dec *json.Decoder, what string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", jsonErr(what, err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", formatErr("%s: want a string, got %v", what, describe(tok))
	}
	return s, nil
}

// describe renders a JSON token for an error message.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return strconv.Quote(v.String())
	case string:
		return "string " + strconv.Quote(v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(tok)
}

func parseMetadata(dec *json.Decoder) (map[string]string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonErr(MetadataKey, err)
	}
	if tok == nil { // "__metadata__": null is accepted as no metadata
		return nil, nil
	}
	if tok != json.Delim('{') {
		return nil, formatErr("%s must be an object of strings, got %v", MetadataKey, describe(tok))
	}
	md := make(map[string]string)
	for dec.More() {
		k, err := stringToken(dec, MetadataKey+" key")
		if err != nil {
			return nil, err
		}
		if _, dup := md[k]; dup {
			return nil, formatErr("%s has duplicate key %q", MetadataKey, k)
		}
		v, err := stringToken(dec, fmt.Sprintf("%s[%q]", MetadataKey, k))
		if err != nil {
			return nil, err
		}
		md[k] = v
	}
	if err := expectDelim(dec, '}', MetadataKey); err != nil {
		return nil, err
	}
	return md, nil
}

func parseInfo(dec *json.Decoder, name string) (Info, error) {
	ti := Info{Name: name}
	what := fmt.Sprintf("tensor %q", name)
	if err := expectDelim(dec, '{', what); err != nil {
		return ti, err
	}
	var haveDtype, haveShape, haveOffsets bool
	for dec.More() {
		field, err := stringToken(dec, what+" field name")
		if err != nil {
			return ti, err
		}
		switch field {
		case "dtype":
			if haveDtype {
				return ti, formatErr("%s: duplicate field %q", what, field)
			}
			haveDtype = true
			if ti.Dtype, err = stringToken(dec, what+" dtype"); err != nil {
				return ti, err
			}
		case "shape":
			if haveShape {
				return ti, formatErr("%s: duplicate field %q", what, field)
			}
			haveShape = true
			if ti.dims, err = uintArray(dec, what+" shape"); err != nil {
				return ti, err
			}
		case "data_offsets":
			if haveOffsets {
				return ti, formatErr("%s: duplicate field %q", what, field)
			}
			haveOffsets = true
			offs, err := uintArray(dec, what+" data_offsets")
			if err != nil {
				return ti, err
			}
			if len(offs) != 2 {
				return ti, formatErr("%s: data_offsets must hold 2 integers, got %d", what, len(offs))
			}
			ti.Begin, ti.End = offs[0], offs[1]
		default:
			return ti, formatErr("%s: unknown field %q (want dtype, shape, data_offsets)", what, field)
		}
	}
	if err := expectDelim(dec, '}', what); err != nil {
		return ti, err
	}
	switch {
	case !haveDtype:
		return ti, formatErr("%s: missing field \"dtype\"", what)
	case !haveShape:
		return ti, formatErr("%s: missing field \"shape\"", what)
	case !haveOffsets:
		return ti, formatErr("%s: missing field \"data_offsets\"", what)
	}
	return ti, nil
}

// uintArray reads a JSON array of non-negative integers (at most 64
// elements, far above any valid use).
func uintArray(dec *json.Decoder, what string) ([]uint64, error) {
	if err := expectDelim(dec, '[', what); err != nil {
		return nil, err
	}
	var out []uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonErr(what, err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, formatErr("%s: want a non-negative integer, got %v", what, describe(tok))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return nil, formatErr("%s: %s is not a non-negative 64-bit integer", what, num)
		}
		if len(out) == 64 {
			return nil, formatErr("%s: more than 64 elements", what)
		}
		out = append(out, v)
	}
	if err := expectDelim(dec, ']', what); err != nil {
		return nil, err
	}
	return out, nil
}
