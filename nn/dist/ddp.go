package dist

import (
	"errors"
	"fmt"
	"hash/fnv"
	"time"
	"unsafe"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
)

// DefaultBucketBytes is the default gradient bucket size, PyTorch DDP's
// bucket_cap_mb of 25 MiB.
const DefaultBucketBytes = 25 << 20

// DDPOptions configure NewDDP.
type DDPOptions struct {
	// BucketBytes caps a gradient bucket's size in bytes (default
	// DefaultBucketBytes). A parameter larger than the cap has a bucket of
	// its own. Smaller buckets start communicating earlier in the backward
	// pass but pay the all-reduce latency more often.
	BucketBytes int
}

// DDP is synchronous data parallelism for an nn model (PyTorch's
// DistributedDataParallel): every rank holds a replica of the model,
// trains it on its own shard of each batch, and averages the gradients
// over the ranks before every optimizer step, so the replicas stay
// identical.
//
// NewDDP broadcasts rank 0's parameters and buffers. The trainable
// parameters are grouped into buckets of at most BucketBytes, in reverse
// order (the backward pass finishes the last layers' gradients first).
// With Attach, the tape's Backward hands each parameter's gradient to the
// DDP as soon as it is final (autodiff.Tape.OnGradReady); a bucket whose
// gradients are all in is all-reduced at once by a helper goroutine, in
// bucket order, while the backward pass goes on with the earlier layers.
// Wait then waits for the last buckets and writes the averages into the
// parameters' Grad. Every rank must run the same model and the same
// number of steps.
//
// Buffers (BatchNorm's running statistics) are not synchronised during
// training: each rank keeps the statistics of its own shards, as PyTorch's
// DDP without SyncBatchNorm. Training-mode batch normalisation uses the
// batch statistics of the rank's own shard of the batch. AverageBuffers
// averages them over the ranks when wanted (e.g. before an evaluation);
// BroadcastState copies rank 0's.
//
// The DDP's helper goroutine uses the communicator from the first bucket
// launched in Backward until Wait returns: make no other collective call on
// it in between, since the ranks must issue theirs in the same order.
//
// One Backward per Wait: gradient accumulation over several Backward
// calls is done by accumulating on the tape (or calling Wait only at the
// last, without Attach), since each Wait averages p.Grad as it stands.
type DDP struct {
	comm    Comm
	model   nn.Module
	params  []*autodiff.Param // trainable, in the model's order
	slots   []ddpSlot         // by parameter
	index   map[*autodiff.Param]int
	buckets []*ddpBucket // in launch order (reverse parameter order)

	next     int // buckets[:next] are launched this step
	backward bool
	work     chan int
	done     chan ddpDone
	stepT0   time.Time // first launch of this step
	err      error     // sticky
	stats    DDPStats
}

type ddpSlot struct {
	bucket, off, n int
	ready          bool // gradient copied into the bucket this step
}

type ddpBucket struct {
	dtype   tensor.Dtype
	f32     []float32
	f64     []float64
	slots   []int // parameter indices
	pending int   // slots not ready this step
}

type ddpDone struct {
	bucket      int
	err         error
	start, stop time.Time
}

// DDPStats are a DDP's counters, summed over its steps (Waits).
type DDPStats struct {
	// Steps counts the completed Waits; Buckets is the number of buckets
	// per step, Bytes the gradient bytes all-reduced per step.
	Steps, Buckets int
	Bytes          int64
	// AllReduce is the time spent in the all-reduce calls (including
	// waiting for the slowest rank to join).
	AllReduce time.Duration
	// Exposed is the time Wait spent waiting for all-reduces: the part of
	// the communication the backward pass did not hide.
	Exposed time.Duration
	// LaunchedInBackward counts the buckets handed to the communicator
	// during Backward (by the OnGradReady hook), before Wait.
	LaunchedInBackward int
	// StartedInBackward counts the steps whose first all-reduce started
	// before Wait was called.
	StartedInBackward int
}

// Hidden returns the share of the all-reduce time hidden behind the
// backward pass: 1 − Exposed/AllReduce (0 if nothing was all-reduced).
func (s DDPStats) Hidden() float64 {
	if s.AllReduce <= 0 {
		return 0
	}
	return max(0, 1-float64(s.Exposed)/float64(s.AllReduce))
}

