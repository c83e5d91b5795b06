package data

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// LoaderOptions configures a Loader.
type LoaderOptions struct {
	// BatchSize is the number of examples per batch (must be positive).
	BatchSize int
	// Shuffle visits the examples in a new random order every epoch;
	// otherwise in dataset order.
	Shuffle bool
	// Seed determines the shuffles: epoch e uses a PCG generator seeded
	// with (Seed, e), so the order depends only on Seed and e.
	Seed uint64
	// DropLast skips the last batch of an epoch when it would be smaller
	// than BatchSize; by default it is delivered, smaller.
	DropLast bool
	// Ranks > 1 makes the loader deliver rank Rank's shard of every batch
	// of a data-parallel run (package nn/dist): the epoch's order is the
	// same on every rank (same Seed), cut into global batches of
	// BatchSize·Ranks examples, and rank r gets the r-th BatchSize
	// examples of each. So Ranks loaders together deliver exactly the
	// batches one loader of batch BatchSize·Ranks would. Sharding requires
	// DropLast (every rank must run the same number of equal steps); Len
	// is still the dataset's size, Pos and NumBatches count global
	// examples and batches.
	Rank, Ranks int
	// Name names the loader's state in checkpoints (default "loader"; give
	// two loaders saved in one checkpoint distinct names).
	Name string
	// Augment, if set, randomly crops and flips each input image as it is
	// copied into a batch (training data; see Augment).
	Augment *Augment
}

// Batch is one batch of examples. A Loader returns the same *Batch every
// time and overwrites its tensors: copy what must outlive the next call to
// Next (tape.Constant copies).
type Batch struct {
	// X holds the batch's rows of the inputs: [Size, ...].
	X *tensor.Dense
	// Y holds the batch's rows of the targets, nil if the loader has none.
	Y *tensor.Dense
	// Size is the number of examples (BatchSize, or fewer for the last
	// batch of an epoch).
	Size int
	// Indices are the dataset rows of the batch's examples.
	Indices []int
}

// LoaderState is the position of a Loader: restoring it (SetState) makes
// the loader deliver exactly the batches it would have delivered.
type LoaderState struct {
	// Seed is the shuffle seed.
	Seed uint64
	// Epoch counts completed epochs.
	Epoch int
	// Pos is the number of examples of the current epoch already
	// delivered.
	Pos int
}

// Loader delivers batches of rows of an input tensor and an optional
// target tensor (same first dimension), with seeded per-epoch shuffling,
// into buffers allocated once: Next allocates nothing.
//
//	for epoch := 0; epoch < epochs; epoch++ {
//		for l.Next() {
//			b := l.Batch()
//			... b.X, b.Y ...
//		}
//	}
//
// Next returns false at the end of each epoch and then starts the next.
type Loader struct {
	x, y  *tensor.Dense
	n     int
	opts  LoaderOptions
	epoch int
	pos   int
	perm  []int
	pcg   rand.PCG
	// full-size and last-partial-batch tensors (sharing backing arrays)
	fullX, fullY, partX, partY *tensor.Dense
	batch                      Batch
	// augmentation: image height, width, channels and the random source
	augH, augW, augC int
	augPCG           rand.PCG
}

