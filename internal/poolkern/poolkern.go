// Package poolkern holds the loops of 2-D max and average pooling and their
// gradients (TensorFlow's MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool
// and AvgPoolGrad; packages forward and backward keep the semantics and
// call these), for NHWC and NCHW tensors.
//
// Output position (oh, ow) pools the window of input rows
// [oh·SH − PadT, oh·SH − PadT + KH) and columns [ow·SW − PadL, ow·SW − PadL + KW),
// clipped to the input: padding is never read.
//
//   - Max pooling takes the window's maximum (Go's max: NaN if the window
//     holds one). The gradient's argmax is the window's first maximum in
//     row-major order (TensorFlow's CPU MaxPoolGrad rule: a scan from the
//     first element replacing only on a strictly greater value), so the
//     forward's maximum is the argmax's value for NaN-free windows.
//   - Average pooling divides the window's sum by the number of input
//     elements in the clipped window (padding is not counted); its
//     gradient adds dy·(1/count) to each of them, count computed in
//     float64 and rounded to T as TensorFlow's AvgPoolGrad does.
//
// Work is split by batch (NHWC) or by (batch, channel) plane (NCHW); every
// output or input-gradient element is computed by one goroutine in an
// order that depends only on the shapes, so results are bit-identical for
// any thread count.
package poolkern

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/parallel"
)

// Float is the element type of the pooling loops.
type Float interface{ float32 | float64 }

// Geom is a pooling geometry: input [N, H, W, C] (NHWC) or [N, C, H, W]
// (NCHW), window KH×KW, strides SH, SW, output OH×OW, and the padding
// before the first row (PadT) and column (PadL).
type Geom struct {
	NCHW               bool // layout: NCHW, else NHWC
	N, H, W, C         int  // input batch, rows, columns, channels
	KH, KW, SH, SW     int  // window rows, columns; strides
	OH, OW, PadT, PadL int  // output rows, columns; padding before
}

// window returns the clipped input rows [h0, h1) and columns [w0, w1) of
// output position (oh, ow).
func (g *Geom) window(oh, ow int) (h0, h1, w0, w1 int) {
	h0 = oh*g.SH - g.PadT
	w0 = ow*g.SW - g.PadL
	h1 = min(h0+g.KH, g.H)
	w1 = min(w0+g.KW, g.W)
	return max(h0, 0), h1, max(w0, 0), w1
}

// units returns the parallel work units (batches, or planes for NCHW) and
// the work per unit in element visits, for a grain of about 64K visits.
func (g *Geom) units() (n, grain int) {
	per := g.OH * g.OW * g.KH * g.KW
	n = g.N
	if g.NCHW {
		n *= g.C
	} else {
		per *= g.C
	}
	return n, max(1, (1<<16)/max(per, 1))
}

// serial reports whether the units run on the caller's goroutine alone;
// the exported functions then call their loop directly, so that no
// closure (an allocation) is made.
func (g *Geom) serial(threads int) bool {
	n, grain := g.units()
	return threads <= 1 || n <= grain
}

// parallelUnits runs fn over the work units on up to threads goroutines.
func (g *Geom) parallelUnits(threads int, fn func(lo, hi int)) {
	n, grain := g.units()
	parallel.For(threads, n, grain, fn)
}

// MaxPool writes the max pooling of x into dst (the output shape).
func MaxPool[T Float](threads int, dst, x []T, g Geom) {
	if g.serial(threads) {
		n, _ := g.units()
		maxPoolUnits(dst, x, &g, 0, n)
		return
	}
	gc := g
	gc.parallelUnits(threads, func(lo, hi int) { maxPoolUnits(dst, x, &gc, lo, hi) })
}

func maxPoolUnits[T Float](dst, x []T, g *Geom, lo, hi int) {
	for u := lo; u < hi; u++ {
		if g.NCHW {
			xp := x[u*g.H*g.W : (u+1)*g.H*g.W]
			op := dst[u*g.OH*g.OW : (u+1)*g.OH*g.OW]
			for oh := 0; oh < g.OH; oh++ {
				for ow := 0; ow < g.OW; ow++ {
					h0, h1, w0, w1 := g.window(oh, ow)
					m := xp[h0*g.W+w0]
					for h := h0; h < h1; h++ {
						for _, v := range xp[h*g.W+w0 : h*g.W+w1] {
							m = max(m, v)
						}
					}
					op[oh*g.OW+ow] = m
				}
			}
			continue
		}
		c := g.C
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				h0, h1, w0, w1 := g.window(oh, ow)
				o := dst[((u*g.OH+oh)*g.OW+ow)*c:][:c]
				copy(o, x[((u*g.H+h0)*g.W+w0)*c:][:c])
				for h := h0; h < h1; h++ {
					for w := w0; w < w1; w++ {
						xr := x[((u*g.H+h)*g.W+w)*c:][:c]
						for k, v := range xr {
							o[k] = max(o[k], v)
						}
					}
				}
			}
		}
	}
}