// NewDDP wraps m for data-parallel training over c. Every rank calls it
// (a collective): it checks that every rank has the same parameters and
// buffers (names, shapes, dtypes), copies rank 0's values to every rank,
// and starts the helper goroutine that runs the all-reduces (Close stops
// it). Parameters must be float32 or float64.
func NewDDP(c Comm, m nn.Module, opts DDPOptions) (*DDP, error) {
	if c == nil || m == nil {
		return nil, errors.New("dist.NewDDP: nil communicator or model")
	}
	if opts.BucketBytes < 0 {
		return nil, fmt.Errorf("dist.NewDDP: BucketBytes %d is negative", opts.BucketBytes)
	}
	capBytes := opts.BucketBytes
	if capBytes == 0 {
		capBytes = DefaultBucketBytes
	}
	d := &DDP{comm: c, model: m, index: map[*autodiff.Param]int{}}
	for _, p := range m.Params() {
		if p == nil || p.Data == nil {
			return nil, errors.New("dist.NewDDP: the model has a nil parameter")
		}
		if _, dup := d.index[p]; dup {
			return nil, fmt.Errorf("dist.NewDDP: parameter %q listed twice", p.Name)
		}
		if dt := p.Data.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			return nil, fmt.Errorf("dist.NewDDP: parameter %q is %v; want float32 or float64", p.Name, dt)
		}
		if p.Trainable {
			d.index[p] = len(d.params)
			d.params = append(d.params, p)
		}
	}
	if err := d.checkSame(); err != nil {
		return nil, err
	}
	if err := d.BroadcastState(); err != nil {
		return nil, err
	}
	d.slots = make([]ddpSlot, len(d.params))
	var cur *ddpBucket
	size := 0
	for i := len(d.params) - 1; i >= 0; i-- {
		p := d.params[i]
		n, esz := tensorx.Len(p.Data), int(p.Data.Dtype().Size())
		if cur == nil || cur.dtype != p.Data.Dtype() || (size > 0 && size+n*esz > capBytes) {
			cur = &ddpBucket{dtype: p.Data.Dtype()}
			d.buckets = append(d.buckets, cur)
			size = 0
		}
		d.slots[i] = ddpSlot{bucket: len(d.buckets) - 1, off: size / esz, n: n}
		cur.slots = append(cur.slots, i)
		size += n * esz
		d.stats.Bytes += int64(n * esz)
		if cur.dtype == tensor.Float32 {
			cur.f32 = make([]float32, size/esz)
		} else {
			cur.f64 = make([]float64, size/esz)
		}
	}
	for _, b := range d.buckets {
		b.pending = len(b.slots)
	}
	d.stats.Buckets = len(d.buckets)
	d.work = make(chan int, len(d.buckets))
	d.done = make(chan ddpDone, len(d.buckets))
	go d.worker()
	return d, nil
}

// checkSame makes sure every rank has the same parameters and buffers:
// rank 0 broadcasts a hash of their names, shapes and dtypes, every rank
// compares, and an all-reduce counts the ranks that differ, so all ranks
// return the same verdict.
func (d *DDP) checkSame() error {
	h := fnv.New64a()
	for _, p := range d.model.Params() {
		fmt.Fprintf(h, "p %s %v %v;", p.Name, p.Data.Shape(), p.Data.Dtype())
	}
	for _, b := range d.model.Buffers() {
		fmt.Fprintf(h, "b %s %v %v;", b.Name, b.Data.Shape(), b.Data.Dtype())
	}
	mine := h.Sum(nil)
	root := append([]byte(nil), mine...)
	if err := d.comm.BroadcastBytes(root, 0); err != nil {
		return fmt.Errorf("dist.NewDDP: %w", err)
	}
	differ := []float64{0}
	if string(root) != string(mine) {
		differ[0] = 1
	}
	if err := d.comm.AllReduceFloat64(differ, Sum); err != nil {
		return fmt.Errorf("dist.NewDDP: %w", err)
	}
	if differ[0] != 0 {
		return fmt.Errorf("dist.NewDDP: the model's parameters or buffers (names, shapes, dtypes) differ from rank 0's on %d rank(s)", int(differ[0]))
	}
	return nil
}

