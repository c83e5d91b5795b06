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

// arena hands out the tape's tensor buffers and takes them back, when a
// value is released (liveness.go), a kernel's scratch is done, or the tape
// is Reset.
//
// Memory comes in blocks: a block is the backing array of one dtype and
// some capacity, and a buffer is a *tensor.Dense over the first elements of
// a block. A request takes the free block of its dtype with the smallest
// capacity that holds it (the one made first among equals), so memory
// freed by one shape serves the next, whatever its shape, as long as the
// block is not more than maxWaste times too large; otherwise a new block
// is made, of exactly the requested size, and the largest free block
// smaller than that (if not far smaller, and not under minEvict bytes) is
// dropped, so the pool does not keep blocks its requests have outgrown.
// The *tensor.Dense headers are kept with their block, one per shape (up
// to maxHeaders; creating one costs several allocations in
// gorgonia.org/tensor). A program that repeats the same steps makes the
// same requests in the same order, so after a few steps (the first ones
// settle the pool) every request finds the same block and header as in
// the step before, and nothing is allocated.
type arena struct {
	free   map[tensor.Dtype][]*block // free blocks by ascending capacity, then descending id
	all    map[tensor.Dtype][]*block // every block, in the same order
	live   map[*tensor.Dense]*block  // buffers handed out, by header
	nextID int32

	inUse, peak, pooled int64 // bytes: of blocks in use, their peak since recycle, of every block
}

// block is a backing array and the headers made over it.
type block struct {
	mem  *tensor.Dense // the backing array, a vector of the block's capacity
	cap  int
	id   int32
	size int64           // bytes
	hdrs []*tensor.Dense // headers over mem's first elements, most recently used first
	used bool
}

// maxWaste bounds the capacity of a block that serves a request, in
// requested elements: a small value must not hold a large block (that a
// large request would then miss) for as long as it lives.
const maxWaste = 4

// minEvict is the size in bytes of the smallest block evict drops: small
// blocks stay (they cost little), so the pool of a repeated step settles
// within a few steps.
const minEvict = 64 << 10

// maxHeaders is the most headers (shapes) a block keeps.
const maxHeaders = 32

func (a *arena) init() {
	if a.free == nil {
		a.free = map[tensor.Dtype][]*block{}
		a.all = map[tensor.Dtype][]*block{}
		a.live = map[*tensor.Dense]*block{}
	}
}

// blockLess orders blocks by ascending capacity, then by descending id
// (the first block made of a capacity ends its run).
func blockLess(x *block, c int, id int32) bool {
	return x.cap < c || x.cap == c && x.id > id
}

// search returns the index of the first block of l not before (c, id).
func search(l []*block, c int, id int32) int {
	lo, hi := 0, len(l)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if blockLess(l[m], c, id) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// insert adds b to the sorted list l.
func insert(l []*block, b *block) []*block {
	i := search(l, b.cap, b.id)
	l = append(l, nil)
	copy(l[i+1:], l[i:])
	l[i] = b
	return l
}

// Alloc implements registry.Allocator.
func (a *arena) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	a.init()
	n, err := tensorx.Numel(shape)
	if err != nil {
		return nil, err
	}
	if !tensorx.Supported(dt) {
		return tensorx.Zeros(dt, shape) // the error
	}
	var b *block
	fresh := false
	l := a.free[dt]
	i := search(l, n, math.MaxInt32)
	if i < len(l) && l[i].cap <= maxWaste*n {
		// The first block made of that capacity: the last of its run, so
		// many free blocks of one size cost no copying.
		j := search(l[i:], l[i].cap+1, math.MaxInt32) + i - 1
		b = l[j]
		copy(l[j:], l[j+1:])
		l[len(l)-1] = nil
		a.free[dt] = l[:len(l)-1]
	} else {
		if i > 0 && l[i-1].cap*maxWaste >= n && l[i-1].size >= minEvict {
			a.evict(dt, i-1)
		}
		mem, err := tensorx.Zeros(dt, []int{n})
		if err != nil {
			return nil, err
		}
		b = &block{mem: mem, cap: n, id: a.nextID, size: int64(n) * int64(dt.Size())}
		a.nextID++
		a.all[dt] = insert(a.all[dt], b)
		a.pooled += b.size
		fresh = true
	}
	d, err := b.header(shape, n)
	if err != nil {
		a.free[dt] = insert(a.free[dt], b)
		return nil, err
	}
	b.used = true
	a.live[d] = b
	a.inUse += b.size
	a.peak = max(a.peak, a.inUse)
	switch {
	case zeroed && !fresh:
		zero(d)
	case !zeroed && poisoning():
		poison(d)
	}
	return d, nil
}

