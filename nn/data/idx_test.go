package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes builds an IDX file by hand: magic 00 00 type ndims, big-endian
// uint32 dimensions, then the data.
func idxBytes(typ byte, dims []uint32, data []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, data...)
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadIDXRoundTrip(t *testing.T) {
	be16 := func(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	cases := []struct {
		name string
		typ  byte
		dims []uint32
		data []byte
		want []float64
	}{
		{"ubyte matrix", 0x08, []uint32{2, 3}, []byte{0, 1, 2, 128, 254, 255}, []float64{0, 1, 2, 128, 254, 255}},
		{"byte vector", 0x09, []uint32{3}, []byte{0x80, 0xff, 0x7f}, []float64{-128, -1, 127}},
		{"short", 0x0B, []uint32{2}, append(be16(-300), be16(32767)...), []float64{-300, 32767}},
		{"int", 0x0C, []uint32{1, 2}, append(be32(0xffffffff), be32(70000)...), []float64{-1, 70000}},
		{"float", 0x0D, []uint32{2}, append(be32(math.Float32bits(1.5)), be32(math.Float32bits(-0.25))...), []float64{1.5, -0.25}},
		{"double", 0x0E, []uint32{1}, binary.BigEndian.AppendUint64(nil, math.Float64bits(math.Pi)), []float64{math.Pi}},
		{"empty", 0x08, []uint32{0, 28, 28}, nil, []float64{}},
		{"rank 4", 0x08, []uint32{1, 2, 1, 2}, []byte{9, 8, 7, 6}, []float64{9, 8, 7, 6}},
	}
	dir := t.TempDir()
	for _, c := range cases {
		raw := idxBytes(c.typ, c.dims, c.data)
		for _, compressed := range []bool{false, true} {
			b := raw
			if compressed {
				b = gz(t, raw)
			}
			p := writeFile(t, dir, "f", b)
			x, err := ReadIDX(p)
			if err != nil {
				t.Fatalf("%s (gzip %v): %v", c.name, compressed, err)
			}
			if byte(x.Type) != c.typ || len(x.Dims) != len(c.dims) || x.Len() != len(c.want) {
				t.Fatalf("%s: type %v dims %v", c.name, x.Type, x.Dims)
			}
			for i, d := range c.dims {
				if x.Dims[i] != int(d) {
					t.Errorf("%s: dims %v, want %v", c.name, x.Dims, c.dims)
				}
			}
			got := x.Float64s()
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Errorf("%s: element %d = %v, want %v", c.name, i, got[i], c.want[i])
				}
			}
			u, err := x.Uint8s()
			if (c.typ == 0x08) != (err == nil) {
				t.Errorf("%s: Uint8s error %v", c.name, err)
			}
			if err == nil && !bytes.Equal(u, c.data) {
				t.Errorf("%s: Uint8s %v", c.name, u)
			}
		}
	}
}

func TestReadIDXMalformed(t *testing.T) {
	ok := idxBytes(0x08, []uint32{2, 2}, []byte{1, 2, 3, 4})
	corrupt := gz(t, ok)
	corrupt[len(corrupt)-6] ^= 0xff // CRC-32 of the gzip trailer
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty file", nil, "truncated in the magic number"},
		{"short magic", []byte{0, 0, 8}, "truncated in the magic number"},
		{"bad magic", append([]byte{1, 0}, ok[2:]...), "bad magic number 01 00 08 02"},
		{"text file", []byte("hello world"), "bad magic number"},
		{"unknown type", idxBytes(0x0A, []uint32{1}, []byte{1}), "unknown element type 0x0a"},
		{"zero dims", []byte{0, 0, 8, 0, 1}, "0 dimensions"},
		{"truncated dims", ok[:9], "truncated in the 2 dimension sizes"},
		{"truncated data", ok[:14], "truncated: dimensions [2 2] of ubyte need 4 data bytes, the file holds 2"},
		{"no data", ok[:12], "the file holds 0"},
		{"trailing bytes", append(append([]byte{}, ok...), 0, 0, 0), "3 trailing bytes"},
		{"overflow", idxBytes(0x0E, []uint32{0xffffffff, 0xffffffff, 0xffffffff}, nil), "overflow the size limit"},
		{"too large", idxBytes(0x08, []uint32{1 << 20, 1 << 20}, []byte{1}), "overflow the size limit"},
		{"huge but short", idxBytes(0x08, []uint32{60000, 1 << 16}, []byte{1, 2}), "need 3932160000 data bytes, the file holds 2"},
		{"gzip truncated data", gz(t, ok[:14]), "truncated: dimensions [2 2]"},
		{"gzip trailing bytes", gz(t, append(append([]byte{}, ok...), 7)), "1 trailing bytes"},
		{"gzip stream cut", gz(t, ok)[:20], "truncated"},
		{"gzip bad checksum", corrupt, "bad gzip data"},
		{"gzip bad header", []byte{0x1f, 0x8b, 0x99, 0, 0}, "bad gzip stream"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := writeFile(t, dir, "bad.idx", c.b)
		_, err := ReadIDX(p)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v does not wrap ErrFormat", c.name, err)
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not contain %q and the path", c.name, err, c.want)
		}
	}
	if _, err := ReadIDX(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