// BroadcastState copies rank 0's parameters (all, trainable or not) and
// buffers to every rank (a collective). NewDDP calls it; call it again
// after changing the model on rank 0 only (e.g. loading a checkpoint that
// only rank 0 can read).
func (d *DDP) BroadcastState() error {
	for _, p := range d.model.Params() {
		if err := broadcastDense(d.comm, p.Data); err != nil {
			return fmt.Errorf("dist: broadcasting parameter %q: %w", p.Name, err)
		}
		p.MarkModified()
	}
	for _, b := range d.model.Buffers() {
		if err := broadcastDense(d.comm, b.Data); err != nil {
			return fmt.Errorf("dist: broadcasting buffer %q: %w", b.Name, err)
		}
	}
	return nil
}

// AverageBuffers replaces every float buffer (BatchNorm's running mean and
// variance, fake-quantisation ranges) by its average over the ranks (a
// collective).
func (d *DDP) AverageBuffers() error {
	for _, b := range d.model.Buffers() {
		var err error
		switch b.Data.Dtype() {
		case tensor.Float32:
			err = d.comm.AllReduceFloat32(b.Data.Float32s(), Avg)
		case tensor.Float64:
			err = d.comm.AllReduceFloat64(b.Data.Float64s(), Avg)
		}
		if err != nil {
			return fmt.Errorf("dist: averaging buffer %q: %w", b.Name, err)
		}
	}
	return nil
}

func broadcastDense(c Comm, t *tensor.Dense) error {
	t, err := tensorx.Contiguous(t)
	if err != nil {
		return err
	}
	switch t.Dtype() {
	case tensor.Float32:
		return c.BroadcastFloat32(t.Float32s(), 0)
	case tensor.Float64:
		return c.BroadcastFloat64(t.Float64s(), 0)
	}
	switch t.Dtype() {
	case tensor.Int32:
		return c.BroadcastBytes(asBytes(t.Int32s()), 0)
	case tensor.Int64:
		return c.BroadcastBytes(asBytes(t.Int64s()), 0)
	case tensor.Bool:
		return c.BroadcastBytes(asBytes(t.Bools()), 0)
	}
	return fmt.Errorf("unsupported dtype %v", t.Dtype())
}