// NewLoader returns a loader over the rows of x and y (y may be nil; both
// of dtype float32, float64, int32, int64 or bool, with the same first
// dimension). The loader reads x and y in place on every Next: do not
// change them while it is in use.
func NewLoader(x, y *tensor.Dense, opts LoaderOptions) (*Loader, error) {
	if opts.BatchSize <= 0 {
		return nil, fmt.Errorf("NewLoader: BatchSize %d must be positive", opts.BatchSize)
	}
	if x == nil {
		return nil, fmt.Errorf("NewLoader: nil inputs")
	}
	if opts.Ranks > 1 && (opts.Rank < 0 || opts.Rank >= opts.Ranks || !opts.DropLast) {
		return nil, fmt.Errorf("NewLoader: shard %d of %d ranks: want 0 <= Rank < Ranks, and DropLast", opts.Rank, opts.Ranks)
	}
	if opts.Ranks < 0 || (opts.Ranks <= 1 && opts.Rank != 0) {
		return nil, fmt.Errorf("NewLoader: shard %d of %d ranks: Rank must be 0 unless Ranks > 1", opts.Rank, opts.Ranks)
	}
	cx, err := checkRows("inputs", x)
	if err != nil {
		return nil, err
	}
	l := &Loader{x: cx, n: cx.Shape()[0], opts: opts}
	if opts.Augment != nil {
		a := *opts.Augment // the loader keeps its own copy
		l.opts.Augment = &a
		if l.augH, l.augW, l.augC, err = checkAugment(&a, cx); err != nil {
			return nil, err
		}
	}
	if y != nil {
		cy, err := checkRows("targets", y)
		if err != nil {
			return nil, err
		}
		if m := cy.Shape()[0]; m != l.n {
			return nil, fmt.Errorf("NewLoader: %d input rows but %d target rows", l.n, m)
		}
		l.y = cy
	}
	b := min(opts.BatchSize, max(l.n, 1))
	r := l.n % opts.BatchSize
	if l.fullX, l.partX, err = batchTensors(cx, b, r); err != nil {
		return nil, err
	}
	if l.y != nil {
		if l.fullY, l.partY, err = batchTensors(l.y, b, r); err != nil {
			return nil, err
		}
	}
	l.perm = make([]int, l.n)
	l.makePerm()
	return l, nil
}

func checkRows(what string, d *tensor.Dense) (*tensor.Dense, error) {
	if len(d.Shape()) == 0 {
		return nil, fmt.Errorf("NewLoader: %s must have a first (example) dimension, got a scalar", what)
	}
	c, err := tensorx.Contiguous(d)
	if err != nil {
		return nil, fmt.Errorf("NewLoader: %s: %w", what, err)
	}
	return c, nil
}

// batchTensors allocates one backing array of b rows of src and returns a
// [b, ...] tensor over it and, if r > 0, an [r, ...] tensor over its start.
func batchTensors(src *tensor.Dense, b, r int) (full, part *tensor.Dense, err error) {
	shape := tensorx.Shape(src)
	shape[0] = b
	if full, err = tensorx.Zeros(src.Dtype(), shape); err != nil {
		return nil, nil, fmt.Errorf("NewLoader: %w", err)
	}
	if r == 0 {
		return full, nil, nil
	}
	shape[0] = r
	rowLen := 1
	for _, d := range shape[1:] {
		rowLen *= d
	}
	switch src.Dtype() {
	case tensor.Float32:
		part, err = tensorx.New(shape, tensorx.MustSlice[float32](full)[:r*rowLen])
	case tensor.Float64:
		part, err = tensorx.New(shape, tensorx.MustSlice[float64](full)[:r*rowLen])
	case tensor.Int32:
		part, err = tensorx.New(shape, tensorx.MustSlice[int32](full)[:r*rowLen])
	case tensor.Int64:
		part, err = tensorx.New(shape, tensorx.MustSlice[int64](full)[:r*rowLen])
	case tensor.Bool:
		part, err = tensorx.New(shape, tensorx.MustSlice[bool](full)[:r*rowLen])
	}
	if err != nil {
		return nil, nil, fmt.Errorf("NewLoader: %w", err)
	}
	return full, part, nil
}

// makePerm sets perm to the visiting order of the current epoch: the
// identity, Fisher–Yates shuffled from PCG(Seed, epoch) when shuffling.
func (l *Loader) makePerm() {
	for i := range l.perm {
		l.perm[i] = i
	}
	if !l.opts.Shuffle {
		return
	}
	l.pcg.Seed(l.opts.Seed, uint64(l.epoch))
	for i := len(l.perm) - 1; i > 0; i-- {
		j := bounded(&l.pcg, uint64(i+1))
		l.perm[i], l.perm[j] = l.perm[j], l.perm[i]
	}
}

