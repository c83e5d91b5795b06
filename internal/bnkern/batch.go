package bnkern

import (
	"math"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/ewkern"
	"github.com/tapegrad/tapegrad/internal/parallel"
)

// Layout is a tensor viewed as [Outer, C, Inner] (row-major): C channels,
// and per channel Outer·Inner elements. Channels-last data (NHWC, NDHWC)
// has Inner = 1, channels-first data (NCHW, NCDHW) Outer = N.
type Layout struct {
	Outer, C, Inner int
}

// Count returns the number of elements per channel.
func (l Layout) Count() int { return l.Outer * l.Inner }

// Size returns the number of elements of the tensor.
func (l Layout) Size() int { return l.Outer * l.C * l.Inner }

// ---------------------------------------------------------------------------
// Chunked, deterministic per-channel reductions.

const (
	// maxChunks bounds the number of chunks a reduction is cut into (and
	// so the partial-sum scratch, maxChunks·2·C float64).
	maxChunks = 64
	// minChunk is the smallest number of elements of a chunk worth a task
	// of its own.
	minChunk = 1 << 14
)

// split cuts the outer dimension into chunks of per units (a unit holds
// unitElems elements) and returns per and the chunk count. It depends only
// on the shape.
func split(outer, unitElems int) (per, chunks int) {
	per = max(1, (outer+maxChunks-1)/maxChunks, (minChunk+unitElems-1)/max(1, unitElems))
	per = min(per, max(1, outer))
	return per, (outer + per - 1) / per
}

// PartialsLen returns the length of the float64 scratch (the chunks'
// partial sums) that Stats and GradSums need for a layout l.
func PartialsLen(l Layout) int {
	_, chunks := split(l.Outer, l.C*l.Inner)
	return 2 * chunks * l.C
}

// red is the split of a per-channel reduction over a layout l: the outer
// dimension cut into chunks of per units, chunk k accumulating its two
// partial sums per channel in p1[k·C:(k+1)·C] and p2[k·C:(k+1)·C].
type red struct {
	l           Layout
	per, chunks int
	p1, p2      []float64
}

// newRed splits a reduction over l (split) and takes its partial sums from
// part (PartialsLen(l) elements), zeroed.
func newRed(l Layout, part []float64) red {
	C := l.C
	per, chunks := split(l.Outer, C*l.Inner)
	part = part[:2*chunks*C]
	clear(part)
	return red{l: l, per: per, chunks: chunks, p1: part[:chunks*C], p2: part[chunks*C:]}
}

// bounds returns the outer units [o0, o1) of chunk k.
func (r red) bounds(k int) (o0, o1 int) {
	return k * r.per, min((k+1)*r.per, r.l.Outer)
}

// segGrain is the number of (chunk, channel) items of a channels-first
// reduction per scheduling block.
func (r red) segGrain() int { return max(1, minChunk/max(1, r.per*r.l.Inner)) }

// combine adds the chunks' partial sums in chunk order into s1, s2, so
// the sums do not depend on the thread count.
func (r red) combine(s1, s2 []float64) {
	C := r.l.C
	for c := range s1[:C] {
		s1[c], s2[c] = 0, 0
	}
	for k := 0; k < r.chunks; k++ {
		a, b := r.p1[k*C:(k+1)*C], r.p2[k*C:(k+1)*C]
		for c := range a {
			s1[c] += a[c]
			s2[c] += b[c]
		}
	}
}

// unitGrains returns the scheduling grains of an elementwise pass over l:
// rows of a channels-last layout, (outer, channel) segments of a
// channels-first one.
func unitGrains(l Layout) (rows, segs int) {
	return max(1, minChunk/max(1, l.C)), max(1, minChunk/max(1, l.Inner))
}

// serial reports whether parallel.Blocks(threads, n, grain, fn) would run
// fn on the caller's goroutine alone (one thread, or a single block).
// The passes test it and call their loop directly: a closure handed to
// parallel escapes to the heap, an allocation per call even when the loop
// then runs serially.
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }

// The passes below run their loops through parallel.Blocks, which gives
// each goroutine its own contiguous share of the blocks first (in
// ascending order) and then lets it take what is left of the others': a
// worker that starts late (waking an idle CPU) or runs on a busy CPU
// takes fewer blocks, and consecutive passes over a tensor give each
// goroutine mostly the rows it handled in the pass before, still in its
// core's caches (at two threads W7's forward 1.26 → 0.82 ms when the
// shares replaced one shared counter). Blocks are independent (reductions
// write per-chunk partials), so results do not depend on the thread
// count. A pass that fits one block, or runs on one thread, calls its
// loop directly, so that no closure is built.
//
// Blocks are taken in ascending order on purpose: walking a tensor
// larger than the caches backwards by blocks (to start on the data the
// previous pass left in the L3 cache) defeated the hardware prefetchers
// and made W7 slower, without measurable L3 reuse.