// asBytes views s's elements as bytes.
func asBytes[T int32 | int64 | bool](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// Comm returns the DDP's communicator.
func (d *DDP) Comm() Comm { return d.comm }

// Attach makes t's Backward hand the gradients to the DDP as they are
// finished (it sets t's OnGradReady hook), so that their all-reduce
// overlaps the rest of the backward pass. Without Attach, Wait does all
// the communication after Backward.
func (d *DDP) Attach(t *autodiff.Tape) { t.OnGradReady(d.gradReady) }

// gradReady is the OnGradReady hook: it copies p's gradient (plus what
// p.Grad already holds) into p's bucket and launches the buckets that are
// complete, in order.
func (d *DDP) gradReady(p *autodiff.Param, g *tensor.Dense) {
	i, ok := d.index[p]
	if !ok || d.err != nil || d.work == nil {
		return // not this model's, or broken, or closed
	}
	s := &d.slots[i]
	if s.ready {
		d.err = fmt.Errorf("dist: parameter %q got a second gradient before Wait (call Wait after each Backward)", p.Name)
		return
	}
	if err := d.checkGrad(p); err != nil {
		d.err = err
		return
	}
	b := d.buckets[s.bucket]
	switch b.dtype {
	case tensor.Float32:
		fill(b.f32[s.off:s.off+s.n], g.Float32s(), p.Grad)
	case tensor.Float64:
		fill(b.f64[s.off:s.off+s.n], g.Float64s(), p.Grad)
	}
	d.markReady(s, b, true)
}

// checkGrad checks that p.Grad, if any, matches p.Data.
func (d *DDP) checkGrad(p *autodiff.Param) error {
	if p.Grad != nil && (p.Grad.Dtype() != p.Data.Dtype() || !tensorx.SameShape(p.Grad.Shape(), p.Data.Shape())) {
		return fmt.Errorf("dist: parameter %q: Grad is %v %v but Data is %v %v", p.Name, p.Grad.Dtype(), p.Grad.Shape(), p.Data.Dtype(), p.Data.Shape())
	}
	return nil
}

// fill sets dst to g plus the gradient already accumulated in acc (if
// any): the value Backward is about to leave in p.Grad.
func fill[T float32 | float64](dst, g []T, acc *tensor.Dense) {
	if acc == nil {
		copy(dst, g)
		return
	}
	a := tensorx.MustSlice[T](acc)
	for i := range dst {
		dst[i] = a[i] + g[i]
	}
}

func (d *DDP) markReady(s *ddpSlot, b *ddpBucket, inBackward bool) {
	s.ready = true
	b.pending--
	for d.next < len(d.buckets) && d.buckets[d.next].pending == 0 {
		if d.next == 0 {
			d.stepT0 = time.Now()
		}
		if inBackward {
			d.stats.LaunchedInBackward++
		}
		d.work <- d.next
		d.next++
	}
}

// worker runs the all-reduces of launched buckets, in launch order. After
// a failure it fails the later buckets without communicating.
func (d *DDP) worker() {
	var failed error
	for i := range d.work {
		if i < 0 {
			return
		}
		b := d.buckets[i]
		r := ddpDone{bucket: i, err: failed, start: time.Now()}
		if failed == nil {
			if b.dtype == tensor.Float32 {
				r.err = d.comm.AllReduceFloat32(b.f32, Avg)
			} else {
				r.err = d.comm.AllReduceFloat64(b.f64, Avg)
			}
			failed = r.err
		}
		r.stop = time.Now()
		d.done <- r
	}
}

// Wait completes the step's gradient averaging, after Backward: it hands
// over the gradients the hook has not seen (parameters not bound to an
// attached tape this step: their Grad, or zero), waits for every bucket's
// all-reduce, and writes the averages into the parameters' Grad
// (allocating a Grad that is nil). Every rank must call it once per step.
// After an error the DDP is unusable (the ranks may be out of step): call
// the communicator's Abort.
func (d *DDP) Wait() error {
	end := time.Now()
	if d.work == nil {
		return ErrClosed
	}
	for i := range d.slots {
		s := &d.slots[i]
		if s.ready {
			continue
		}
		b := d.buckets[s.bucket]
		p := d.params[i]
		if err := d.checkGrad(p); err != nil && d.err == nil {
			d.err = err
		}
		switch {
		case d.err != nil:
			// broken: launch the bucket anyway, every rank must take part
		case p.Grad == nil && b.dtype == tensor.Float32:
			clear(b.f32[s.off : s.off+s.n])
		case p.Grad == nil:
			clear(b.f64[s.off : s.off+s.n])
		case b.dtype == tensor.Float32:
			copy(b.f32[s.off:s.off+s.n], p.Grad.Float32s())
		default:
			copy(b.f64[s.off:s.off+s.n], p.Grad.Float64s())
		}
		d.markReady(s, b, false)
	}
	first := time.Time{}
	var err error
	for range d.buckets {
		r := <-d.done
		if err == nil {
			err = r.err
		}
		if r.bucket == 0 {
			first = r.start
		}
		d.stats.AllReduce += r.stop.Sub(r.start)
	}
	d.stats.Exposed += time.Since(end)
	if first.Before(end) {
		d.stats.StartedInBackward++
	}
	d.next = 0
	for _, b := range d.buckets {
		b.pending = len(b.slots)
	}
	for i := range d.slots {
		d.slots[i].ready = false
	}
	if d.err == nil && err != nil {
		d.err = fmt.Errorf("dist: gradient all-reduce: %w", err)
	}
	if d.err != nil {
		return d.err
	}
	for i, p := range d.params {
		s := &d.slots[i]
		b := d.buckets[s.bucket]
		if p.Grad == nil {
			z, err := tensorx.Zeros(p.Data.Dtype(), p.Data.Shape())
			if err != nil {
				return err
			}
			p.Grad = z
		}
		if b.dtype == tensor.Float32 {
			copy(p.Grad.Float32s(), b.f32[s.off:s.off+s.n])
		} else {
			copy(p.Grad.Float64s(), b.f64[s.off:s.off+s.n])
		}
	}
	d.stats.Steps++
	return nil
}

// Stats returns the DDP's counters.
func (d *DDP) Stats() DDPStats { return d.stats }

// ResetStats zeroes the counters (Steps and the times).
func (d *DDP) ResetStats() {
	d.stats = DDPStats{Buckets: d.stats.Buckets, Bytes: d.stats.Bytes}
}

// Close stops the helper goroutine. It does not close the communicator.
func (d *DDP) Close() error {
	if d.work == nil {
		return ErrClosed
	}
	d.work <- -1
	d.work = nil
	return nil
}
