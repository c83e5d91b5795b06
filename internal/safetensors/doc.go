// Package safetensors reads and writes the safetensors file format
// (github.com/huggingface/safetensors), the format tapegrad checkpoints use,
// so PyTorch (safetensors.torch.load_file), NumPy and others can read them.
//
// The layout of a file:
//
//   - 8 bytes: N, the header length, an unsigned 64-bit little-endian
//     integer;
//   - N bytes: the header, a UTF-8 JSON object mapping each tensor name to
//     {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, with
//     an optional "__metadata__" entry holding a string-to-string map;
//   - the byte buffer: each tensor's elements, row-major, little-endian,
//     at [BEGIN, END) relative to the start of the buffer.
//
// The writer follows the reference implementation byte for byte where it is
// deterministic: tensors are laid out by descending dtype alignment
// (I64, F64, F32, I32, BOOL), then by name; the header lists "__metadata__"
// first (its keys sorted, where the reference's order is unspecified), then
// the tensors in buffer order, in compact JSON, padded with spaces to a
// multiple of 8 bytes so every tensor's data is aligned to its element size.
//
// The reader is strict and never panics: header length within the file and
// at most MaxHeaderSize, valid UTF-8 and JSON (one object, no duplicate
// keys, no unknown fields, nothing but whitespace after it), integer shapes
// and offsets, offsets that tile the buffer exactly from 0 to its end (no
// gap, overlap or trailing byte), byte lengths that match dtype and shape,
// and BOOL bytes that are 0 or 1. Every such error wraps ErrFormat; a valid
// file holding a dtype tapegrad cannot store (F16, U8, ...) gives an error
// wrapping ErrUnsupported.
//
// Tensors map to *tensor.Dense of the dtypes tapegrad stores: F32 float32,
// F64 float64, I32 int32, I64 int64, BOOL bool.
package safetensors
