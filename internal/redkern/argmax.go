package redkern

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/parallel"
)

// Index is the element type of ArgMax's output.
type Index interface{ int32 | int64 }

// ArgMax writes to dst[o·inner + i] the index along the middle axis of the
// first maximum of x[o, :, i], x of shape [outer, n, inner] (n >= 1), as
// Eigen's sequential argmax reduction does: the running maximum starts at
// the lowest finite value of T with index 0, and an element replaces it
// only when it is strictly greater, so ties keep the first index and NaNs
// are never chosen (an all-NaN or all-−Inf slice gives 0). With min, the
// first minimum instead (ArgMin: starting at the highest finite value,
// replaced when strictly less). Work is split by outer rows; each output
// is computed by one goroutine in the same order for any thread count.
func ArgMax[T Num, I Index](threads int, dst []I, x []T, outer, n, inner int, min bool) {
	if outer*inner == 0 {
		return
	}
	grain := max(1, (1<<15)/(n*inner))
	if threads <= 1 || outer <= grain {
		argRange(dst, x, n, inner, min, 0, outer)
		return
	}
	parallel.For(threads, outer, grain, func(lo, hi int) { argRange(dst, x, n, inner, min, lo, hi) })
}

// argRange does ArgMax's outer rows [lo, hi).
func argRange[T Num, I Index](dst []I, x []T, n, inner int, min bool, lo, hi int) {
	first := lowest[T]()
	if min {
		first = highest[T]()
	}
	for o := lo; o < hi; o++ {
		xo := x[o*n*inner : (o+1)*n*inner]
		for i := 0; i < inner; i++ {
			best, at := first, 0
			for k := 0; k < n; k++ {
				v := xo[k*inner+i]
				if (!min && v > best) || (min && v < best) {
					best, at = v, k
				}
			}
			dst[o*inner+i] = I(at)
		}
	}
}

// lowest and highest are the extreme finite values of T (Eigen's
// NumTraits<T>::lowest() and highest()).
func lowest[T Num]() T {
	var v T
	switch p := any(&v).(type) {
	case *float32:
		*p = -math.MaxFloat32
	case *float64:
		*p = -math.MaxFloat64
	case *int32:
		*p = math.MinInt32
	case *int64:
		*p = math.MinInt64
	}
	return v
}

func highest[T Num]() T {
	var v T
	switch p := any(&v).(type) {
	case *float32:
		*p = math.MaxFloat32
	case *float64:
		*p = math.MaxFloat64
	case *int32:
		*p = math.MaxInt32
	case *int64:
		*p = math.MaxInt64
	}
	return v
}
