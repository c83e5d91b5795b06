package data

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

func TestLoadMNIST(t *testing.T) {
	dir := t.TempDir()
	// 3 images of 2x2 and their labels.
	px := []byte{0, 255, 51, 102, 1, 2, 3, 4, 250, 251, 252, 253}
	images := idxBytes(0x08, []uint32{3, 2, 2}, px)
	labels := idxBytes(0x08, []uint32{3}, []byte{7, 0, 9})
	writeFile(t, dir, "train-images-idx3-ubyte.gz", gz(t, images))
	writeFile(t, dir, "train-labels-idx1-ubyte", labels)
	writeFile(t, dir, "t10k-images-idx3-ubyte", idxBytes(0x08, []uint32{1, 2, 2}, px[:4]))
	writeFile(t, dir, "t10k-labels-idx1-ubyte.gz", gz(t, idxBytes(0x08, []uint32{1}, []byte{5})))

	ds, err := LoadMNISTDir(dir, "train")
	if err != nil {
		t.Fatal(err)
	}
	if !tensorx.SameShape(ds.Images.Shape(), []int{3, 2, 2, 1}) || ds.Images.Dtype() != tensor.Float32 || ds.Len() != 3 {
		t.Fatalf("images %v %v", ds.Images.Shape(), ds.Images.Dtype())
	}
	got := tensorx.MustSlice[float32](ds.Images)
	for i, v := range px {
		if want := float32(v) / 255; got[i] != want {
			t.Errorf("pixel %d = %v, want %v", i, got[i], want)
		}
	}
	if got[0] != 0 || got[1] != 1 || got[2] != 0.2 {
		t.Errorf("scaling: %v", got[:3])
	}
	if l := tensorx.MustSlice[int32](ds.Labels); ds.Labels.Dtype() != tensor.Int32 || !slices.Equal(l, []int32{7, 0, 9}) {
		t.Errorf("labels %v %v", ds.Labels.Dtype(), l)
	}
	test, err := LoadMNISTDir(dir, "test")
	if err != nil || test.Len() != 1 || tensorx.MustSlice[int32](test.Labels)[0] != 5 {
		t.Fatalf("test split: %v", err)
	}

	bad := []struct {
		name, images, labels string
		imB, lbB             []byte
		want                 string
	}{
		{"count mismatch", "i", "l", images, idxBytes(0x08, []uint32{2}, []byte{1, 2}), "3 images in"},
		{"images rank", "i", "l", idxBytes(0x08, []uint32{3, 4}, px), labels, "images must be ubyte with 3 dimensions"},
		{"images type", "i", "l", idxBytes(0x0C, []uint32{3, 1, 1}, px), labels, "images must be ubyte"},
		{"labels rank", "i", "l", images, idxBytes(0x08, []uint32{3, 1}, []byte{1, 2, 3}), "labels must be ubyte with 1 dimension"},
		{"malformed images", "i", "l", images[:20], labels, "truncated"},
	}
	for _, c := range bad {
		ip := writeFile(t, dir, c.images, c.imB)
		lp := writeFile(t, dir, c.labels, c.lbB)
		_, err := LoadMNIST(ip, lp)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrFormat containing %q", c.name, err, c.want)
		}
	}
	if _, err := LoadMNISTDir(dir, "validation"); err == nil || !strings.Contains(err.Error(), "unknown split") {
		t.Errorf("unknown split: %v", err)
	}
	if _, err := LoadMNISTDir(t.TempDir(), "train"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz") {
		t.Errorf("empty directory: %v", err)
	}
}