// variant selects the kernels of a row call from the size of the whole
// tensor the call belongs to (storeVariant, sumsVariant), never from the
// call's own rows, so that the choice does not depend on the thread
// count (the kernels give the same bits anyway).
type variant uint8

const (
	tierKernels   variant = iota // the tier's own (AVX-512 on that tier)
	avx2Kernels                  // AVX2's on every tier
	streamKernels                // AVX2's with non-temporal stores
)

// WideBytes is the tensor size from which the AVX-512 tier normalises and
// computes the training gradient dx with AVX2's kernels (or the streaming
// ones from StreamBytes), and SumsWideBytes the one from which it sums the
// gradient's reductions with them. Measured on an AMD EPYC Zen 5, tiers
// compared in one process (W7's 64 channels): the AVX-512 normalisation
// and dx kernels, three or four 512-bit loads of the per-channel
// parameters per vector from L1, ran at 1.0–1.1 of AVX2 at 1 MiB per
// tensor and 0.85–0.88 at 8 MiB (the other operands from L3); the sums at
// 1.14, 1.03 and 0.93 at 1, 8 and 25 MiB. The statistics' AVX-512 kernel,
// level or faster at every size, always runs. Variables so that tests can
// set them.
var (
	WideBytes     = 2 << 20
	SumsWideBytes = 16 << 20
)

// storeVariant returns the kernels of the storing passes over out.
func storeVariant[T Float](out []T) variant {
	var z T
	switch n := len(out) * int(unsafe.Sizeof(z)); {
	case n >= StreamBytes:
		return streamKernels
	case n >= WideBytes:
		return avx2Kernels
	}
	return tierKernels
}

// sumsVariant returns the kernels of the gradient's reductions over dy.
func sumsVariant[T Float](dy []T) variant {
	var z T
	if len(dy)*int(unsafe.Sizeof(z)) >= SumsWideBytes {
		return avx2Kernels
	}
	return tierKernels
}

// StreamBytes is the output size from which the elementwise passes
// (Normalize, GradDx) of float32 channels-last tensors write with
// non-temporal stores: half the 32 MiB L3 cache of the project's machine,
// so that the output and its input do not fit it together. Streaming such
// an output saves reading every line of it before writing it (1.3–1.5×
// faster on W7's forward) and keeps the inputs cached for the next pass; a
// smaller output is better left in the cache for the op that reads it
// next. A variable so that tests can lower it.
var StreamBytes = 16 << 20

// ---------------------------------------------------------------------------
// Statistics and normalisation.

// Stats computes, per channel c, shift[c] = the channel's first element
// (0 if it is not finite, so that an infinite element gives an infinite
// mean) and the sums s1[c] = Σ(x − shift[c]), s2[c] = Σ(x − shift[c])²
// over the channel's elements of x (layout l). Groups of four terms are
// added in the element type (where x − shift is exact or nearly so) and
// the group sums accumulated in float64, per chunk of the outer
// dimension; the chunks' sums are added in chunk order, so the results do
// not depend on threads. part is scratch of PartialsLen(l) elements.
func Stats[T Float](shift []T, s1, s2 []float64, x []T, l Layout, part []float64, threads int) {
	C, S := l.C, l.Inner
	for c := 0; c < C; c++ {
		shift[c] = x[c*S]
		if v := float64(shift[c]); math.IsInf(v, 0) || math.IsNaN(v) {
			shift[c] = 0
		}
	}
	r := newRed(l, part)
	if S == 1 {
		if serial(threads, r.chunks, 1) {
			statsChunks(r, x, shift, 0, r.chunks)
		} else {
			parallel.Blocks(threads, r.chunks, 1, func(k0, k1 int) { statsChunks(r, x, shift, k0, k1) })
		}
	} else {
		if items, grain := r.chunks*C, r.segGrain(); serial(threads, items, grain) {
			statsSegs(r, x, shift, 0, items)
		} else {
			parallel.Blocks(threads, items, grain, func(i0, i1 int) { statsSegs(r, x, shift, i0, i1) })
		}
	}
	r.combine(s1, s2)
}

// statsChunks accumulates Stats' partial sums of the chunks [k0, k1) of a
// channels-last layout.
func statsChunks[T Float](r red, x, shift []T, k0, k1 int) {
	C := r.l.C
	for k := k0; k < k1; k++ {
		o0, o1 := r.bounds(k)
		statsRows(x[o0*C:o1*C], C, shift, r.p1[k*C:(k+1)*C], r.p2[k*C:(k+1)*C])
	}
}

