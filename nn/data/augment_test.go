package data

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// refAugment is the naive reference of one augmented image: zero-pad the
// [h, w, c] image by pad on every side, crop the h×w window at offset
// (oy, ox) of the padded image, then mirror it left-right if flip.
func refAugment(in []float64, h, w, c, pad, oy, ox int, flip bool) []float64 {
	ph, pw := h+2*pad, w+2*pad
	padded := make([]float64, ph*pw*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				padded[((y+pad)*pw+x+pad)*c+k] = in[(y*w+x)*c+k]
			}
		}
	}
	crop := make([]float64, h*w*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				crop[(y*w+x)*c+k] = padded[((y+oy)*pw+x+ox)*c+k]
			}
		}
	}
	if !flip {
		return crop
	}
	out := make([]float64, h*w*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				out[(y*w+x)*c+k] = crop[(y*w+w-1-x)*c+k]
			}
		}
	}
	return out
}

// randomImages returns n images [n, h, w, c] (or [n, h, w] if c == 0)
// with distinct nonzero pixel values, as float64 and as dtype dt.
func randomImages(t *testing.T, dt tensor.Dtype, n, h, w, c int) ([]float64, *tensor.Dense) {
	t.Helper()
	cc := max(c, 1)
	r := rand.New(rand.NewSource(7))
	vals := make([]float64, n*h*w*cc)
	for i := range vals {
		vals[i] = 1 + float64(i) + r.Float64()*0.5 // distinct, never 0
	}
	shape := []int{n, h, w, c}
	if c == 0 {
		shape = shape[:3]
	}
	var d *tensor.Dense
	var err error
	if dt == tensor.Float32 {
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
			vals[i] = float64(f[i])
		}
		d, err = tensorx.New(shape, f)
	} else {
		d, err = tensorx.New(shape, slices.Clone(vals))
	}
	if err != nil {
		t.Fatal(err)
	}
	return vals, d
}

func batchFloat64s(b *Batch) []float64 {
	if b.X.Dtype() == tensor.Float64 {
		return slices.Clone(tensorx.MustSlice[float64](b.X))
	}
	f := tensorx.MustSlice[float32](b.X)
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// TestAugmentMatchesReference checks every augmented image against the
// naive pad-crop-flip reference: each must equal exactly one of the
// (2·pad+1)²·2 candidate images of its source row, and over many epochs
// every candidate turns up, with flips about half the time.
func TestAugmentMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		dt         tensor.Dtype
		h, w, c    int
		pad        int
		flip       bool
		candidates int
	}{
		{tensor.Float32, 5, 6, 2, 2, true, 50},
		{tensor.Float64, 4, 3, 0, 1, true, 18},
		{tensor.Float64, 4, 4, 1, 0, true, 2},
		{tensor.Float32, 3, 5, 3, 1, false, 9},
		{tensor.Float32, 2, 2, 1, 3, false, 49}, // pad beyond the image: some crops are all zeros
	} {
		const n, batch, epochs = 7, 3, 400
		vals, x := randomImages(t, tc.dt, n, tc.h, tc.w, tc.c)
		y, err := tensorx.New([]int{n}, []int32{0, 1, 2, 3, 4, 5, 6})
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLoader(x, y, LoaderOptions{BatchSize: batch, Shuffle: true, Seed: 11, Augment: &Augment{Pad: tc.pad, FlipHorizontal: tc.flip}})
		if err != nil {
			t.Fatal(err)
		}
		c := max(tc.c, 1)
		row := tc.h * tc.w * c
		seen := map[[3]int]int{}
		flips, total := 0, 0
		for e := 0; e < epochs; e++ {
			for l.Next() {
				b := l.Batch()
				got := batchFloat64s(b)
				labels := tensorx.MustSlice[int32](b.Y)
				for k, i := range b.Indices {
					if int(labels[k]) != i {
						t.Fatalf("%v: label %d for row %d", tc, labels[k], i)
					}
					g := got[k*row : (k+1)*row]
					src := vals[i*row : (i+1)*row]
					var match [][3]int
					for oy := 0; oy <= 2*tc.pad; oy++ {
						for ox := 0; ox <= 2*tc.pad; ox++ {
							for f := 0; f < 2; f++ {
								if f == 1 && !tc.flip {
									continue
								}
								if slices.Equal(g, refAugment(src, tc.h, tc.w, c, tc.pad, oy, ox, f == 1)) {
									match = append(match, [3]int{oy, ox, f})
								}
							}
						}
					}
					if len(match) == 0 {
						t.Fatalf("%+v: epoch %d row %d: augmented image %v is no pad-crop-flip of %v", tc, e, i, g, src)
					}
					if len(match) == 1 {
						seen[match[0]]++
						flips += match[0][2]
						total++
					}
				}
			}
		}
		if tc.pad < max(tc.h, tc.w) && len(seen) != tc.candidates {
			t.Errorf("%+v: %d of the %d crops and flips turned up: %v", tc, len(seen), tc.candidates, seen)
		}
		if tc.flip && (flips < total*4/10 || flips > total*6/10) {
			t.Errorf("%+v: %d flips in %d images", tc, flips, total)
		}
		if !tc.flip && flips != 0 {
			t.Errorf("%+v: %d flips without FlipHorizontal", tc, flips)
		}
	}
}

