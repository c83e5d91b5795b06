// Package conv holds the loops of the Conv2D family (Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter) over NHWC slices: implicit
// GEMMs over internal/gemm, the im2col row maps they read, the col2im
// scatter of the strided input gradient and the chunked, thread-count
// independent reduction of the filter gradient. Package forward and
// package backward validate the ops and call these functions with
// validated geometries; nothing here checks attrs or returns errors.
//
// Computation: an im2col row holds the receptive field of one output
// position in filter order [kh, kw, cf], so the filter [KH, KW, Cf, O] is
// the GEMM's right-hand matrix as stored; group g uses input channels
// g·Cf.. and filter/output columns g·Og.. . The im2col matrix is never
// materialised: it is a gemm.Rows whose rows are gathered from the input,
// one segment of Cf channels per filter tap (rows), which the GEMM reads
// in place (forward) or gathers straight into its packed panels (filter
// gradient). 1x1 stride-1 unpadded convolutions and "filter covers the
// whole input" convolutions multiply the input directly.
// BackpropInput with unit strides is a forward convolution of dy with the
// flipped, transposed filter; with larger strides and no dilation it is
// one such convolution per phase (input positions of equal remainders
// modulo the strides, reached by a subset of the taps), copied into
// place; with strides and dilations it computes dy·filterᵀ into im2col
// rows and scatters them back (col2im). BackpropFilter
// computes dfᵀ = dyᵀ·im2col(x) (both big operands then packed without
// transposition).
//
// The forward GEMMs split their rows over the threads (internal/gemm).
// The input gradient with strides and the filter gradient process output
// positions in chunks whose bounds depend only on the shapes, which the
// goroutines take one at a time; the filter gradient sums per-chunk
// partials (up to filterRows positions each, dyᵀ read in place by the
// GEMM's kernels) in chunk order in float64. Results are bit-identical
// for any thread count.
//
// Scratch memory comes from the caller (BackpropInputScratch,
// BackpropFilterScratch give the sizes); the im2col offset maps come from
// a free list, and the closures handed to internal/parallel are built
// only on the multi-threaded paths, so steady-state calls on one thread
// allocate nothing.
package conv

import "github.com/tapegrad/tapegrad/internal/gemm"

// Float is the set of element types of the kernels.
type Float = gemm.Float

// Geom is the geometry of one convolution problem in NHWC: input
// [N, H, W, C], filter [KH, KW, CF, O], output [N, OH, OW, O]. The caller
// has validated it: C = G·CF, O = G·OG, and OH, OW follow from the sizes,
// strides, dilations and paddings (which may be negative in the
// transposed problems this package builds itself).
type Geom struct {
	N, H, W, C     int // input
	KH, KW, CF, O  int // filter
	G, OG          int // groups (C / CF) and output channels per group
	OH, OW         int // output spatial size
	SH, SW, DH, DW int // strides, dilations
	PT, PB, PL, PR int // paddings: top, bottom, left, right
}

// KCol is the length of an im2col row (and the filter's rows as a
// matrix): KH·KW·CF.
func (g *Geom) KCol() int { return g.KH * g.KW * g.CF }

// Direct reports whether the input can serve as the im2col matrix as it
// is, and its row stride: 1x1 filters with stride 1 and no padding (one
// row per pixel), or, without groups, a filter covering the whole
// unpadded input with a 1x1 output (one row per image).
func (g *Geom) Direct() (lda int, ok bool) {
	if g.PT != 0 || g.PB != 0 || g.PL != 0 || g.PR != 0 {
		return 0, false
	}
	if g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 {
		return g.C, true
	}
	if g.G == 1 && g.KH == g.H && g.KW == g.W && g.DH == 1 && g.DW == 1 && g.OH == 1 && g.OW == 1 {
		return g.H * g.W * g.C, true
	}
	return 0, false
}
