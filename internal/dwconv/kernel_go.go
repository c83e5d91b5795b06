package dwconv

// Portable Go loops with the contracts of the exported functions (bounds
// already checked) on the channels [0, w). They run when useAsm is false
// and are the reference of the assembly kernels' tests. The loops that
// accumulate into packed tap sums take their layout: blocks of lanes
// channels, tap k of block b at (9b+k)·lanes.

func fwd3x3Go(o []float32, x *[3][]float32, t []float32, npix, w, c, s int) {
	for j := range npix {
		oj := o[j*c : j*c+w]
		for ch := range oj {
			var sum float32
			for p := range 3 {
				xr := x[p][s*j*c+ch:]
				for q := range 3 {
					sum += xr[q*c] * t[(3*p+q)*c+ch]
				}
			}
			oj[ch] = sum
		}
	}
}

func bwd3x3S2Go(o []float32, d *[3][]float32, t []float32, npairs, w, c int) {
	for m := range npairs {
		e := o[2*m*c : 2*m*c+w]
		od := o[(2*m+1)*c : (2*m+1)*c+w]
		for ch := range e {
			var se, so float32
			for p := range 3 {
				d0, d1 := d[p][m*c+ch], d[p][(m+1)*c+ch]
				se += d0 * t[(3*p+2)*c+ch]
				se += d1 * t[3*p*c+ch]
				so += d1 * t[(3*p+1)*c+ch]
			}
			e[ch], od[ch] = se, so
		}
	}
}

func filter3x3Go(acc, dy []float32, x *[3][]float32, npix, w, c, s, lanes int) {
	for ch := range w {
		a := acc[9*lanes*(ch/lanes)+ch%lanes:]
		for j := range npix {
			v := dy[j*c+ch]
			for p := range 3 {
				xr := x[p][s*j*c+ch:]
				for q := range 3 {
					a[lanes*(3*p+q)] += v * xr[q*c]
				}
			}
		}
	}
}

func dotTapsGo(o []float32, xs, ts [][]float32, w int) {
	o = o[:w]
	for ch := range o {
		var sum float32
		for i := range xs {
			sum += xs[i][ch] * ts[i][ch]
		}
		o[ch] = sum
	}
}

func axpyTapsGo(acc []float32, ks []int, xs [][]float32, dy []float32, w, lanes int) {
	for ch := range w {
		a := acc[9*lanes*(ch/lanes)+ch%lanes:]
		for i, k := range ks {
			a[lanes*k] += dy[ch] * xs[i][ch]
		}
	}
}
