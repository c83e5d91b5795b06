package autodiff

import (
	"math"
	"os"
	"strconv"
	"sync"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// PoisonEnv is the environment variable that switches on buffer poisoning,
// a debug option: with TAPEGRAD_POISON=1 (any value strconv.ParseBool
// reads as true), every buffer a tape's arena hands out without zeroing is
// first filled with NaN (floats) or a sentinel (integers), so a kernel that
// reads an output it has not written, or relies on fresh zeroed memory,
// gives visibly wrong results instead of results that depend on what the
// buffer held before. It costs a pass over every such buffer; off by
// default. The variable is read once, when a tape first allocates.
const PoisonEnv = "TAPEGRAD_POISON"

// poisoning reports whether the arena poisons the buffers it hands out
// dirty (see PoisonEnv).
func poisoning() bool {
	poisonOnce.Do(func() {
		poisonOn, _ = strconv.ParseBool(os.Getenv(PoisonEnv))
	})
	return poisonOn
}

var (
	poisonOnce sync.Once
	poisonOn   bool
)

const poolRank = 8

type shapeKey struct {
	dt    tensor.Dtype
	rank  int
	shape [poolRank]int
}

// arena recycles tensors by exact dtype and shape: training shapes repeat
// exactly, so after the first step every request is served from a free
// list, and the *tensor.Dense headers are reused too (creating one costs
// several allocations in gorgonia.org/tensor).
type arena struct {
	free map[shapeKey][]*tensor.Dense
	live map[*tensor.Dense]shapeKey
}

func keyOf(dt tensor.Dtype, shape []int) (shapeKey, bool) {
	if len(shape) > poolRank {
		return shapeKey{}, false
	}
	k := shapeKey{dt: dt, rank: len(shape)}
	copy(k.shape[:], shape)
	return k, true
}

// Alloc implements registry.Allocator.
func (a *arena) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	if a.free == nil {
		a.free = map[shapeKey][]*tensor.Dense{}
		a.live = map[*tensor.Dense]shapeKey{}
	}
	k, poolable := keyOf(dt, shape)
	var d *tensor.Dense
	fresh := false
	if poolable {
		if l := a.free[k]; len(l) > 0 {
			d = l[len(l)-1]
			l[len(l)-1] = nil
			a.free[k] = l[:len(l)-1]
		}
	}
	if d == nil {
		var err error
		d, err = tensorx.Zeros(dt, shape)
		if err != nil {
			return nil, err
		}
		fresh = true
	}
	if poolable {
		a.live[d] = k
	}
	switch {
	case zeroed && !fresh:
		zero(d)
	case !zeroed && poisoning():
		poison(d)
	}
	return d, nil
}

// Release implements registry.Allocator: d goes back to its free list.
func (a *arena) Release(d *tensor.Dense) {
	k, ok := a.live[d]
	if !ok {
		return
	}
	delete(a.live, d)
	a.free[k] = append(a.free[k], d)
}

// owns reports whether d was handed out by the arena and is still live.
func (a *arena) owns(d *tensor.Dense) bool {
	_, ok := a.live[d]
	return ok
}

// recycle moves every live buffer back to the free lists.
func (a *arena) recycle() {
	for d, k := range a.live {
		a.free[k] = append(a.free[k], d)
	}
	clear(a.live)
}

// drop forgets every pooled buffer, returning the memory to the GC.
func (a *arena) drop() {
	a.free, a.live = nil, nil
}

func zero(d *tensor.Dense) {
	switch d.Dtype() {
	case tensor.Float32:
		clear(d.Float32s())
	case tensor.Float64:
		clear(d.Float64s())
	case tensor.Int32:
		clear(d.Int32s())
	case tensor.Int64:
		clear(d.Int64s())
	case tensor.Bool:
		clear(d.Bools())
	}
}

func poison(d *tensor.Dense) {
	switch d.Dtype() {
	case tensor.Float32:
		s := d.Float32s()
		nan := float32(math.NaN())
		for i := range s {
			s[i] = nan
		}
	case tensor.Float64:
		s := d.Float64s()
		for i := range s {
			s[i] = math.NaN()
		}
	case tensor.Int32:
		s := d.Int32s()
		for i := range s {
			s[i] = -0x5a5a5a5a
		}
	case tensor.Int64:
		s := d.Int64s()
		for i := range s {
			s[i] = -0x5a5a5a5a5a5a5a5a
		}
	case tensor.Bool:
		s := d.Bools()
		for i := range s {
			s[i] = true
		}
	}
}