// statsSegs computes Stats' partial sums of the (chunk, channel) items
// [i0, i1) of a channels-first layout.
func statsSegs[T Float](r red, x, shift []T, i0, i1 int) {
	C, S := r.l.C, r.l.Inner
	for i := i0; i < i1; i++ {
		k, c := i/C, i%C
		o0, o1 := r.bounds(k)
		sh := shift[c]
		var a, b float64
		for o := o0; o < o1; o++ {
			s := x[(o*C+c)*S : (o*C+c+1)*S]
			j := 0
			for ; j+4 <= len(s); j += 4 {
				q := s[j : j+4 : j+4]
				d0, d1, d2, d3 := q[0]-sh, q[1]-sh, q[2]-sh, q[3]-sh
				a += float64((d0 + d1) + (d2 + d3))
				b += float64((d0*d0 + d1*d1) + (d2*d2 + d3*d3))
			}
			for ; j < len(s); j++ {
				d := s[j] - sh
				a += float64(d)
				b += float64(d * d)
			}
		}
		r.p1[i], r.p2[i] = a, b
	}
}

// Normalize writes y = (x − mu)·k + beta per channel over the layout l,
// in the element type (the factor k = γ·rsqrt(var+ε) formed by the
// caller), and with relu then y = max(y, 0) as ewkern.Relu computes it
// (the activation of _FusedBatchNormEx): the same bits as a separate Relu
// pass, applied to each piece of at most reluPiece elements right after
// it is written, while it is still cached. Outputs of StreamBytes and
// more of a channels-last layout are written with non-temporal stores
// where the assembly serves them (not with relu, whose second look at
// each piece needs it cached).
func Normalize[T Float](y, x []T, l Layout, mu, k, beta []T, relu bool, threads int) {
	st := storeVariant(y)
	if relu && st == streamKernels {
		st = avx2Kernels
	}
	rg, sg := unitGrains(l)
	if l.Inner == 1 {
		if serial(threads, l.Outer, rg) {
			normChunk(l, x, y, mu, k, beta, st, relu, 0, l.Outer)
		} else {
			parallel.Blocks(threads, l.Outer, rg, func(o0, o1 int) { normChunk(l, x, y, mu, k, beta, st, relu, o0, o1) })
		}
		return
	}
	if n := l.Outer * l.C; serial(threads, n, sg) {
		normSegs(l, x, y, mu, k, beta, relu, 0, n)
	} else {
		parallel.Blocks(threads, n, sg, func(s0, s1 int) { normSegs(l, x, y, mu, k, beta, relu, s0, s1) })
	}
}

// reluPiece is the most elements Normalize writes before it applies the
// activation to them: 64 KiB of float32, which stay in the L2 cache.
const reluPiece = 1 << 14

// normChunk is Normalize on the rows [o0, o1) of a channels-last layout.
func normChunk[T Float](l Layout, x, y, mu, k, beta []T, v variant, relu bool, o0, o1 int) {
	C := l.C
	if !relu {
		normRows(x[o0*C:o1*C], y[o0*C:o1*C], C, mu, k, beta, v)
		return
	}
	step := max(1, reluPiece/C)
	for r0 := o0; r0 < o1; r0 += step {
		r1 := min(r0+step, o1)
		ys := y[r0*C : r1*C]
		normRows(x[r0*C:r1*C], ys, C, mu, k, beta, v)
		ewkern.Relu(ys, ys)
	}
}

// normSegs is Normalize on the (outer, channel) segments [s0, s1) of a
// channels-first layout.
func normSegs[T Float](l Layout, x, y, mu, k, beta []T, relu bool, s0, s1 int) {
	C, S := l.C, l.Inner
	for s := s0; s < s1; s++ {
		c := s % C
		m, kk, b := mu[c], k[c], beta[c]
		xr, yr := x[s*S:(s+1)*S], y[s*S:(s+1)*S]
		for i, v := range xr {
			yr[i] = (v-m)*kk + b
		}
		if relu {
			ewkern.Relu(yr, yr)
		}
	}
}

// ---------------------------------------------------------------------------
// Gradient passes.

// GradSums computes s1 = Σdy and s2 = Σdy·(x − mean) per channel over the
// layout l, with groups of four terms added in the element type and the
// group sums accumulated in float64, per chunk as Stats. If dx is not nil
// it also writes dx = dy·k (the inference gradient) in the same pass.
// part is scratch of PartialsLen(l) elements.
func GradSums[T Float](s1, s2 []float64, dx, dy, x []T, l Layout, mean, k []T, part []float64, threads int) {
	r := newRed(l, part)
	if l.Inner == 1 {
		v := sumsVariant(dy)
		if serial(threads, r.chunks, 1) {
			gradSumsChunks(r, dy, x, mean, dx, k, v, 0, r.chunks)
		} else {
			parallel.Blocks(threads, r.chunks, 1, func(k0, k1 int) { gradSumsChunks(r, dy, x, mean, dx, k, v, k0, k1) })
		}
	} else {
		if items, grain := r.chunks*l.C, r.segGrain(); serial(threads, items, grain) {
			gradSumsSegs(r, dy, x, mean, dx, k, 0, items)
		} else {
			parallel.Blocks(threads, items, grain, func(i0, i1 int) { gradSumsSegs(r, dy, x, mean, dx, k, i0, i1) })
		}
	}
	r.combine(s1, s2)
}