// bounded returns a uniform integer in [0, n) from src, by Lemire's
// multiply-and-reject method (written out so the order never depends on
// the Go release).
func bounded(src *rand.PCG, n uint64) int {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return int(hi)
}

// Next fills the batch with the next examples and returns true, or, at the
// end of an epoch, starts the next epoch and returns false.
func (l *Loader) Next() bool {
	bs := l.opts.BatchSize
	size := bs
	if l.opts.Ranks > 1 { // DropLast is set
		g := l.global()
		if l.pos+g > l.n {
			l.epoch++
			l.pos = 0
			l.makePerm()
			return false
		}
		start := l.pos + l.opts.Rank*bs
		idx := l.perm[start : start+bs]
		if l.opts.Augment.enabled() {
			l.augmentRows(l.fullX, idx)
		} else {
			gatherRows(l.fullX, l.x, idx)
		}
		if l.y != nil {
			gatherRows(l.fullY, l.y, idx)
		}
		l.batch = Batch{X: l.fullX, Y: l.fullY, Size: bs, Indices: idx}
		l.pos += g
		return true
	}
	if l.pos+bs > l.n {
		size = l.n - l.pos
		if size <= 0 || l.opts.DropLast {
			l.epoch++
			l.pos = 0
			l.makePerm()
			return false
		}
	}
	x, y := l.fullX, l.fullY
	if size < bs {
		x, y = l.partX, l.partY
	}
	idx := l.perm[l.pos : l.pos+size]
	if l.opts.Augment.enabled() {
		l.augmentRows(x, idx)
	} else {
		gatherRows(x, l.x, idx)
	}
	if l.y != nil {
		gatherRows(y, l.y, idx)
	}
	l.batch = Batch{X: x, Y: y, Size: size, Indices: idx}
	l.pos += size
	return true
}

func gatherRows(dst, src *tensor.Dense, idx []int) {
	switch src.Dtype() {
	case tensor.Float32:
		gather(tensorx.MustSlice[float32](dst), tensorx.MustSlice[float32](src), idx)
	case tensor.Float64:
		gather(tensorx.MustSlice[float64](dst), tensorx.MustSlice[float64](src), idx)
	case tensor.Int32:
		gather(tensorx.MustSlice[int32](dst), tensorx.MustSlice[int32](src), idx)
	case tensor.Int64:
		gather(tensorx.MustSlice[int64](dst), tensorx.MustSlice[int64](src), idx)
	case tensor.Bool:
		gather(tensorx.MustSlice[bool](dst), tensorx.MustSlice[bool](src), idx)
	}
}

func gather[T tensorx.Elem](dst, src []T, idx []int) {
	if len(idx) == 0 {
		return
	}
	row := len(dst) / len(idx)
	for k, i := range idx {
		copy(dst[k*row:(k+1)*row], src[i*row:(i+1)*row])
	}
}

// global returns the number of examples per step over all ranks.
func (l *Loader) global() int { return l.opts.BatchSize * max(l.opts.Ranks, 1) }

// Batch returns the batch filled by the last successful Next.
func (l *Loader) Batch() *Batch { return &l.batch }

// Len returns the number of examples.
func (l *Loader) Len() int { return l.n }

// NumBatches returns the number of batches per epoch.
func (l *Loader) NumBatches() int {
	if l.opts.DropLast {
		return l.n / l.global()
	}
	return (l.n + l.opts.BatchSize - 1) / l.opts.BatchSize
}

// Epoch returns the number of completed epochs.
func (l *Loader) Epoch() int { return l.epoch }

// Pos returns the number of examples of the current epoch delivered.
func (l *Loader) Pos() int { return l.pos }

// State returns the loader's position (seed, epoch, examples delivered).
func (l *Loader) State() LoaderState {
	return LoaderState{Seed: l.opts.Seed, Epoch: l.epoch, Pos: l.pos}
}

