package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Augment is the random image augmentation a Loader applies to the
// inputs of each training example as it copies it into a batch: a random
// crop of the image zero-padded by Pad pixels on each side (the shift of
// torchvision's RandomCrop(size, padding=Pad)), then, with FlipHorizontal,
// a left-right mirror with probability 1/2 (RandomHorizontalFlip), then,
// with probability Erase, a random rectangle set to zero (RandomErasing).
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
	// Erase is the probability, in [0, 1], with which a random rectangle
	// of the (cropped and flipped) image is set to zero in every channel:
	// torchvision's RandomErasing(p=Erase) with its defaults. Up to 10
	// draws of an area uniform in [0.02, 0.33] of the image and an aspect
	// ratio (height/width) log-uniform in [0.3, 3.3] give a rectangle of
	// height round(√(area·ratio)) and width round(√(area/ratio)); the
	// first that fits strictly inside the image is placed uniformly at
	// random, and if none fits the image is left as it is. 0: never.
	Erase float64
}

// Random erasing's ranges (torchvision's RandomErasing defaults).
const (
	eraseAttempts              = 10
	eraseAreaLo, eraseAreaHi   = 0.02, 0.33
	eraseRatioLo, eraseRatioHi = 0.3, 3.3
)

// augmentSalt separates the augmentation's random streams from the
// shuffles' (PCG(Seed, epoch)).
const augmentSalt = 0x9e3779b97f4a7c15

// enabled reports whether a does anything.
func (a *Augment) enabled() bool { return a != nil && (a.Pad > 0 || a.FlipHorizontal || a.Erase > 0) }

// checkAugment validates a against the inputs x and returns the image
// height and width and the channel count.
func checkAugment(a *Augment, x *tensor.Dense) (h, w, c int, err error) {
	if a.Pad < 0 {
		return 0, 0, 0, fmt.Errorf("NewLoader: Augment.Pad %d must not be negative", a.Pad)
	}
	if !(a.Erase >= 0 && a.Erase <= 1) { // also NaN
		return 0, 0, 0, fmt.Errorf("NewLoader: Augment.Erase %v must be a probability in [0, 1]", a.Erase)
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
	erase := l.opts.Augment.Erase
	for k, i := range idx {
		// One PCG stream per (epoch, example): the shift along height and
		// width, then the flip, then the erasing.
		l.augPCG.Seed(l.opts.Seed^augmentSalt, uint64(l.epoch)*uint64(l.n)+uint64(i))
		dy, dx := 0, 0
		if pad > 0 {
			dy = bounded(&l.augPCG, uint64(2*pad+1)) - pad
			dx = bounded(&l.augPCG, uint64(2*pad+1)) - pad
		}
		mirror := flip && l.augPCG.Uint64()>>63 == 1
		img := dst[k*row : (k+1)*row]
		shiftImage(img, src[i*row:(i+1)*row], h, w, c, dy, dx, mirror)
		if erase > 0 && unitFloat(&l.augPCG) < erase {
			if y0, x0, eh, ew, ok := eraseRect(&l.augPCG, h, w); ok {
				for y := y0; y < y0+eh; y++ {
					clear(img[(y*w+x0)*c : (y*w+x0+ew)*c])
				}
			}
		}
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

// unitFloat returns a uniform float64 in [0, 1) from p.
func unitFloat(p *rand.PCG) float64 { return float64(p.Uint64()>>11) / (1 << 53) }

// eraseRect draws the rectangle of random erasing for an h×w image (see
// Augment.Erase): its top-left corner (y0, x0) and size eh×ew, or ok
// false when none of the attempts fits.
func eraseRect(p *rand.PCG, h, w int) (y0, x0, eh, ew int, ok bool) {
	area := float64(h * w)
	logLo, logHi := math.Log(eraseRatioLo), math.Log(eraseRatioHi)
	for range eraseAttempts {
		a := area * (eraseAreaLo + unitFloat(p)*(eraseAreaHi-eraseAreaLo))
		ratio := math.Exp(logLo + unitFloat(p)*(logHi-logLo))
		eh = int(math.Round(math.Sqrt(a * ratio)))
		ew = int(math.Round(math.Sqrt(a / ratio)))
		if eh < 1 || ew < 1 || eh >= h || ew >= w {
			continue
		}
		y0 = bounded(p, uint64(h-eh+1))
		x0 = bounded(p, uint64(w-ew+1))
		return y0, x0, eh, ew, true
	}
	return 0, 0, 0, 0, false
}
