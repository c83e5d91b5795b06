package testutil

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Recycler is a registry.Allocator that, like the tape's arena in steady
// state, serves every request again from the buffers it handed out once
// reset, without allocating itself (a linear search over its buffers).
// The allocation tests of the kernels run them through it. Its zero value
// is ready to use.
type Recycler struct{ bufs []recycled }

// recycled is one buffer of a Recycler.
type recycled struct {
	d    *tensor.Dense
	used bool
}

// Alloc returns a free buffer of that dtype and shape (zeroed if asked),
// or a fresh zeroed one.
func (r *Recycler) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	for i := range r.bufs {
		b := &r.bufs[i]
		if !b.used && b.d.Dtype() == dt && tensorx.SameShape(b.d.Shape(), shape) {
			b.used = true
			if zeroed {
				clearData(b.d)
			}
			return b.d, nil
		}
	}
	d, err := tensorx.Zeros(dt, shape)
	if err != nil {
		return nil, err
	}
	r.bufs = append(r.bufs, recycled{d: d, used: true})
	return d, nil
}

// Release makes d free again.
func (r *Recycler) Release(d *tensor.Dense) {
	for i := range r.bufs {
		if r.bufs[i].d == d {
			r.bufs[i].used = false
		}
	}
}

// Reset makes every buffer free again.
func (r *Recycler) Reset() {
	for i := range r.bufs {
		r.bufs[i].used = false
	}
}

// KernelRun returns a function that runs op's kernel with attrs on in
// with threads, its outputs from a Recycler reset on every call: what the
// tape does in a steady-state training step. name labels failures.
func KernelRun(t testing.TB, name, op string, attrs any, threads int, in []*tensor.Dense) func() {
	t.Helper()
	def, err := registry.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	if attrs, err = def.NormalizeAttrs(attrs); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	alloc := &Recycler{}
	kc := &registry.KernelCtx{Alloc: alloc, Threads: threads}
	return func() {
		alloc.Reset()
		if _, err := registry.RunNormalized(def, kc, attrs, in); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
