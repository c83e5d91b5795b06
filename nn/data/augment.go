package data

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Augment is the random image augmentation a Loader applies to the
// inputs of each training example as it copies it into a batch: a random
// crop of the image zero-padded by Pad pixels on each side (the shift of
// torchvision's RandomCrop(size, padding=Pad)), then, with FlipHorizontal,
// a left-right mirror with probability 1/2 (RandomHorizontalFlip).
//
// The inputs must be images [N, H, W] or [N, H, W, C] (channels last) of
// dtype float32 or float64; the padding is zeros. The choices for an
// example depend only on the loader's Seed, the epoch and the example's
// dataset row, so they do not depend on the batch size, and a loader moved
// with SetState delivers the same augmented batches as before. Augmenting
// allocates nothing.
type Augment struct {
	// Pad is the largest shift of the random crop, in pixels, each way
	// along height and width (0: no crop).
	Pad int
	// FlipHorizontal mirrors each image left-right with probability 1/2.
	FlipHorizontal bool
}

// augmentSalt separates the augmentation's random streams from the
// shuffles' (PCG(Seed, epoch)).
const augmentSalt = 0x9e3779b97f4a7c15

// enabled reports whether a does anything.
func (a *Augment) enabled() bool { return a != nil && (a.Pad > 0 || a.FlipHorizontal) }

// checkAugment validates a against the inputs x and returns the image
// height and width and the channel count.
func checkAugment(a *Augment, x *tensor.Dense) (h, w, c int, err error) {
	if a.Pad < 0 {
		return 0, 0, 0, fmt.Errorf("NewLoader: Augment.Pad %d must not be negative", a.Pad)
	}
	if dt := x.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return 0, 0, 0, fmt.Errorf("NewLoader: Augment needs float32 or float64 inputs, got %v", dt)
	}
	s := x.Shape()
	switch len(s) {
	case 3:
		h, w, c = s[1], s[2], 1
	case 4:
		h, w, c = s[1], s[2], s[3]
	default:
		return 0, 0, 0, fmt.Errorf("NewLoader: Augment needs inputs [N, H, W] or [N, H, W, C], got shape %v", s)
	}
	return h, w, c, nil
}

// augmentRows writes the augmented images of src's rows idx into dst's
// rows (dst's row k from src's row idx[k]).
func (l *Loader) augmentRows(dst *tensor.Dense, idx []int) {
	switch l.x.Dtype() {
	case tensor.Float32:
		augmentGather(l, tensorx.MustSlice[float32](dst), tensorx.MustSlice[float32](l.x), idx)
	case tensor.Float64:
		augmentGather(l, tensorx.MustSlice[float64](dst), tensorx.MustSlice[float64](l.x), idx)
	}
}

func augmentGather[T float32 | float64](l *Loader, dst, src []T, idx []int) {
	h, w, c := l.augH, l.augW, l.augC
	row := h * w * c
	pad := l.opts.Augment.Pad
	flip := l.opts.Augment.FlipHorizontal
	for k, i := range idx {
		// One PCG stream per (epoch, example): the shift along height and
		// width, then the flip.
		l.augPCG.Seed(l.opts.Seed^augmentSalt, uint64(l.epoch)*uint64(l.n)+uint64(i))
		dy, dx := 0, 0
		if pad > 0 {
			dy = bounded(&l.augPCG, uint64(2*pad+1)) - pad
			dx = bounded(&l.augPCG, uint64(2*pad+1)) - pad
		}
		mirror := flip && l.augPCG.Uint64()>>63 == 1
		shiftImage(dst[k*row:(k+1)*row], src[i*row:(i+1)*row], h, w, c, dy, dx, mirror)
	}
}

// shiftImage sets out(y, x) = in(y+dy, x'+dx) with x' = w-1-x when mirror
// and x otherwise, and zero where that falls outside the image.
func shiftImage[T float32 | float64](out, in []T, h, w, c, dy, dx int, mirror bool) {
	for y := range h {
		o := out[y*w*c : (y+1)*w*c]
		sy := y + dy
		if sy < 0 || sy >= h {
			clear(o)
			continue
		}
		r := in[sy*w*c : (sy+1)*w*c]
		if !mirror {
			// out x takes in x+dx: the valid x are [max(0,-dx), min(w, w-dx)).
			lo, hi := max(0, -dx), min(w, w-dx)
			if lo >= hi {
				clear(o)
				continue
			}
			clear(o[:lo*c])
			copy(o[lo*c:hi*c], r[(lo+dx)*c:(hi+dx)*c])
			clear(o[hi*c:])
			continue
		}
		for x := range w {
			sx := w - 1 - x + dx
			ox := o[x*c : (x+1)*c]
			if sx < 0 || sx >= w {
				clear(ox)
				continue
			}
			copy(ox, r[sx*c:(sx+1)*c])
		}
	}
}
