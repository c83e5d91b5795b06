package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
)

// ErrFormat is wrapped by every error about a malformed IDX file.
var ErrFormat = errors.New("malformed IDX file")

// IDXType is the element type code of an IDX file (the magic number's
// third byte).
type IDXType byte

// The IDX element types.
const (
	IDXUint8   IDXType = 0x08 // unsigned byte
	IDXInt8    IDXType = 0x09 // signed byte
	IDXInt16   IDXType = 0x0B // 2-byte big-endian integer
	IDXInt32   IDXType = 0x0C // 4-byte big-endian integer
	IDXFloat32 IDXType = 0x0D // 4-byte big-endian IEEE float
	IDXFloat64 IDXType = 0x0E // 8-byte big-endian IEEE float
)

// Size returns the element size in bytes, 0 for an unknown type.
func (t IDXType) Size() int {
	switch t {
	case IDXUint8, IDXInt8:
		return 1
	case IDXInt16:
		return 2
	case IDXInt32, IDXFloat32:
		return 4
	case IDXFloat64:
		return 8
	}
	return 0
}

// String names the type.
func (t IDXType) String() string {
	switch t {
	case IDXUint8:
		return "ubyte"
	case IDXInt8:
		return "byte"
	case IDXInt16:
		return "short"
	case IDXInt32:
		return "int"
	case IDXFloat32:
		return "float"
	case IDXFloat64:
		return "double"
	}
	return fmt.Sprintf("IDXType(%#02x)", byte(t))
}

// maxIDXBytes bounds the data an IDX header may announce (16 GiB).
const maxIDXBytes = 1 << 34

// IDX is the content of an IDX file: a type, dimensions and the elements
// as stored (big-endian, row-major).
type IDX struct {
	Type IDXType
	Dims []int
	// Data holds Len()·Type.Size() bytes.
	Data []byte
}

// Len returns the number of elements, the product of Dims.
func (x *IDX) Len() int {
	n := 1
	for _, d := range x.Dims {
		n *= d
	}
	return n
}

// Uint8s returns the elements of a ubyte file (sharing Data).
func (x *IDX) Uint8s() ([]uint8, error) {
	if x.Type != IDXUint8 {
		return nil, fmt.Errorf("IDX: elements are %v, not ubyte", x.Type)
	}
	return x.Data, nil
}

// Float64s returns the elements converted to float64 (exactly: every IDX
// type converts without rounding).
func (x *IDX) Float64s() []float64 {
	out := make([]float64, len(x.Data)/max(x.Type.Size(), 1))
	b := x.Data
	for i := range out {
		switch x.Type {
		case IDXUint8:
			out[i] = float64(b[i])
		case IDXInt8:
			out[i] = float64(int8(b[i]))
		case IDXInt16:
			out[i] = float64(int16(binary.BigEndian.Uint16(b[2*i:])))
		case IDXInt32:
			out[i] = float64(int32(binary.BigEndian.Uint32(b[4*i:])))
		case IDXFloat32:
			out[i] = float64(math.Float32frombits(binary.BigEndian.Uint32(b[4*i:])))
		case IDXFloat64:
			out[i] = math.Float64frombits(binary.BigEndian.Uint64(b[8*i:]))
		}
	}
	return out
}

// ReadIDX reads the IDX file at path, gzip-compressed or not (detected by
// the gzip magic bytes 1f 8b, not by the name). Errors name the file and
// wrap ErrFormat when the content is malformed.
func ReadIDX(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("IDX: %w", err)
	}
	defer f.Close()
	x, err := DecodeIDX(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

// DecodeIDX reads one IDX file from r, gzip-compressed or not. It checks
// the magic number (two zero bytes, a known type, at least one dimension),
// that the size the dimensions announce does not overflow, and that the
// data is exactly that long: a short file is truncated, a longer one has
// trailing bytes, both errors wrapping ErrFormat.
func DecodeIDX(r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: bad gzip stream: %v", ErrFormat, err)
		}
		defer zr.Close()
		return decodeRaw(zr, true)
	}
	return decodeRaw(br, false)
}

func decodeRaw(r io.Reader, gz bool) (*IDX, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)
	}
	readErr := func(what string, err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail("truncated in the %s", what)
		}
		if gz {
			return fail("bad gzip data in the %s: %v", what, err)
		}
		return fmt.Errorf("IDX: reading the %s: %w", what, err)
	}
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, readErr("magic number", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fail("bad magic number %02x %02x %02x %02x: the first two bytes must be zero", magic[0], magic[1], magic[2], magic[3])
	}
	typ := IDXType(magic[2])
	if typ.Size() == 0 {
		return nil, fail("unknown element type %#02x in the magic number (want 08, 09, 0b, 0c, 0d or 0e)", magic[2])
	}
	nd := int(magic[3])
	if nd == 0 {
		return nil, fail("the magic number announces 0 dimensions")
	}
	hdr := make([]byte, 4*nd)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, readErr(fmt.Sprintf("%d dimension sizes", nd), err)
	}
	dims := make([]int, nd)
	total := uint64(typ.Size())
	for i := range dims {
		d := binary.BigEndian.Uint32(hdr[4*i:])
		dims[i] = int(d)
		hi, lo := bits.Mul64(total, uint64(d))
		if hi != 0 || lo > maxIDXBytes {
			return nil, fail("dimensions %v of %v elements overflow the size limit of %d bytes", readDims(hdr), typ, uint64(maxIDXBytes))
		}
		total = lo
	}
	// Read exactly total bytes, growing the buffer as data arrives (a
	// header announcing gigabytes does not allocate them up front).
	data := make([]byte, 0, min(total, 1<<24))
	for uint64(len(data)) < total {
		if len(data) == cap(data) {
			data = slices.Grow(data, int(min(total-uint64(len(data)), uint64(cap(data)))))
		}
		n, err := r.Read(data[len(data):min(cap(data), int(total))])
		data = data[:len(data)+n]
		if err != nil && uint64(len(data)) < total {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fail("truncated: dimensions %v of %v need %d data bytes, the file holds %d", dims, typ, total, len(data))
			}
			return nil, readErr("data", err)
		}
	}
	// Nothing may follow (reading on also makes gzip verify its checksum).
	var extra [1]byte
	for {
		n, err := r.Read(extra[:])
		if n > 0 {
			k, _ := io.Copy(io.Discard, r)
			return nil, fail("%d trailing bytes after the %d data bytes of dimensions %v", int64(n)+k, total, dims)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, readErr("end of the file", err)
		}
	}
	return &IDX{Type: typ, Dims: dims, Data: data}, nil
}

func readDims(hdr []byte) []uint32 {
	d := make([]uint32, len(hdr)/4)
	for i := range d {
		d[i] = binary.BigEndian.Uint32(hdr[4*i:])
	}
	return d
}
