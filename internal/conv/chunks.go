package conv

const (
	// chunkElems bounds one im2col buffer of the strided input gradient
	// (elements): 1 MiB of float32, 2 MiB of float64.
	chunkElems = 1 << 18
	// maxWorkers bounds the goroutines (and so the im2col buffers) of one
	// kernel call.
	maxWorkers = 8
	// maxPartials bounds the chunks reduced per round (each round is one
	// parallel loop over its chunks and one over the sum).
	maxPartials = 64
	// sumGrain is the least number of filter-gradient elements per
	// goroutine when the partials are added.
	sumGrain = 1 << 10
	// filterSplit: several filter-gradient chunks are made a multiple of
	// this many, so that they divide evenly among 1, 2 or 4 threads.
	filterSplit = 4
	// scatterGrain is the least number of elements per goroutine when the
	// strided input gradient copies a phase into place.
	scatterGrain = 1 << 14
)

// Filter-gradient chunking; variables rather than constants so that tests
// can shrink them (SetFilterChunking).
var (
	// filterRows is the most output positions of one filter-gradient
	// chunk: its GEMM sums them in the element type (in the GEMM's k
	// blocks, each gathered once from the input), and the chunks' partial
	// gradients are then added in float64.
	filterRows = 4096
	// partialElems bounds the per-chunk partial filter gradients kept at
	// once by BackpropFilter (chunks beyond it are reduced in further
	// rounds).
	partialElems = 1 << 20
)

// SetFilterChunking sets the most output positions of one
// filter-gradient chunk and the budget of partial filter gradients kept
// at once (defaults 4096 and 1<<20), and returns a function that restores
// the previous values. Tests shrink them so that chunks start and end
// anywhere in an image and take several reduction rounds; it must not be
// called while a kernel runs.
func SetFilterChunking(rows, partials int) (restore func()) {
	r, p := filterRows, partialElems
	filterRows, partialElems = rows, partials
	return func() { filterRows, partialElems = r, p }
}

// chunks cuts the output positions [0, n·p) of n images of p positions
// each into chunks of at most rows positions. A chunk holds either whole
// images or part of one image, so the chunks of one image can be visited
// in order by one worker (col2im accumulates into the image).
type chunks struct {
	p, total int
	rows     int  // positions per chunk
	whole    bool // chunks of whole images
	perImg   int  // chunks per image when !whole
	count    int
}

// planChunks plans the chunks for im2col rows of kcol elements; it
// depends only on the shapes. p must be positive.
func planChunks(n, p, kcol int) chunks {
	rows := max(1, chunkElems/max(1, kcol))
	c := chunks{p: p, total: n * p}
	if rows >= p {
		imgs := max(1, min(n, rows/p))
		c.whole, c.rows, c.count = true, imgs*p, (n+imgs-1)/imgs
	} else {
		c.rows, c.perImg = rows, (p+rows-1)/rows
		c.count = n * c.perImg
	}
	return c
}

// bounds returns the position range of chunk i.
func (c *chunks) bounds(i int) (r0, r1 int) {
	if c.whole {
		r0 = i * c.rows
		return r0, min(r0+c.rows, c.total)
	}
	b, k := i/c.perImg, i%c.perImg
	r0 = b*c.p + k*c.rows
	return r0, min(r0+c.rows, (b+1)*c.p)
}

// filterChunks returns how many chunks of near-equal size the total
// output positions of a filter gradient are cut into (chunk c covers
// [total·c/count, total·(c+1)/count)); it depends only on the shapes.
func filterChunks(total int) int {
	count := (total + filterRows - 1) / filterRows
	if count > 1 {
		count = min(total, (count+filterSplit-1)/filterSplit*filterSplit)
	}
	return count
}

// workers returns how many workers to use for items, and how many
// threads each worker's GEMMs get.
func workers(threads, items int) (nw, gemmThreads int) {
	nw = max(1, min(threads, items, maxWorkers))
	return nw, max(1, threads/nw)
}

// tapRange returns the filter taps [lo, hi) of one axis whose input
// position start + t·d lies in [0, size).
func tapRange(start, d, k, size int) (lo, hi int) {
	if start < 0 {
		lo = min(k, (-start+d-1)/d)
	}
	if last := size - 1 - start; last >= 0 {
		hi = min(k, last/d+1)
	}
	return lo, max(lo, hi)
}

// serial reports whether parallel.For(threads, n, grain, fn) would run fn
// on the caller's goroutine alone (one thread, or a single chunk): the
// kernels then call their loop directly, since a closure handed to
// parallel.For escapes to the heap, an allocation per call even when the
// loop then runs serially.
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }
