package data

import (
	"slices"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// TestShardedLoader: the shards of Ranks loaders of batch B together
// deliver, step by step, exactly the batches of one loader of batch
// B·Ranks (same rows, rank 0's first), for every epoch; State and
// SetState resume a shard where it was.
func TestShardedLoader(t *testing.T) {
	const n, b, ranks = 23, 2, 3
	xs := make([]float32, n*2)
	ys := make([]int32, n)
	for i := range ys {
		xs[2*i], xs[2*i+1], ys[i] = float32(i), float32(-i), int32(i)
	}
	x, err := tensorx.New([]int{n, 2}, xs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensorx.New([]int{n}, ys)
	if err != nil {
		t.Fatal(err)
	}
	opts := LoaderOptions{BatchSize: b * ranks, Shuffle: true, Seed: 5, DropLast: true}
	whole, err := NewLoader(x, y, opts)
	if err != nil {
		t.Fatal(err)
	}
	shards := make([]*Loader, ranks)
	for r := range shards {
		o := opts
		o.BatchSize, o.Rank, o.Ranks = b, r, ranks
		if shards[r], err = NewLoader(x, y, o); err != nil {
			t.Fatal(err)
		}
		if got, want := shards[r].NumBatches(), whole.NumBatches(); got != want {
			t.Fatalf("rank %d: %d batches per epoch, want %d", r, got, want)
		}
	}
	for epoch := range 3 {
		steps := 0
		for whole.Next() {
			want := whole.Batch()
			var rows []int32
			for r, s := range shards {
				if !s.Next() {
					t.Fatalf("epoch %d step %d: rank %d ended early", epoch, steps, r)
				}
				bt := s.Batch()
				if bt.Size != b {
					t.Fatalf("rank %d: batch of %d, want %d", r, bt.Size, b)
				}
				got := tensorx.MustSlice[int32](bt.Y)
				for k, v := range got {
					if xv := tensorx.MustSlice[float32](bt.X)[2*k]; xv != float32(v) {
						t.Fatalf("rank %d: row %d x %v does not match label %d", r, k, xv, v)
					}
				}
				rows = append(rows, got...)
				if s.Pos() != whole.Pos() {
					t.Errorf("rank %d: Pos %d, whole loader %d", r, s.Pos(), whole.Pos())
				}
			}
			if w := tensorx.MustSlice[int32](want.Y); !slices.Equal(rows, w) {
				t.Fatalf("epoch %d step %d: shards deliver %v, the whole batch is %v", epoch, steps, rows, w)
			}
			steps++
			if epoch == 1 && steps == 2 {
				// Resume a fresh shard of rank 1 from rank 0's state.
				o := opts
				o.BatchSize, o.Rank, o.Ranks = b, 1, ranks
				resumed, err := NewLoader(x, y, o)
				if err != nil {
					t.Fatal(err)
				}
				if err := resumed.SetState(shards[0].State()); err != nil {
					t.Fatal(err)
				}
				shards[1] = resumed
			}
		}
		if steps != n/(b*ranks) {
			t.Fatalf("epoch %d: %d steps, want %d", epoch, steps, n/(b*ranks))
		}
		for r, s := range shards {
			if s.Next() {
				t.Fatalf("epoch %d: rank %d has more batches than the whole loader", epoch, r)
			}
		}
	}
	for _, o := range []LoaderOptions{
		{BatchSize: 2, Rank: 0, Ranks: 2},                 // no DropLast
		{BatchSize: 2, Rank: 2, Ranks: 2, DropLast: true}, // rank out of range
		{BatchSize: 2, Rank: -1, Ranks: 2, DropLast: true},
		{BatchSize: 2, Rank: 1, Ranks: 1, DropLast: true},
		{BatchSize: 2, Ranks: -1},
	} {
		if _, err := NewLoader(x, y, o); err == nil || !strings.Contains(err.Error(), "ranks") {
			t.Errorf("%+v: error %v, want one about the shard", o, err)
		}
	}
	o := opts
	o.BatchSize, o.Rank, o.Ranks = b, 0, ranks
	l, err := NewLoader(x, y, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetState(LoaderState{Seed: 5, Pos: b}); err == nil {
		t.Error("SetState accepted a position inside a global batch")
	}
}

// TestShardedLoaderAugment: with augmentation, the shards of Ranks loaders
// deliver the same augmented images as one loader of batch B·Ranks (the
// crop, flip and erasing of an example depend on the seed, the epoch and its row
// only), so a data-parallel run trains on the same data as one process.
func TestShardedLoaderAugment(t *testing.T) {
	const n, h, w, b, ranks = 19, 5, 4, 2, 2
	xs := make([]float32, n*h*w)
	for i := range xs {
		xs[i] = float32(i%97) + 1
	}
	x, err := tensorx.New([]int{n, h, w, 1}, xs)
	if err != nil {
		t.Fatal(err)
	}
	opts := LoaderOptions{BatchSize: b * ranks, Shuffle: true, Seed: 9, DropLast: true,
		Augment: &Augment{Pad: 2, FlipHorizontal: true, Erase: 0.5}}
	whole, err := NewLoader(x, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	shards := make([]*Loader, ranks)
	for r := range shards {
		o := opts
		o.BatchSize, o.Rank, o.Ranks = b, r, ranks
		if shards[r], err = NewLoader(x, nil, o); err != nil {
			t.Fatal(err)
		}
	}
	row := h * w
	changed := 0
	for epoch := range 3 {
		for whole.Next() {
			want := tensorx.MustSlice[float32](whole.Batch().X)
			for r, s := range shards {
				if !s.Next() {
					t.Fatalf("epoch %d: rank %d ended early", epoch, r)
				}
				bt := s.Batch()
				got := tensorx.MustSlice[float32](bt.X)[:b*row]
				w := want[r*b*row : (r+1)*b*row]
				if !slices.Equal(got, w) {
					t.Fatalf("epoch %d: rank %d's augmented images differ from the whole loader's", epoch, r)
				}
				for k, i := range bt.Indices {
					if !slices.Equal(got[k*row:(k+1)*row], xs[i*row:(i+1)*row]) {
						changed++
					}
				}
			}
		}
		for _, s := range shards {
			s.Next()
		}
	}
	if changed == 0 {
		t.Fatal("no shard image was augmented")
	}
}

// TestShardedLoaderStateAcrossRanks: a shard's checkpoint state records
// the global batch, so it restores a loader on another number of ranks
// (or one process) with the same global batch, which then continues with
// the same global batches; a different global batch is refused.
func TestShardedLoaderStateAcrossRanks(t *testing.T) {
	const n = 23
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i)
	}
	x, err := tensorx.New([]int{n, 1}, xs)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(b, r, ranks int) *Loader {
		l, err := NewLoader(x, nil, LoaderOptions{BatchSize: b, Rank: r, Ranks: ranks, Shuffle: true, Seed: 3, DropLast: true})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	src := mk(2, 1, 2) // rank 1 of 2, global batch 4
	for range 3 {
		src.Next()
	}
	st, err := src.SaveState()
	if err != nil {
		t.Fatal(err)
	}
	ref := mk(4, 0, 1) // one process, batch 4, moved to the same place
	for range 3 {
		ref.Next()
	}
	for _, dst := range []*Loader{mk(4, 0, 1), mk(1, 3, 4)} {
		if err := dst.LoadState(st); err != nil {
			t.Fatalf("restore with %d ranks: %v", max(dst.opts.Ranks, 1), err)
		}
		if dst.Pos() != ref.Pos() {
			t.Fatalf("restored at %d, want %d", dst.Pos(), ref.Pos())
		}
	}
	one := mk(4, 0, 1)
	if err := one.LoadState(st); err != nil {
		t.Fatal(err)
	}
	for ref.Next() {
		if !one.Next() || !slices.Equal(tensorx.MustSlice[float32](one.Batch().X), tensorx.MustSlice[float32](ref.Batch().X)) {
			t.Fatal("a one-process loader restored from a shard's state delivers other batches")
		}
	}
	if err := mk(3, 0, 1).CheckState(st); err == nil || !strings.Contains(err.Error(), "batches of 4") {
		t.Fatalf("restoring into global batch 3: err = %v, want a refusal naming batches of 4", err)
	}
}