// SetState moves the loader to the position s (as returned by State, here
// or in an earlier run over the same data and batch size): the following
// batches are those that followed when s was taken. Pos must be a multiple
// of the batch size or the number of examples.
func (l *Loader) SetState(s LoaderState) error {
	if err := l.checkState(s); err != nil {
		return err
	}
	l.opts.Seed, l.epoch, l.pos = s.Seed, s.Epoch, s.Pos
	l.makePerm()
	return nil
}

// checkState reports an invalid position for SetState.
func (l *Loader) checkState(s LoaderState) error {
	if s.Epoch < 0 || s.Pos < 0 || s.Pos > l.n || (s.Pos%l.global() != 0 && s.Pos != l.n) {
		return fmt.Errorf("Loader.SetState: invalid position epoch %d, example %d (of %d, batch size %d)", s.Epoch, s.Pos, l.n, l.global())
	}
	return nil
}

// StateName returns the name of the loader's state in checkpoints:
// LoaderOptions.Name, or "loader". With SaveState, CheckState and
// LoadState it makes a *Loader an nn.CheckpointState: pass it to
// nn.SaveCheckpoint and nn.LoadCheckpoint to save and restore its
// position with the model.
func (l *Loader) StateName() string {
	if l.opts.Name == "" {
		return "loader"
	}
	return l.opts.Name
}

// SaveState returns the loader's position (State) as checkpoint entries:
// "seed", "epoch" and "pos", with "examples" and "batch_size" (the global
// batch: BatchSize·Ranks for a rank's shard), which CheckState compares
// with the loader it restores. So a data-parallel run can resume on
// another number of ranks with the same global batch (and one process
// with BatchSize·Ranks), from the same global position.
func (l *Loader) SaveState() (map[string]string, error) {
	s := l.State()
	return map[string]string{
		"seed":       strconv.FormatUint(s.Seed, 10),
		"epoch":      strconv.Itoa(s.Epoch),
		"pos":        strconv.Itoa(s.Pos),
		"examples":   strconv.Itoa(l.n),
		"batch_size": strconv.Itoa(l.global()),
	}, nil
}

// parseState reads SaveState's entries and checks them against l.
func (l *Loader) parseState(m map[string]string) (LoaderState, error) {
	var s LoaderState
	ints := map[string]int{}
	for _, k := range []string{"epoch", "pos", "examples", "batch_size"} {
		v, ok := m[k]
		if !ok {
			return s, fmt.Errorf("Loader: checkpoint state has no %q entry", k)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return s, fmt.Errorf("Loader: checkpoint state %q = %q: %w", k, v, err)
		}
		ints[k] = n
	}
	seed, err := strconv.ParseUint(m["seed"], 10, 64)
	if err != nil {
		return s, fmt.Errorf("Loader: checkpoint state \"seed\" = %q: %w", m["seed"], err)
	}
	if ints["examples"] != l.n || ints["batch_size"] != l.global() {
		return s, fmt.Errorf("Loader: checkpoint state is of a loader over %d examples in (global) batches of %d; this one has %d in batches of %d",
			ints["examples"], ints["batch_size"], l.n, l.global())
	}
	s = LoaderState{Seed: seed, Epoch: ints["epoch"], Pos: ints["pos"]}
	if err := l.checkState(s); err != nil {
		return s, err
	}
	return s, nil
}

// CheckState reports whether LoadState would accept the entries: saved
// by SaveState of a loader over as many examples in global batches of the
// same size, at a valid position. It changes nothing.
func (l *Loader) CheckState(m map[string]string) error {
	_, err := l.parseState(m)
	return err
}

// LoadState restores the position saved by SaveState (see SetState).
func (l *Loader) LoadState(m map[string]string) error {
	s, err := l.parseState(m)
	if err != nil {
		return err
	}
	return l.SetState(s)
}
