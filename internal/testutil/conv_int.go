package testutil

// Integer oracles of the Conv2D family on a NaiveConv geometry: the same
// loops as Forward and BackpropInput, summing in int64 and truncating to
// int32 at the end. int64 arithmetic wraps modulo 2^64, a multiple of
// 2^32, so the truncated results are the exact ones modulo 2^32 for any
// operands: what wrapping int32 arithmetic gives, in any order.

// ForwardInt32 returns the convolution of x with f in int32 (wrapping).
func (g *NaiveConv) ForwardInt32(x, f []int32) []int32 {
	y := make([]int64, g.N*g.OH*g.OW*g.O)
	g.visit(func(xi, fi, yi int) { y[yi] += int64(x[xi]) * int64(f[fi]) })
	return truncInt32(y)
}

// BackpropInputInt32 returns the input gradient for filter f and output
// gradient dy in int32 (wrapping).
func (g *NaiveConv) BackpropInputInt32(f, dy []int32) []int32 {
	dx := make([]int64, g.N*g.H*g.W*g.C)
	g.visit(func(xi, fi, yi int) { dx[xi] += int64(dy[yi]) * int64(f[fi]) })
	return truncInt32(dx)
}

func truncInt32(v []int64) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}
