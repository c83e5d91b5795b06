package testutil

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Recycler is an allocator (registry.Allocator) that, like the tape's
// arena in steady state, serves every request again from the buffers it
// handed out once Reset, without allocating itself (a linear search over
// its buffers). Allocation tests run kernels through it.
type Recycler struct{ bufs []recycled }

// recycled is one buffer of a Recycler.
type recycled struct {
	d    *tensor.Dense
	used bool
}

// Alloc returns a free buffer of dtype dt and the given shape, zeroed if
// asked, or a new one.
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