// argmax returns the offset in xp of the first maximum of the window of
// (oh, ow), reading channel k of an NHWC batch (stride c) or a plane (c =
// 1, k = 0): the maximum first (branch-free), then its first occurrence.
// In a window with NaNs, the scan by strictly greater values from the
// first element instead.
func argmax[T Float](xp []T, g *Geom, oh, ow, c, k int) int {
	h0, h1, w0, w1 := g.window(oh, ow)
	first := (h0*g.W+w0)*c + k
	m := xp[first]
	for h := h0; h < h1; h++ {
		for w := w0; w < w1; w++ {
			m = max(m, xp[(h*g.W+w)*c+k])
		}
	}
	if m == m {
		for h := h0; h < h1; h++ {
			for w := w0; w < w1; w++ {
				if i := (h*g.W+w)*c + k; xp[i] == m {
					return i
				}
			}
		}
	}
	at := first
	m = xp[at]
	for h := h0; h < h1; h++ {
		for w := w0; w < w1; w++ {
			i := (h*g.W+w)*c + k
			if v := xp[i]; v > m {
				m, at = v, i
			}
		}
	}
	return at
}

// MaxPoolGrad writes into dx (the input shape) the gradient of max pooling
// for the upstream gradient dy (the output shape): dy of every output
// added at its window's first maximum of x, zeros elsewhere.
func MaxPoolGrad[T Float](threads int, dx, x, dy []T, g Geom) {
	if g.serial(threads) {
		n, _ := g.units()
		maxPoolGradUnits(dx, x, dy, &g, 0, n)
		return
	}
	gc := g
	gc.parallelUnits(threads, func(lo, hi int) { maxPoolGradUnits(dx, x, dy, &gc, lo, hi) })
}

// maxChannels is the largest depth for which the NHWC gradient keeps the
// window's per-channel maxima in a stack array.
const maxChannels = 512

func maxPoolGradUnits[T Float](dx, x, dy []T, g *Geom, lo, hi int) {
	c, in, out := g.C, g.H*g.W*g.C, g.OH*g.OW*g.C
	if g.NCHW {
		c, in, out = 1, g.H*g.W, g.OH*g.OW
	} else if c <= maxChannels {
		maxPoolGradNHWC(dx, x, dy, g, lo, hi)
		return
	}
	for u := lo; u < hi; u++ {
		xp, dxp, dyp := x[u*in:(u+1)*in], dx[u*in:(u+1)*in], dy[u*out:(u+1)*out]
		clear(dxp)
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				for k := 0; k < c; k++ {
					dxp[argmax(xp, g, oh, ow, c, k)] += dyp[(oh*g.OW+ow)*c+k]
				}
			}
		}
	}
}

// maxPoolGradNHWC is maxPoolGradUnits for NHWC with at most maxChannels
// channels, all channels of a window at once: the per-channel maxima
// (branch-free), then each channel's first element equal to its maximum,
// found in one row-major pass (a found channel's maximum becomes NaN, which
// nothing equals). Channels whose window holds a NaN take argmax's scan.
func maxPoolGradNHWC[T Float](dx, x, dy []T, g *Geom, lo, hi int) {
	var mbuf [maxChannels]T
	c := g.C
	m := mbuf[:c]
	nan := T(math.NaN())
	in, out := g.H*g.W*c, g.OH*g.OW*c
	for u := lo; u < hi; u++ {
		xp, dxp, dyp := x[u*in:(u+1)*in], dx[u*in:(u+1)*in], dy[u*out:(u+1)*out]
		clear(dxp)
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				h0, h1, w0, w1 := g.window(oh, ow)
				copy(m, xp[(h0*g.W+w0)*c:][:c])
				for h := h0; h < h1; h++ {
					for w := w0; w < w1; w++ {
						for k, v := range xp[(h*g.W+w)*c:][:c] {
							m[k] = max(m[k], v)
						}
					}
				}
				d := dyp[(oh*g.OW+ow)*c:][:c]
				for k, v := range m {
					if v != v {
						dxp[argmax(xp, g, oh, ow, c, k)] += d[k]
					}
				}
				for h := h0; h < h1; h++ {
					for w := w0; w < w1; w++ {
						xr, dr := xp[(h*g.W+w)*c:][:c], dxp[(h*g.W+w)*c:][:c]
						for k, v := range xr {
							if v == m[k] {
								dr[k] += d[k]
								m[k] = nan
							}
						}
					}
				}
			}
		}
	}
}