// TestAugmentDeterministic checks that an example's augmentation depends
// only on the seed, the epoch and its row: not on the batch size, and the
// same after SetState; and that it changes from epoch to epoch.
func TestAugmentDeterministic(t *testing.T) {
	const n = 10
	_, x := randomImages(t, tensor.Float32, n, 6, 6, 1)
	aug := &Augment{Pad: 2, FlipHorizontal: true, Erase: 0.5}
	// per (epoch, row) image from a loader of batch size bs
	images := func(bs int, seed uint64) map[[2]int][]float64 {
		l, err := NewLoader(x, nil, LoaderOptions{BatchSize: bs, Shuffle: true, Seed: seed, Augment: aug})
		if err != nil {
			t.Fatal(err)
		}
		m := map[[2]int][]float64{}
		for e := 0; e < 3; e++ {
			for l.Next() {
				b := l.Batch()
				g := batchFloat64s(b)
				row := len(g) / b.Size
				for k, i := range b.Indices {
					m[[2]int{e, i}] = g[k*row : (k+1)*row]
				}
			}
		}
		return m
	}
	a, b, other := images(3, 5), images(4, 5), images(3, 6)
	changed, differs := 0, 0
	for key, v := range a {
		if !slices.Equal(v, b[key]) {
			t.Fatalf("epoch %d row %d: batch size 3 and 4 give different augmentations", key[0], key[1])
		}
		if key[0] > 0 && !slices.Equal(v, a[[2]int{0, key[1]}]) {
			changed++
		}
		if !slices.Equal(v, other[key]) {
			differs++
		}
	}
	if changed < n {
		t.Errorf("only %d of %d later-epoch images differ from epoch 0's", changed, 2*n)
	}
	if differs < n {
		t.Errorf("only %d of %d images differ between seeds 5 and 6", differs, 3*n)
	}

	// SetState: a fresh loader moved to the position of the first one
	// delivers the same batches.
	l1, _ := NewLoader(x, nil, LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 9, Augment: aug})
	for range 7 { // into the second epoch
		if !l1.Next() {
			l1.Next()
		}
	}
	l2, _ := NewLoader(x, nil, LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 1, Augment: aug})
	if err := l2.SetState(l1.State()); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		n1, n2 := l1.Next(), l2.Next()
		if n1 != n2 {
			t.Fatal("loaders disagree on the epoch end")
		}
		if n1 && !slices.Equal(batchFloat64s(l1.Batch()), batchFloat64s(l2.Batch())) {
			t.Fatal("restored loader delivers other augmented batches")
		}
	}
}