// dataset makes n rows: x[i] = [i, 100+i] (float32) and y[i] = i (int32).
func dataset(t testing.TB, n int) (*tensor.Dense, *tensor.Dense) {
	t.Helper()
	xs := make([]float32, 2*n)
	ys := make([]int32, n)
	for i := range n {
		xs[2*i], xs[2*i+1], ys[i] = float32(i), float32(100+i), int32(i)
	}
	x, err := tensorx.New([]int{n, 2}, xs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensorx.New([]int{n}, ys)
	if err != nil {
		t.Fatal(err)
	}
	return x, y
}

// epochOrders runs epochs epochs and returns each epoch's visiting order,
// checking every batch's content against its indices.
func epochOrders(t testing.TB, l *Loader, epochs int) [][]int {
	t.Helper()
	var out [][]int
	for range epochs {
		var order []int
		for l.Next() {
			b := l.Batch()
			xs, ys := tensorx.MustSlice[float32](b.X), tensorx.MustSlice[int32](b.Y)
			if b.X.Shape()[0] != b.Size || b.Y.Shape()[0] != b.Size || len(b.Indices) != b.Size {
				t.Fatalf("batch of %d with shapes %v %v", b.Size, b.X.Shape(), b.Y.Shape())
			}
			for k, i := range b.Indices {
				if xs[2*k] != float32(i) || xs[2*k+1] != float32(100+i) || ys[k] != int32(i) {
					t.Fatalf("row %d holds %v %v %v, want example %d", k, xs[2*k], xs[2*k+1], ys[k], i)
				}
			}
			order = append(order, b.Indices...)
		}
		out = append(out, order)
	}
	return out
}

func TestLoaderBatches(t *testing.T) {
	x, y := dataset(t, 10)
	cases := []struct {
		opts    LoaderOptions
		sizes   []int
		batches int
	}{
		{LoaderOptions{BatchSize: 4}, []int{4, 4, 2}, 3},
		{LoaderOptions{BatchSize: 4, DropLast: true}, []int{4, 4}, 2},
		{LoaderOptions{BatchSize: 5}, []int{5, 5}, 2},
		{LoaderOptions{BatchSize: 5, DropLast: true}, []int{5, 5}, 2},
		{LoaderOptions{BatchSize: 32}, []int{10}, 1},
		{LoaderOptions{BatchSize: 32, DropLast: true}, nil, 0},
		{LoaderOptions{BatchSize: 3, Shuffle: true, Seed: 9}, []int{3, 3, 3, 1}, 4},
	}
	for _, c := range cases {
		l, err := NewLoader(x, y, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if l.NumBatches() != c.batches || l.Len() != 10 {
			t.Errorf("%+v: NumBatches %d, want %d", c.opts, l.NumBatches(), c.batches)
		}
		for epoch := range 2 {
			var sizes []int
			var order []int
			for l.Next() {
				sizes = append(sizes, l.Batch().Size)
				order = append(order, l.Batch().Indices...)
			}
			if !slices.Equal(sizes, c.sizes) {
				t.Errorf("%+v epoch %d: sizes %v, want %v", c.opts, epoch, sizes, c.sizes)
			}
			if !c.opts.Shuffle && len(order) > 0 {
				for i, v := range order {
					if v != i {
						t.Errorf("%+v: unshuffled order %v", c.opts, order)
						break
					}
				}
			}
			if l.Epoch() != epoch+1 || l.Pos() != 0 {
				t.Errorf("%+v: after epoch %d: Epoch %d Pos %d", c.opts, epoch, l.Epoch(), l.Pos())
			}
		}
	}
	// Batch contents, targets absent.
	l, err := NewLoader(x, nil, LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for l.Next() {
		b := l.Batch()
		if b.Y != nil {
			t.Fatal("targets without a target tensor")
		}
		xs := tensorx.MustSlice[float32](b.X)
		for k, i := range b.Indices {
			if xs[2*k] != float32(i) {
				t.Fatalf("row %d: %v, want %d", k, xs[2*k], i)
			}
		}
	}
}

func TestLoaderShuffleDeterminism(t *testing.T) {
	x, y := dataset(t, 23)
	run := func(seed uint64) [][]int {
		l, err := NewLoader(x, y, LoaderOptions{BatchSize: 5, Shuffle: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return epochOrders(t, l, 3)
	}
	a, b, c := run(42), run(42), run(43)
	for e := range a {
		if !slices.Equal(a[e], b[e]) {
			t.Errorf("epoch %d: same seed, different orders", e)
		}
		if slices.Equal(a[e], c[e]) {
			t.Errorf("epoch %d: seeds 42 and 43 give the same order", e)
		}
		sorted := slices.Sorted(slices.Values(a[e]))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("epoch %d is not a permutation: %v", e, a[e])
			}
		}
	}
	if slices.Equal(a[0], a[1]) || slices.Equal(a[1], a[2]) {
		t.Error("epochs repeat the same order")
	}
	// The order is a function of (seed, epoch) fixed by this package's own
	// code (PCG and Fisher–Yates written out), so it never changes across
	// Go releases; this pins it.
	l, _ := NewLoader(x, y, LoaderOptions{BatchSize: 23, Shuffle: true, Seed: 1})
	l.Next()
	want := fmt.Sprint(pinnedOrder)
	if got := fmt.Sprint(l.Batch().Indices); got != want {
		t.Errorf("seed 1 epoch 0 order %s, pinned %s", got, want)
	}
}

var pinnedOrder = []int{3, 8, 12, 11, 14, 2, 5, 20, 7, 16, 10, 19, 6, 21, 4, 17, 18, 9, 22, 0, 15, 1, 13}

func TestLoaderResume(t *testing.T) {
	x, y := dataset(t, 17)
	opts := LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 7}
	ref, _ := NewLoader(x, y, opts)
	all := epochOrders(t, ref, 4)

	for _, stop := range []int{0, 1, 5, 6, 9} { // batches consumed before saving
		l, _ := NewLoader(x, y, opts)
		var seen []int
		for n := 0; n < stop; {
			if l.Next() {
				n++
				seen = append(seen, l.Batch().Indices...)
			}
		}
		st := l.State()
		// A new loader (another run) resumes from the saved state.
		r, _ := NewLoader(x, y, LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 999})
		if err := r.SetState(st); err != nil {
			t.Fatal(err)
		}
		if r.State() != st {
			t.Errorf("State after SetState %+v, want %+v", r.State(), st)
		}
		rest := epochOrders(t, r, 4-st.Epoch)
		var flat, want []int
		flat = append(flat, seen...)
		for _, o := range rest {
			flat = append(flat, o...)
		}
		for _, o := range all {
			want = append(want, o...)
		}
		if !slices.Equal(flat, want) {
			t.Errorf("resumed after %d batches (state %+v): the sequence differs", stop, st)
		}
	}
	l, _ := NewLoader(x, y, opts)
	for _, s := range []LoaderState{{Epoch: -1}, {Pos: -4}, {Pos: 18}, {Pos: 3}} {
		if err := l.SetState(s); err == nil {
			t.Errorf("SetState(%+v) accepted", s)
		}
	}
	if err := l.SetState(LoaderState{Pos: 17, Epoch: 2}); err != nil {
		t.Errorf("end-of-epoch position: %v", err)
	}
	if l.Next() || l.Epoch() != 3 {
		t.Errorf("at the end of an epoch Next must start the next one")
	}
}

func TestLoaderAllocatesNothing(t *testing.T) {
	x, y := dataset(t, 50)
	for _, opts := range []LoaderOptions{
		{BatchSize: 8, Shuffle: true, Seed: 1},
		{BatchSize: 8, Shuffle: true, Seed: 1, DropLast: true},
		{BatchSize: 7},
	} {
		l, err := NewLoader(x, y, opts)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() { l.Next() }) // crosses several epochs
		if allocs != 0 {
			t.Errorf("%+v: %v allocations per Next", opts, allocs)
		}
	}
}

