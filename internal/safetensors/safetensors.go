package safetensors

import (
	"errors"
	"fmt"

	"gorgonia.org/tensor"
)

// MaxHeaderSize bounds the JSON header's length, as the reference reader
// does (100 MB), so a hostile file cannot make the reader parse gigabytes.
const MaxHeaderSize = 100_000_000

// MetadataKey is the header entry holding the free-form string map; no
// tensor may have this name.
const MetadataKey = "__metadata__"

var (
	// ErrFormat is wrapped by every error about a malformed file.
	ErrFormat = errors.New("safetensors: malformed file")
	// ErrUnsupported is wrapped by errors about well-formed content tapegrad
	// cannot hold: a dtype other than F32, F64, I32, I64 and BOOL (or one
	// unknown to this reader), a rank above 16, a tensor too large for memory.
	ErrUnsupported = errors.New("safetensors: unsupported content")
)

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)
}

func unsupportedErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

// dtypeInfo describes one safetensors dtype: its element size in bytes, its
// rank in the reference writer's alignment order (the declaration order of
// the reference's Dtype enum; the writer lays tensors out by descending
// rank) and the tensor dtype tapegrad maps it to, if any.
type dtypeInfo struct {
	size  int
	rank  int
	dt    tensor.Dtype
	known bool // tapegrad stores this dtype
}

// dtypes lists the safetensors dtypes whose element size is a whole number
// of bytes, in the reference's enum order.
var dtypes = map[string]dtypeInfo{
	"BOOL":    {size: 1, rank: 0, dt: tensor.Bool, known: true},
	"U8":      {size: 1, rank: 1},
	"I8":      {size: 1, rank: 2},
	"F8_E5M2": {size: 1, rank: 3},
	"F8_E4M3": {size: 1, rank: 4},
	"I16":     {size: 2, rank: 5},
	"U16":     {size: 2, rank: 6},
	"F16":     {size: 2, rank: 7},
	"BF16":    {size: 2, rank: 8},
	"I32":     {size: 4, rank: 9, dt: tensor.Int32, known: true},
	"U32":     {size: 4, rank: 10},
	"F32":     {size: 4, rank: 11, dt: tensor.Float32, known: true},
	"F64":     {size: 8, rank: 12, dt: tensor.Float64, known: true},
	"I64":     {size: 8, rank: 13, dt: tensor.Int64, known: true},
	"U64":     {size: 8, rank: 14},
}

// dtypeName returns the safetensors name of a tensor dtype tapegrad stores.
func dtypeName(dt tensor.Dtype) (string, bool) {
	switch dt {
	case tensor.Float32:
		return "F32", true
	case tensor.Float64:
		return "F64", true
	case tensor.Int32:
		return "I32", true
	case tensor.Int64:
		return "I64", true
	case tensor.Bool:
		return "BOOL", true
	}
	return "", false
}
