package bnkern

// Generic Go loops with the contracts of the row kernels of bnkern.go
// (bounds already checked, slices of whole rows). They run for float64,
// for fewer than 8 channels and when useAsm is false (a CPU without AVX2
// and FMA), and are the reference of the block kernels' tests. Every
// product is converted to T explicitly: an explicit conversion rounds, so
// the compiler may not fuse it into a multiply-add (which the block
// kernels do not use either).
//
// Four rows are processed together so that each channel's coefficients
// and accumulators are loaded once per four elements and the inner loops
// over channels are free of bounds checks.

func statsGo[T Float](x []T, C int, K []T, p1, p2 []float64) {
	K, p1, p2 = K[:C], p1[:C], p2[:C]
	o := 0
	for ; o+4*C <= len(x); o += 4 * C {
		x0, x1, x2, x3 := x[o:o+C], x[o+C:o+2*C], x[o+2*C:o+3*C], x[o+3*C:o+4*C]
		x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
		k, a, b := K[:len(x0)], p1[:len(x0)], p2[:len(x0)]
		for c, v := range x0 {
			kc := k[c]
			d0, d1, d2, d3 := v-kc, x1[c]-kc, x2[c]-kc, x3[c]-kc
			a[c] += float64((d0 + d1) + (d2 + d3))
			b[c] += float64((T(d0*d0) + T(d1*d1)) + (T(d2*d2) + T(d3*d3)))
		}
	}
	for ; o < len(x); o += C {
		x0 := x[o : o+C]
		k, a, b := K[:len(x0)], p1[:len(x0)], p2[:len(x0)]
		for c, v := range x0 {
			d := v - k[c]
			a[c] += float64(d)
			b[c] += float64(d * d)
		}
	}
}

func gradSumsGo[T Float](dy, x []T, C int, M []T, p1, p2 []float64) {
	M, p1, p2 = M[:C], p1[:C], p2[:C]
	x = x[:len(dy)]
	o := 0
	for ; o+4*C <= len(dy); o += 4 * C {
		g0, g1, g2, g3 := dy[o:o+C], dy[o+C:o+2*C], dy[o+2*C:o+3*C], dy[o+3*C:o+4*C]
		x0, x1, x2, x3 := x[o:o+C], x[o+C:o+2*C], x[o+2*C:o+3*C], x[o+3*C:o+4*C]
		g1, g2, g3 = g1[:len(g0)], g2[:len(g0)], g3[:len(g0)]
		x0, x1, x2, x3 = x0[:len(g0)], x1[:len(g0)], x2[:len(g0)], x3[:len(g0)]
		m, a, b := M[:len(g0)], p1[:len(g0)], p2[:len(g0)]
		for c, v := range g0 {
			mc := m[c]
			e1, e2, e3 := g1[c], g2[c], g3[c]
			a[c] += float64((v + e1) + (e2 + e3))
			b[c] += float64((T(v*(x0[c]-mc)) + T(e1*(x1[c]-mc))) + (T(e2*(x2[c]-mc)) + T(e3*(x3[c]-mc))))
		}
	}
	for ; o < len(dy); o += C {
		g0, x0 := dy[o:o+C], x[o:o+C]
		x0 = x0[:len(g0)]
		m, a, b := M[:len(g0)], p1[:len(g0)], p2[:len(g0)]
		for c, v := range g0 {
			a[c] += float64(v)
			b[c] += float64(v * (x0[c] - m[c]))
		}
	}
}

func normGo[T Float](x, y []T, C int, mu, k, beta []T) {
	mu, k, beta = mu[:C], k[:C], beta[:C]
	y = y[:len(x)]
	o := 0
	for ; o+4*C <= len(x); o += 4 * C {
		x0, x1, x2, x3 := x[o:o+C], x[o+C:o+2*C], x[o+2*C:o+3*C], x[o+3*C:o+4*C]
		y0, y1, y2, y3 := y[o:o+C], y[o+C:o+2*C], y[o+2*C:o+3*C], y[o+3*C:o+4*C]
		x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
		y0, y1, y2, y3 = y0[:len(x0)], y1[:len(x0)], y2[:len(x0)], y3[:len(x0)]
		m, kk, b := mu[:len(x0)], k[:len(x0)], beta[:len(x0)]
		for c, v := range x0 {
			mc, kc, bc := m[c], kk[c], b[c]
			y0[c] = T((v-mc)*kc) + bc
			y1[c] = T((x1[c]-mc)*kc) + bc
			y2[c] = T((x2[c]-mc)*kc) + bc
			y3[c] = T((x3[c]-mc)*kc) + bc
		}
	}
	for ; o < len(x); o += C {
		x0, y0 := x[o:o+C], y[o:o+C]
		y0 = y0[:len(x0)]
		m, kk, b := mu[:len(x0)], k[:len(x0)], beta[:len(x0)]
		for c, v := range x0 {
			y0[c] = T((v-m[c])*kk[c]) + b[c]
		}
	}
}

func gradDxGo[T Float](dy, x, dx []T, C int, A, mdy, B, m []T) {
	A, mdy, B, m = A[:C], mdy[:C], B[:C], m[:C]
	x, dx = x[:len(dy)], dx[:len(dy)]
	o := 0
	for ; o+4*C <= len(dy); o += 4 * C {
		g0, g1, g2, g3 := dy[o:o+C], dy[o+C:o+2*C], dy[o+2*C:o+3*C], dy[o+3*C:o+4*C]
		x0, x1, x2, x3 := x[o:o+C], x[o+C:o+2*C], x[o+2*C:o+3*C], x[o+3*C:o+4*C]
		d0, d1, d2, d3 := dx[o:o+C], dx[o+C:o+2*C], dx[o+2*C:o+3*C], dx[o+3*C:o+4*C]
		g1, g2, g3 = g1[:len(g0)], g2[:len(g0)], g3[:len(g0)]
		x0, x1, x2, x3 = x0[:len(g0)], x1[:len(g0)], x2[:len(g0)], x3[:len(g0)]
		d0, d1, d2, d3 = d0[:len(g0)], d1[:len(g0)], d2[:len(g0)], d3[:len(g0)]
		a, md, b, mm := A[:len(g0)], mdy[:len(g0)], B[:len(g0)], m[:len(g0)]
		for c, v := range g0 {
			ac, gc, bc, mc := a[c], md[c], b[c], mm[c]
			d0[c] = T(ac*(v-gc)) - T(bc*(x0[c]-mc))
			d1[c] = T(ac*(g1[c]-gc)) - T(bc*(x1[c]-mc))
			d2[c] = T(ac*(g2[c]-gc)) - T(bc*(x2[c]-mc))
			d3[c] = T(ac*(g3[c]-gc)) - T(bc*(x3[c]-mc))
		}
	}
	for ; o < len(dy); o += C {
		g0, x0, d0 := dy[o:o+C], x[o:o+C], dx[o:o+C]
		x0, d0 = x0[:len(g0)], d0[:len(g0)]
		a, md, b, mm := A[:len(g0)], mdy[:len(g0)], B[:len(g0)], m[:len(g0)]
		for c, v := range g0 {
			d0[c] = T(a[c]*(v-md[c])) - T(b[c]*(x0[c]-mm[c]))
		}
	}
}

func scaleGo[T Float](dy, dx []T, C int, k []T) {
	k = k[:C]
	dx = dx[:len(dy)]
	for o := 0; o < len(dy); o += C {
		g, d := dy[o:o+C], dx[o:o+C]
		d = d[:len(g)]
		kk := k[:len(g)]
		for c, v := range g {
			d[c] = v * kk[c]
		}
	}
}