// TestAugmentOffIsPlainCopy: Pad 0 without flips delivers the rows as
// they are.
func TestAugmentOffIsPlainCopy(t *testing.T) {
	vals, x := randomImages(t, tensor.Float64, 5, 3, 3, 2)
	l, err := NewLoader(x, nil, LoaderOptions{BatchSize: 5, Augment: &Augment{}})
	if err != nil {
		t.Fatal(err)
	}
	l.Next()
	if !slices.Equal(batchFloat64s(l.Batch()), vals) {
		t.Fatal("Augment{} changed the images")
	}
}

func TestAugmentErrors(t *testing.T) {
	_, img := randomImages(t, tensor.Float32, 4, 3, 3, 1)
	flat, _ := tensorx.New([]int{4, 9}, make([]float32, 36))
	ints, _ := tensorx.New([]int{4, 3, 3}, make([]int32, 36))
	for _, tc := range []struct {
		x    *tensor.Dense
		a    Augment
		want string
	}{
		{img, Augment{Pad: -1}, "Augment.Pad -1 must not be negative"},
		{img, Augment{Erase: -0.1}, "Augment.Erase -0.1 must be a probability in [0, 1]"},
		{img, Augment{Erase: 1.5}, "Augment.Erase 1.5 must be a probability in [0, 1]"},
		{img, Augment{Erase: math.NaN()}, "Augment.Erase NaN must be a probability in [0, 1]"},
		{flat, Augment{Pad: 1}, "Augment needs inputs [N, H, W] or [N, H, W, C], got shape (4, 9)"},
		{ints, Augment{FlipHorizontal: true}, "Augment needs float32 or float64 inputs, got int32"},
	} {
		_, err := NewLoader(tc.x, nil, LoaderOptions{BatchSize: 2, Augment: &tc.a})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "NewLoader: ") {
			t.Errorf("%+v: error %v, want NewLoader: ...%s", tc.a, err, tc.want)
		}
	}
}