func TestLoaderDtypes(t *testing.T) {
	mk := func(d *tensor.Dense, err error) *tensor.Dense {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	xs := []*tensor.Dense{
		mk(tensorx.New([]int{3, 1}, []float64{0, 1, 2})),
		mk(tensorx.New([]int{3}, []int64{0, 1, 2})),
		mk(tensorx.New([]int{3, 1, 1}, []bool{false, true, true})),
	}
	for _, x := range xs {
		l, err := NewLoader(x, nil, LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		for l.Next() {
			b := l.Batch()
			vals, _ := tensorx.Float64s(b.X)
			for k, i := range b.Indices {
				want := float64(i)
				if x.Dtype() == tensor.Bool {
					want = min(want, 1)
				}
				if vals[k] != want {
					t.Errorf("%v: row %d = %v, want %v", x.Dtype(), k, vals[k], want)
				}
			}
		}
	}
}

func TestNewLoaderErrors(t *testing.T) {
	x, y := dataset(t, 4)
	_, y3 := dataset(t, 3)
	scalar, _ := tensorx.New([]int{}, []float32{1})
	cases := []struct {
		name string
		x, y *tensor.Dense
		bs   int
		want string
	}{
		{"batch size", x, y, 0, "BatchSize 0"},
		{"nil inputs", nil, y, 2, "nil inputs"},
		{"scalar", scalar, nil, 2, "first (example) dimension"},
		{"rows", x, y3, 2, "4 input rows but 3 target rows"},
	}
	for _, c := range cases {
		if _, err := NewLoader(c.x, c.y, LoaderOptions{BatchSize: c.bs}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// An empty dataset is valid and yields no batches.
	e, _ := dataset(t, 0)
	l, err := NewLoader(e, nil, LoaderOptions{BatchSize: 4})
	if err != nil || l.Next() || l.NumBatches() != 0 {
		t.Errorf("empty dataset: %v", err)
	}
}
