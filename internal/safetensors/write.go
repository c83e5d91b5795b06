package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// entry is one tensor ready to be written.
type entry struct {
	name  string
	dtype string
	info  dtypeInfo
	t     *tensor.Dense // contiguous
	shape []int
	bytes int64
}

// prepare validates the input and builds the padded header and the tensors
// in buffer order.
func prepare(tensors map[string]*tensor.Dense, metadata map[string]string) ([]byte, []entry, error) {
	entries := make([]entry, 0, len(tensors))
	for name, t := range tensors {
		if name == MetadataKey {
			return nil, nil, fmt.Errorf("safetensors: %q cannot be a tensor name", MetadataKey)
		}
		if !utf8.ValidString(name) {
			return nil, nil, fmt.Errorf("safetensors: tensor name %q is not valid UTF-8", name)
		}
		if t == nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q is nil", name)
		}
		dname, ok := dtypeName(t.Dtype())
		if !ok {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: dtype %v cannot be stored", name, t.Dtype())
		}
		c, err := tensorx.Contiguous(t)
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		info := dtypes[dname]
		shape := tensorx.Shape(c)
		entries = append(entries, entry{
			name: name, dtype: dname, info: info, t: c, shape: shape,
			bytes: int64(tensorx.Len(c)) * int64(info.size),
		})
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, nil, fmt.Errorf("safetensors: metadata entry %q: %q is not valid UTF-8", k, v)
		}
	}
	// The reference writer's order: descending alignment, then name.
	slices.SortFunc(entries, func(a, b entry) int {
		if a.info.rank != b.info.rank {
			return b.info.rank - a.info.rank
		}
		return strings.Compare(a.name, b.name)
	})

	var h bytes.Buffer
	h.WriteByte('{')
	first := true
	if metadata != nil {
		h.WriteString(`"__metadata__":{`)
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			writeJSONString(&h, k)
			h.WriteByte(':')
			writeJSONString(&h, metadata[k])
		}
		h.WriteByte('}')
		first = false
	}
	var offset int64
	for _, e := range entries {
		if !first {
			h.WriteByte(',')
		}
		first = false
		writeJSONString(&h, e.name)
		h.WriteString(`:{"dtype":"`)
		h.WriteString(e.dtype)
		h.WriteString(`","shape":[`)
		for i, d := range e.shape {
			if i > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		h.WriteString(`],"data_offsets":[`)
		h.WriteString(strconv.FormatInt(offset, 10))
		h.WriteByte(',')
		offset += e.bytes
		h.WriteString(strconv.FormatInt(offset, 10))
		h.WriteString(`]}`)
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	if h.Len() > MaxHeaderSize {
		return nil, nil, fmt.Errorf("safetensors: header of %d bytes exceeds the limit of %d", h.Len(), MaxHeaderSize)
	}
	return h.Bytes(), entries, nil
}

// writeJSONString writes s as a JSON string, escaping as serde_json does:
// '"', '\\' and the control characters below U+0020, nothing else.
func writeJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// Marshal returns the safetensors encoding of tensors and metadata (nil
// metadata: no "__metadata__" entry). Tensors must have a dtype tapegrad
// stores; views are compacted.
func Marshal(tensors map[string]*tensor.Dense, metadata map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, tensors, metadata); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes the safetensors encoding of tensors and metadata to w.
func Write(w io.Writer, tensors map[string]*tensor.Dense, metadata map[string]string) error {
	header, entries, err := prepare(tensors, metadata)
	if err != nil {
		return err
	}
	if err := writeTo(w, header, entries); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

func writeTo(w io.Writer, header []byte, entries []entry) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	bw.Write(n[:])
	bw.Write(header)
	for _, e := range entries {
		switch e.t.Dtype() {
		case tensor.Float32:
			putElems(bw, tensorx.MustSlice[float32](e.t), 4, func(b []byte, v float32) {
				binary.LittleEndian.PutUint32(b, math.Float32bits(v))
			})
		case tensor.Float64:
			putElems(bw, tensorx.MustSlice[float64](e.t), 8, func(b []byte, v float64) {
				binary.LittleEndian.PutUint64(b, math.Float64bits(v))
			})
		case tensor.Int32:
			putElems(bw, tensorx.MustSlice[int32](e.t), 4, func(b []byte, v int32) {
				binary.LittleEndian.PutUint32(b, uint32(v))
			})
		case tensor.Int64:
			putElems(bw, tensorx.MustSlice[int64](e.t), 8, func(b []byte, v int64) {
				binary.LittleEndian.PutUint64(b, uint64(v))
			})
		case tensor.Bool:
			putElems(bw, tensorx.MustSlice[bool](e.t), 1, func(b []byte, v bool) {
				b[0] = 0
				if v {
					b[0] = 1
				}
			})
		}
	}
	// bufio.Writer keeps the first write error and returns it here.
	return bw.Flush()
}

// putElems encodes s little-endian through a fixed chunk of bw's buffer.
func putElems[T any](bw *bufio.Writer, s []T, size int, put func([]byte, T)) {
	var chunk [4096]byte
	per := len(chunk) / size
	for len(s) > 0 {
		k := min(per, len(s))
		for i, v := range s[:k] {
			put(chunk[i*size:], v)
		}
		bw.Write(chunk[:k*size])
		s = s[k:]
	}
}

// WriteFile writes tensors and metadata to path atomically: it writes a
// temporary file in the same directory, syncs it to disk, renames it over
// path and syncs the directory, so a crash leaves either the old file or
// the complete new one, never a torn file. The file's mode is 0644. On
// error (a full disk, a read-only directory, …) the old file is left as
// it was, the temporary file is removed, and the error names path. A
// process killed during the write leaves its temporary file behind, named
// "." + the file's name + ".tmp" + digits; it is safe to delete.
func WriteFile(path string, tensors map[string]*tensor.Dense, metadata map[string]string) (err error) {
	header, entries, err := prepare(tensors, metadata)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("safetensors: writing %s: %w", path, err)
		}
	}()
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil && tmp != "" {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = writeTo(f, header, entries); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = syncFile(f); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	tmp = "" // nothing to clean up now
	// Make the rename itself durable. (The new file is in place: an
	// error here means that a crash could still bring back the old one.)
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// syncFile flushes f to disk; a variable so that tests can make it fail
// (fsync reports a full disk or an I/O error that the writes did not).
var syncFile = (*os.File).Sync