// TestAugmentNoAllocs: augmented batches, across epoch ends, allocate
// nothing.
func TestAugmentNoAllocs(t *testing.T) {
	_, x := randomImages(t, tensor.Float32, 20, 8, 8, 1)
	y, _ := tensorx.New([]int{20}, make([]int32, 20))
	l, err := NewLoader(x, y, LoaderOptions{BatchSize: 6, Shuffle: true, Seed: 3, Augment: &Augment{Pad: 2, FlipHorizontal: true, Erase: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { l.Next() }); allocs != 0 {
		t.Fatalf("Next with augmentation allocates %v times per call", allocs)
	}
}

// TestAugmentErase checks random erasing against its definition: with
// probability Erase one rectangle strictly inside the image, in every
// channel, is zero and every other pixel is the (flipped) source; the
// rectangles' areas, aspect ratios and placement follow the distribution
// of a float64 simulation of torchvision's RandomErasing.get_params.
func TestAugmentErase(t *testing.T) {
	for _, tc := range []struct {
		dt      tensor.Dtype
		h, w, c int
		erase   float64
	}{
		{tensor.Float32, 28, 28, 0, 0.5},
		{tensor.Float64, 12, 9, 2, 1},
		{tensor.Float32, 7, 16, 3, 0.25},
	} {
		const n, epochs = 40, 60
		vals, x := randomImages(t, tc.dt, n, tc.h, tc.w, tc.c)
		l, err := NewLoader(x, nil, LoaderOptions{BatchSize: 7, Shuffle: true, Seed: 4, Augment: &Augment{FlipHorizontal: true, Erase: tc.erase}})
		if err != nil {
			t.Fatal(err)
		}
		c := max(tc.c, 1)
		row := tc.h * tc.w * c
		var images, erased int
		var areaSum float64
		sawTop, sawBottom, sawLeft, sawRight := false, false, false, false
		for e := 0; e < epochs; e++ {
			for l.Next() {
				b := l.Batch()
				got := batchFloat64s(b)
				for k, i := range b.Indices {
					g := got[k*row : (k+1)*row]
					src := vals[i*row : (i+1)*row]
					images++
					y0, x0, y1, x1, zeros := tc.h, tc.w, -1, -1, 0
					for y := 0; y < tc.h; y++ {
						for xx := 0; xx < tc.w; xx++ {
							px := g[(y*tc.w+xx)*c : (y*tc.w+xx+1)*c]
							nz := 0
							for _, v := range px {
								if v == 0 {
									nz++
								}
							}
							if nz != 0 && nz != c {
								t.Fatalf("%+v: pixel (%d, %d) erased in %d of %d channels", tc, y, xx, nz, c)
							}
							if nz == c {
								zeros++
								y0, x0, y1, x1 = min(y0, y), min(x0, xx), max(y1, y+1), max(x1, xx+1)
							}
						}
					}
					// The pixels outside the rectangle are the source, flipped or not.
					plain := refAugment(src, tc.h, tc.w, c, 0, 0, 0, false)
					mirror := refAugment(src, tc.h, tc.w, c, 0, 0, 0, true)
					okPlain, okMirror := true, true
					for j, v := range g {
						if v == 0 {
							continue
						}
						okPlain = okPlain && v == plain[j]
						okMirror = okMirror && v == mirror[j]
					}
					if !okPlain && !okMirror {
						t.Fatalf("%+v: image of row %d is neither the source nor its mirror outside its zeros", tc, i)
					}
					if zeros == 0 {
						continue
					}
					eh, ew := y1-y0, x1-x0
					if zeros != eh*ew {
						t.Fatalf("%+v: %d zero pixels do not fill their %dx%d bounding box", tc, zeros, eh, ew)
					}
					if eh >= tc.h || ew >= tc.w {
						t.Fatalf("%+v: erased %dx%d of a %dx%d image", tc, eh, ew, tc.h, tc.w)
					}
					erased++
					areaSum += float64(zeros) / float64(tc.h*tc.w)
					sawTop, sawLeft = sawTop || y0 == 0, sawLeft || x0 == 0
					sawBottom, sawRight = sawBottom || y1 == tc.h, sawRight || x1 == tc.w
				}
			}
		}
		wantErased, wantArea := eraseSimulation(tc.h, tc.w, tc.erase)
		if got := float64(erased) / float64(images); math.Abs(got-wantErased) > 0.03 {
			t.Errorf("%+v: %.3f of the images erased, want %.3f", tc, got, wantErased)
		}
		if got := areaSum / float64(erased); math.Abs(got-wantArea) > 0.01 {
			t.Errorf("%+v: mean erased area %.4f of the image, want %.4f", tc, got, wantArea)
		}
		if !sawTop || !sawBottom || !sawLeft || !sawRight {
			t.Errorf("%+v: rectangles never touch some edge (top %v bottom %v left %v right %v)", tc, sawTop, sawBottom, sawLeft, sawRight)
		}
	}
}

// eraseSimulation estimates, in float64 with math/rand, the probability
// that an h×w image is erased with Augment.Erase p and the mean erased
// fraction of an erased image, following RandomErasing.get_params: up to
// ten draws of area·U(0.02, 0.33) and exp(U(ln 0.3, ln 3.3)), rounded
// sides, the first strictly inside the image taken.
func eraseSimulation(h, w int, p float64) (erased, area float64) {
	r := rand.New(rand.NewSource(99))
	const trials = 200000
	hits, sum := 0, 0.0
	for range trials {
		for range 10 {
			a := float64(h*w) * (0.02 + 0.31*r.Float64())
			ratio := math.Exp(math.Log(0.3) + r.Float64()*(math.Log(3.3)-math.Log(0.3)))
			eh, ew := int(math.Round(math.Sqrt(a*ratio))), int(math.Round(math.Sqrt(a/ratio)))
			if eh < h && ew < w {
				hits++
				sum += float64(eh*ew) / float64(h*w)
				break
			}
		}
	}
	return p * float64(hits) / trials, sum / float64(hits)
}
