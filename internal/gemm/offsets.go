package gemm

import "github.com/tapegrad/tapegrad/internal/cpu"

// AddOffsets sets dst[t] = src[t] + v for t < len(src) (dst at least as
// long): the inner loop of an Offsetter that keeps a per-column template
// of segment offsets and adds each row's base (internal/conv's rowsMap).
// The assembly tiers add four (AVX2) or eight (AVX-512, the last ones
// under a mask) offsets per instruction.
func AddOffsets(dst, src []int, v int) {
	n := len(src)
	if n == 0 {
		return
	}
	dst = dst[:n]
	switch {
	case tier >= cpu.AVX512:
		addOffsets512(&dst[0], &src[0], n, v)
		return
	case tier >= cpu.AVX2:
		if k := n &^ 3; k > 0 {
			addOffsets256(&dst[0], &src[0], k, v)
			dst, src = dst[k:], src[k:]
		}
	}
	for t, s := range src {
		dst[t] = s + v
	}
}