// MaxPoolGradGrad writes into dst (the output shape) the gradient of
// MaxPoolGrad with respect to its dy, for the upstream gradient gx (the
// input shape): for every output, gx at the window's first element equal
// to y (the forward's output), or 0 if none is (TensorFlow's
// MaxPoolGradGrad, which compares with the given output).
func MaxPoolGradGrad[T Float](threads int, dst, x, y, gx []T, g Geom) {
	if g.serial(threads) {
		n, _ := g.units()
		maxPoolGradGradUnits(dst, x, y, gx, &g, 0, n)
		return
	}
	gc := g
	gc.parallelUnits(threads, func(lo, hi int) { maxPoolGradGradUnits(dst, x, y, gx, &gc, lo, hi) })
}

func maxPoolGradGradUnits[T Float](dst, x, y, gx []T, g *Geom, lo, hi int) {
	c, in, out := g.C, g.H*g.W*g.C, g.OH*g.OW*g.C
	if g.NCHW {
		c, in, out = 1, g.H*g.W, g.OH*g.OW
	}
	for u := lo; u < hi; u++ {
		xp, gp, yp, dp := x[u*in:(u+1)*in], gx[u*in:(u+1)*in], y[u*out:(u+1)*out], dst[u*out:(u+1)*out]
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				h0, h1, w0, w1 := g.window(oh, ow)
				for k := 0; k < c; k++ {
					o := (oh*g.OW+ow)*c + k
					want, v := yp[o], T(0)
				scan:
					for h := h0; h < h1; h++ {
						for w := w0; w < w1; w++ {
							if i := (h*g.W+w)*c + k; xp[i] == want {
								v = gp[i]
								break scan
							}
						}
					}
					dp[o] = v
				}
			}
		}
	}
}

// AvgPool writes the average pooling of x into dst (the output shape).
func AvgPool[T Float](threads int, dst, x []T, g Geom) {
	if g.serial(threads) {
		n, _ := g.units()
		avgPoolUnits(dst, x, &g, 0, n)
		return
	}
	gc := g
	gc.parallelUnits(threads, func(lo, hi int) { avgPoolUnits(dst, x, &gc, lo, hi) })
}

func avgPoolUnits[T Float](dst, x []T, g *Geom, lo, hi int) {
	for u := lo; u < hi; u++ {
		if g.NCHW {
			xp := x[u*g.H*g.W : (u+1)*g.H*g.W]
			op := dst[u*g.OH*g.OW : (u+1)*g.OH*g.OW]
			for oh := 0; oh < g.OH; oh++ {
				for ow := 0; ow < g.OW; ow++ {
					h0, h1, w0, w1 := g.window(oh, ow)
					var s T
					for h := h0; h < h1; h++ {
						for _, v := range xp[h*g.W+w0 : h*g.W+w1] {
							s += v
						}
					}
					op[oh*g.OW+ow] = s / T((h1-h0)*(w1-w0))
				}
			}
			continue
		}
		c := g.C
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				h0, h1, w0, w1 := g.window(oh, ow)
				o := dst[((u*g.OH+oh)*g.OW+ow)*c:][:c]
				clear(o)
				for h := h0; h < h1; h++ {
					for w := w0; w < w1; w++ {
						xr := x[((u*g.H+h)*g.W+w)*c:][:c]
						for k, v := range xr {
							o[k] += v
						}
					}
				}
				n := T((h1 - h0) * (w1 - w0))
				for k := range o {
					o[k] /= n
				}
			}
		}
	}
}

// AvgPoolGrad writes into dx (the input shape) the gradient of average
// pooling for dy (the output shape): every output's dy·(1/count) added to
// each input element of its window, in row-major order of the outputs.
func AvgPoolGrad[T Float](threads int, dx, dy []T, g Geom) {
	if g.serial(threads) {
		n, _ := g.units()
		avgPoolGradUnits(dx, dy, &g, 0, n)
		return
	}
	gc := g
	gc.parallelUnits(threads, func(lo, hi int) { avgPoolGradUnits(dx, dy, &gc, lo, hi) })
}

func avgPoolGradUnits[T Float](dx, dy []T, g *Geom, lo, hi int) {
	c, in, out := g.C, g.H*g.W*g.C, g.OH*g.OW*g.C
	if g.NCHW {
		c, in, out = 1, g.H*g.W, g.OH*g.OW
	}
	for u := lo; u < hi; u++ {
		dxp, dyp := dx[u*in:(u+1)*in], dy[u*out:(u+1)*out]
		clear(dxp)
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				h0, h1, w0, w1 := g.window(oh, ow)
				coeff := T(1 / float64((h1-h0)*(w1-w0)))
				d := dyp[(oh*g.OW+ow)*c:][:c]
				for h := h0; h < h1; h++ {
					for w := w0; w < w1; w++ {
						xr := dxp[(h*g.W+w)*c:][:c]
						for k, v := range d {
							xr[k] += v * coeff
						}
					}
				}
			}
		}
	}
}