// gradSumsChunks accumulates GradSums' partial sums of the chunks
// [k0, k1) of a channels-last layout (and writes their dx), with the
// kernels v.
func gradSumsChunks[T Float](r red, dy, x, mean, dx, k []T, v variant, k0, k1 int) {
	C := r.l.C
	for q := k0; q < k1; q++ {
		o0, o1 := r.bounds(q)
		gradSumsRows(dy[o0*C:o1*C], x[o0*C:o1*C], C, mean, r.p1[q*C:(q+1)*C], r.p2[q*C:(q+1)*C], v)
		if dx != nil {
			scaleRows(dy[o0*C:o1*C], dx[o0*C:o1*C], C, k)
		}
	}
}

// gradSumsSegs computes GradSums' partial sums of the (chunk, channel)
// items [i0, i1) of a channels-first layout (and writes their dx).
func gradSumsSegs[T Float](r red, dy, x, mean, dx, k []T, i0, i1 int) {
	C, S := r.l.C, r.l.Inner
	for it := i0; it < i1; it++ {
		q, c := it/C, it%C
		o0, o1 := r.bounds(q)
		mc := mean[c]
		var a, b float64
		for o := o0; o < o1; o++ {
			lo, hi := (o*C+c)*S, (o*C+c+1)*S
			gs, xr := dy[lo:hi], x[lo:hi]
			xr = xr[:len(gs)]
			i := 0
			for ; i+4 <= len(gs); i += 4 {
				g := gs[i : i+4 : i+4]
				xq := xr[i : i+4 : i+4]
				a += float64((g[0] + g[1]) + (g[2] + g[3]))
				b += float64((g[0]*(xq[0]-mc) + g[1]*(xq[1]-mc)) + (g[2]*(xq[2]-mc) + g[3]*(xq[3]-mc)))
			}
			for ; i < len(gs); i++ {
				a += float64(gs[i])
				b += float64(gs[i] * (xr[i] - mc))
			}
			if dx != nil {
				kv, dr := k[c], dx[lo:hi]
				dr = dr[:len(gs)]
				for i, g := range gs {
					dr[i] = g * kv
				}
			}
		}
		r.p1[it], r.p2[it] = a, b
	}
}

// GradDx writes the training gradient dx = a·(dy − mdy) − b·(x − m) per
// channel over the layout l, in the element type. Outputs of StreamBytes
// and more are written as by Normalize.
func GradDx[T Float](dx, dy, x []T, l Layout, a, mdy, b, m []T, threads int) {
	st := storeVariant(dx)
	rg, sg := unitGrains(l)
	if l.Inner == 1 {
		if serial(threads, l.Outer, rg) {
			gradDxChunk(l, dy, x, dx, a, mdy, b, m, st, 0, l.Outer)
		} else {
			parallel.Blocks(threads, l.Outer, rg, func(o0, o1 int) { gradDxChunk(l, dy, x, dx, a, mdy, b, m, st, o0, o1) })
		}
		return
	}
	if n := l.Outer * l.C; serial(threads, n, sg) {
		gradDxSegs(l, dy, x, dx, a, mdy, b, m, 0, n)
	} else {
		parallel.Blocks(threads, n, sg, func(s0, s1 int) { gradDxSegs(l, dy, x, dx, a, mdy, b, m, s0, s1) })
	}
}

// gradDxChunk is GradDx on the rows [o0, o1) of a channels-last layout.
func gradDxChunk[T Float](l Layout, dy, x, dx, A, mdy, B, m []T, v variant, o0, o1 int) {
	C := l.C
	gradDxRows(dy[o0*C:o1*C], x[o0*C:o1*C], dx[o0*C:o1*C], C, A, mdy, B, m, v)
}

// gradDxSegs is GradDx on the (outer, channel) segments [s0, s1) of a
// channels-first layout.
func gradDxSegs[T Float](l Layout, dy, x, dx, A, mdy, B, m []T, s0, s1 int) {
	C, S := l.C, l.Inner
	for s := s0; s < s1; s++ {
		c := s % C
		a, md, b, mm := A[c], mdy[c], B[c], m[c]
		gr, xr, dr := dy[s*S:(s+1)*S], x[s*S:(s+1)*S], dx[s*S:(s+1)*S]
		for i, g := range gr {
			dr[i] = a*(g-md) - b*(xr[i]-mm)
		}
	}
}
