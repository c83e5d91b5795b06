package dwconv

// Portable Go loops with the contracts of the exported functions (bounds
// already checked). They run when useAsm is false and are the reference
// of the assembly kernels' tests.

func fwd3x3Go(o []float32, x *[3][]float32, t []float32, npix, nb, c, s int) {
	w := Block * nb
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

func bwd3x3S2Go(o []float32, d *[3][]float32, t []float32, npairs, nb, c int) {
	w := Block * nb
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

func filter3x3Go(acc, dy []float32, x *[3][]float32, npix, nb, c, s int) {
	for b := range nb {
		a := acc[72*b : 72*b+72]
		for j := range npix {
			for l := range Block {
				ch := Block*b + l
				v := dy[j*c+ch]
				for p := range 3 {
					xr := x[p][s*j*c+ch:]
					for q := range 3 {
						a[8*(3*p+q)+l] += v * xr[q*c]
					}
				}
			}
		}
	}
}

func dotTapsGo(o []float32, xs, ts [][]float32, nb int) {
	o = o[:Block*nb]
	for ch := range o {
		var sum float32
		for i := range xs {
			sum += xs[i][ch] * ts[i][ch]
		}
		o[ch] = sum
	}
}

func axpyTapsGo(acc []float32, ks []int, xs [][]float32, dy []float32, nb int) {
	for b := range nb {
		for i, k := range ks {
			a := acc[72*b+8*k : 72*b+8*k+8]
			xi := xs[i][Block*b : Block*b+8]
			d := dy[Block*b : Block*b+8]
			for l := range a {
				a[l] += d[l] * xi[l]
			}
		}
	}
}
