package testutil

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Values a PoisonAlloc writes into the dirty integer buffers it hands out.
const (
	poisonInt32 = -0x5a5a5a5a
	poisonInt64 = -0x5a5a5a5a5a5a5a5a
)

// PoisonAlloc is an allocator (a registry.Allocator) handing out fresh buffers that are
// filled with NaN (floats), a sentinel (int32, int64) or true (bool) unless
// zeroed ones are asked for, so a kernel that leaves an output element
// unwritten, or reads scratch it has not written, fails the comparisons.
type PoisonAlloc struct{}

// Alloc returns a fresh buffer, poisoned unless zeroed.
func (PoisonAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	d, err := tensorx.Zeros(dt, shape)
	if err != nil || zeroed {
		return d, err
	}
	switch dt {
	case tensor.Float32:
		s := d.Float32s()
		for i := range s {
			s[i] = float32(math.NaN())
		}
	case tensor.Float64:
		s := d.Float64s()
		for i := range s {
			s[i] = math.NaN()
		}
	case tensor.Int32:
		s := d.Int32s()
		for i := range s {
			s[i] = poisonInt32
		}
	case tensor.Int64:
		s := d.Int64s()
		for i := range s {
			s[i] = poisonInt64
		}
	case tensor.Bool:
		s := d.Bools()
		for i := range s {
			s[i] = true
		}
	}
	return d, nil
}

// Release does nothing: buffers are never reused.
func (PoisonAlloc) Release(*tensor.Dense) {}

// PoolAlloc is a registry.Allocator for benchmarks: it recycles released
// buffers by dtype and shape (no poisoning, no first-touch cost of fresh
// memory after the first call), as the tape's arena does in a training
// loop. Its zero value is ready to use.
type PoolAlloc struct{ free map[string][]*tensor.Dense }

func poolKey(dt tensor.Dtype, shape []int) string { return fmt.Sprint(dt, shape) }

// Alloc returns a released buffer of that dtype and shape if there is
// one (zeroed if asked), else a fresh zeroed one.
func (p *PoolAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	k := poolKey(dt, shape)
	if l := p.free[k]; len(l) > 0 {
		d := l[len(l)-1]
		p.free[k] = l[:len(l)-1]
		if zeroed {
			clearData(d)
		}
		return d, nil
	}
	return tensorx.Zeros(dt, shape)
}

// Release makes d available to later Alloc calls of its dtype and shape.
func (p *PoolAlloc) Release(d *tensor.Dense) {
	if p.free == nil {
		p.free = map[string][]*tensor.Dense{}
	}
	k := poolKey(d.Dtype(), tensorx.Shape(d))
	p.free[k] = append(p.free[k], d)
}

// clearData zeroes d's elements.
func clearData(d *tensor.Dense) {
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

// CheckAllocs pins the steady-state allocations of run, one call of a
// kernel on threads threads with recycled buffers (name labels
// failures): after a first call, on one thread a call must allocate
// nothing (testing.AllocsPerRun over twenty runs); on more threads at most
// parBound. The count on more threads is taken with runtime.MemStats at
// the process's GOMAXPROCS (testing.AllocsPerRun runs at one, where every
// worker comes late), after ten more calls, as the least of fifteen runs
// (or of up to 300 while none meets parBound).
func CheckAllocs(t *testing.T, name string, threads int, parBound uint64, run func()) {
	t.Helper()
	run()
	if threads == 1 {
		n := testing.AllocsPerRun(20, run)
		t.Logf("%-18s one thread:  %v allocations per run", name, n)
		if n != 0 {
			t.Errorf("%s, one thread: %v allocations per run, want 0", name, n)
		}
		return
	}
	for range 10 {
		run()
	}
	// The least of at least 15 runs, and of up to 300 while none meets the
	// bound: on a loaded machine (CI runs packages side by side) a worker
	// may come late on every one of 15 runs, making the pool start a
	// goroutine; a kernel that allocates on every call fails all 300.
	least := uint64(math.MaxUint64)
	runs := 0
	for ; runs < 15 || least > parBound && runs < 300; runs++ {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		run()
		runtime.ReadMemStats(&m1)
		least = min(least, m1.Mallocs-m0.Mallocs)
	}
	t.Logf("%-18s two threads: %v allocations per run (least of %d runs)", name, least, runs)
	if least > parBound {
		t.Errorf("%s, two threads: %v allocations per run (least of %d runs), want at most %d", name, least, runs, parBound)
	}
}

// MallocsPerCall returns the heap allocations per call of f over runs
// calls, after a few untimed ones, at the current GOMAXPROCS (unlike
// testing.AllocsPerRun, which sets it to 1).
func MallocsPerCall(runs int, f func()) float64 {
	for range 3 {
		f()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}

// ConvAllocShape is one Conv2D-family problem of the allocation tests, in
// NHWC names: input [N, H, W, C], filter [K, K, CF, O], stride S.
type ConvAllocShape struct {
	Name                 string
	N, H, W, C, K, CF, O int
	S                    int
	Padding              string
}

// ConvAllocCases calls fn for every problem of the Conv2D family's
// allocation tests in both layouts and both float dtypes (W1, the
// benchmark workload of cmd/bench/README.md, only in NHWC float32): shapes
// with thousands of output positions and many GEMM blocks, so that an
// allocation per row, chunk or block breaks the tests' bounds.
func ConvAllocCases(fn func(sh ConvAllocShape, format string, dt tensor.Dtype)) {
	for _, sh := range []ConvAllocShape{
		{"3x3", 4, 24, 24, 16, 3, 16, 32, 1, "SAME"},    // 2304 positions, in-place rows
		{"3x3s2", 4, 24, 24, 16, 3, 16, 32, 2, "SAME"},  // strided (the input gradient's col2im)
		{"grouped", 2, 20, 20, 16, 3, 8, 8, 1, "VALID"}, // two groups
		{"1x1", 4, 16, 16, 32, 1, 32, 16, 1, "VALID"},   // direct GEMMs
		{"W1", 32, 32, 32, 16, 3, 16, 32, 1, "SAME"},    // cmd/bench/README.md W1: 8 filter chunks
	} {
		for _, format := range []string{"NHWC", "NCHW"} {
			for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				if sh.Name == "W1" && (format != "NHWC" || dt != tensor.Float32) {
					continue
				}
				fn(sh, format, dt)
			}
		}
	}
}