// evict forgets the free block at index i of dtype dt's free list,
// returning its memory to the GC: a larger block replaces it.
func (a *arena) evict(dt tensor.Dtype, i int) {
	l := a.free[dt]
	b := l[i]
	copy(l[i:], l[i+1:])
	l[len(l)-1] = nil
	a.free[dt] = l[:len(l)-1]
	all := a.all[dt]
	j := search(all, b.cap, b.id)
	copy(all[j:], all[j+1:])
	all[len(all)-1] = nil
	a.all[dt] = all[:len(all)-1]
	a.pooled -= b.size
}

// header returns a header of the given shape (n elements) over b's first
// n elements, reusing one made before.
func (b *block) header(shape []int, n int) (*tensor.Dense, error) {
	for i, h := range b.hdrs {
		if tensorx.SameShape(h.Shape(), shape) {
			copy(b.hdrs[1:i+1], b.hdrs[:i])
			b.hdrs[0] = h
			return h, nil
		}
	}
	var h *tensor.Dense
	var err error
	switch b.mem.Dtype() {
	case tensor.Float32:
		h, err = tensorx.New(shape, b.mem.Float32s()[:n:n])
	case tensor.Float64:
		h, err = tensorx.New(shape, b.mem.Float64s()[:n:n])
	case tensor.Int32:
		h, err = tensorx.New(shape, b.mem.Int32s()[:n:n])
	case tensor.Int64:
		h, err = tensorx.New(shape, b.mem.Int64s()[:n:n])
	case tensor.Bool:
		h, err = tensorx.New(shape, b.mem.Bools()[:n:n])
	}
	if err != nil {
		return nil, err
	}
	if len(b.hdrs) < maxHeaders {
		b.hdrs = append(b.hdrs, nil)
	}
	copy(b.hdrs[1:], b.hdrs[:len(b.hdrs)-1])
	b.hdrs[0] = h
	return h, nil
}

// Release implements registry.Allocator: d's block becomes free. Buffers
// the arena did not hand out (or took back already) are ignored.
func (a *arena) Release(d *tensor.Dense) {
	b, ok := a.live[d]
	if !ok {
		return
	}
	delete(a.live, d)
	a.put(b)
	if poisoning() {
		poison(d) // a stale read of the released buffer sees NaN
	}
}

func (a *arena) put(b *block) {
	b.used = false
	a.inUse -= b.size
	dt := b.mem.Dtype()
	a.free[dt] = insert(a.free[dt], b)
}

// owns reports whether d was handed out by the arena and is still live.
func (a *arena) owns(d *tensor.Dense) bool {
	_, ok := a.live[d]
	return ok
}

// recycle makes every block free.
func (a *arena) recycle() {
	if a.free == nil {
		return
	}
	clear(a.live)
	for dt, all := range a.all {
		for _, b := range all {
			b.used = false
		}
		a.free[dt] = append(a.free[dt][:0], all...)
	}
	a.inUse, a.peak = 0, 0
}

// drop forgets every block, returning the memory to the GC.
func (a *arena) drop() {
	a.free, a.all, a.live = nil, nil, nil
	a.inUse, a.peak, a.pooled = 0, 0, 0
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
