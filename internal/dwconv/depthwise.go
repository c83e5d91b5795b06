package dwconv

import (
	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Geom is the geometry of one depthwise convolution problem, in NHWC
// names whatever the layout: input [N, H, W, C], filter [KH, KW, C, M],
// output [N, OH, OW, C·M]. Output channel c·M + m holds input channel c
// filtered by filter[:, :, c, m]. The caller validates it (sizes ≥ 0,
// OH and OW the output sizes of the strides SH, SW, dilations DH, DW and
// paddings PT, PB, PL, PR) and handles the empty problems: Forward,
// BackpropInput and BackpropFilter need non-empty operands and results.
type Geom struct {
	// NCHW is true when the tensors are laid out [N, C, H, W] (the filter
	// is [KH, KW, C, M] in both layouts).
	NCHW           bool
	N, H, W, C     int // input
	KH, KW, M      int // filter [KH, KW, C, M]
	OH, OW         int // output spatial size
	SH, SW, DH, DW int // strides, dilations
	PT, PB, PL, PR int // paddings: top, bottom, left, right
}

// OC returns the output depth C·M.
func (g *Geom) OC() int { return g.C * g.M }

// Work is the scratch memory of one Forward, BackpropInput or
// BackpropFilter call, with the lengths the matching *Work function
// returns (a nil slice for a length 0). Parts and Zero must be zeroed;
// the others may hold anything.
type Work[T tensorx.Float] struct {
	// Layout holds NHWC copies of an NCHW problem's operands: the input
	// and the output (Forward), out_backprop and the input gradient
	// (BackpropInput), the input and out_backprop (BackpropFilter).
	Layout [2][]T
	// Parts holds the filter gradient's float64 partial filters, one per
	// chunk of output rows.
	Parts []float64
	// Accs holds the filter gradient's per-chunk row accumulators.
	Accs []T
	// Taps holds the float32 kernels' filter copies with zeroed (and, for
	// the stride-1 input gradient, reversed) rows.
	Taps []T
	// Zero is a zeroed row the float32 kernels read for rows in the
	// padding.
	Zero []T
}

// WorkSize holds the lengths of the slices of a Work.
type WorkSize struct {
	Layout                  [2]int
	Parts, Accs, Taps, Zero int
}

// isF32 reports whether T is float32 (the element type of the assembly
// paths).
func isF32[T tensorx.Float]() bool {
	var z T
	_, ok := any(z).(float32)
	return ok
}

// ForwardWork returns the scratch Forward needs for g.
func ForwardWork[T tensorx.Float](g *Geom) WorkSize {
	var ws WorkSize
	if g.NCHW {
		ws.Layout = [2]int{g.N * g.H * g.W * g.C, g.N * g.OH * g.OW * g.OC()}
	}
	if isF32[T]() && asmFits(g) {
		ws.Taps, ws.Zero = forwardAsmWork(g)
	}
	return ws
}

// Forward computes the depthwise convolution out [N, OH, OW, C·M] of x
// [N, H, W, C] with f [KH, KW, C, M] (NCHW tensors when g.NCHW), on up to
// threads goroutines, with the scratch w of ForwardWork:
//
//	out[b, i, j, c·M+m] = Σ_{p,q} x[b, i·SH−PT+p·DH, j·SW−PL+q·DW, c] · f[p, q, c, m]
//
// over the taps inside the image. Every element of out is written. The
// Go loops build an output row filter row by filter row (the first valid
// one stores, the others add); float32 problems with M = 1, a 3x3 filter,
// DW = 1, SW 1 or 2 and C ≥ 8 run the assembly kernels (AVX-512 or
// AVX2/FMA) where the CPU has them (fused multiply-adds in a fixed order,
// the same bits on both tiers, the last bits differ from the Go loops).
// Results do not depend on threads.
func Forward[T tensorx.Float](out, x, f []T, g *Geom, threads int, w *Work[T]) {
	if !g.NCHW {
		forwardNHWC(threads, g, x, f, out, w)
		return
	}
	xt, ot := w.Layout[0], w.Layout[1]
	conv.ToNHWC(xt, x, g.N, g.C, g.H, g.W)
	forwardNHWC(threads, g, xt, f, ot, w)
	conv.ToNCHW(out, ot, g.N, g.OC(), g.OH, g.OW)
}

// BackpropInputWork returns the scratch BackpropInput needs for g.
func BackpropInputWork[T tensorx.Float](g *Geom) WorkSize {
	var ws WorkSize
	if g.NCHW {
		ws.Layout = [2]int{g.N * g.OH * g.OW * g.OC(), g.N * g.H * g.W * g.C}
	}
	if isF32[T]() && asmFits(g) {
		ws.Taps, ws.Zero = backpropInputAsmWork(g)
	}
	return ws
}

// BackpropInput computes the gradient dx [N, H, W, C] of Forward with
// respect to its input from f and out_backprop dy [N, OH, OW, C·M] (NCHW
// tensors when g.NCHW), with the scratch w of BackpropInputWork:
//
//	dx[b, y, x, c] = Σ dy[b, i, j, c·M+m] · f[p, q, c, m]
//
// over the (i, j, p, q, m) with i·SH−PT+p·DH = y and j·SW−PL+q·DW = x.
// Each input row gathers the out_backprop rows that read it, so every
// element is written once per contributing filter row (stored by the
// first, added by the others). float32 problems run the assembly kernels
// as in Forward. Results do not depend on threads.
func BackpropInput[T tensorx.Float](dx, f, dy []T, g *Geom, threads int, w *Work[T]) {
	if !g.NCHW {
		backpropInputNHWC(threads, g, f, dy, dx, w)
		return
	}
	dyt, dxt := w.Layout[0], w.Layout[1]
	conv.ToNHWC(dyt, dy, g.N, g.OC(), g.OH, g.OW)
	backpropInputNHWC(threads, g, f, dyt, dxt, w)
	conv.ToNCHW(dx, dxt, g.N, g.C, g.H, g.W)
}

// BackpropFilterWork returns the scratch BackpropFilter needs for g.
func BackpropFilterWork[T tensorx.Float](g *Geom) WorkSize {
	var ws WorkSize
	if g.NCHW {
		ws.Layout = [2]int{g.N * g.H * g.W * g.C, g.N * g.OH * g.OW * g.OC()}
	}
	if isF32[T]() && asmFits(g) {
		ws.Parts, ws.Accs, ws.Zero = backpropFilterAsmWork(g)
		return ws
	}
	fsz, racc, _, nch := goFilterChunks(g)
	ws.Parts, ws.Accs = nch*fsz, nch*racc
	return ws
}

// BackpropFilter computes the gradient df [KH, KW, C, M] of Forward with
// respect to its filter from x and out_backprop dy (NCHW tensors when
// g.NCHW), with the scratch w of BackpropFilterWork:
//
//	df[p, q, c, m] = Σ_{b,i,j} dy[b, i, j, c·M+m] · x[b, i·SH−PT+p·DH, j·SW−PL+q·DW, c]
//
// over the taps inside the image. Output rows are cut into chunks whose
// bounds depend only on the shapes; each chunk sums its rows (in T per
// row, then in float64) into its own partial filter, and the partials are
// added in chunk order, so results are bit-identical for any thread
// count. float32 problems run the assembly kernels as in Forward.
func BackpropFilter[T tensorx.Float](df, x, dy []T, g *Geom, threads int, w *Work[T]) {
	if !g.NCHW {
		backpropFilterNHWC(threads, g, x, dy, df, w)
		return
	}
	xt, dyt := w.Layout[0], w.Layout[1]
	conv.ToNHWC(xt, x, g.N, g.C, g.H, g.W)
	conv.ToNHWC(dyt, dy, g.N, g.OC(), g.OH, g.OW)
	backpropFilterNHWC(threads, g, xt, dyt, df, w)
}

// serial reports whether a loop of n items with the given grain runs on
// the calling goroutine alone.
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }
