package gemm

// packA copies rows [i0, i0+mc) and columns [p0, p0+kc) of op(A) into dst
// as micro-panels of mr rows: panel q holds rows i0+q*mr.. with element
// (i, p) at dst[q*mr*kc + p*mr + i]. Rows past mc are zero.
func packA[T Float](dst, a []T, lda int, trans bool, i0, mc, p0, kc int) {
	start := 0
	if trans && asm() {
		// A stored k×m: the panels in one pass over the rows.
		start = packColsAsm(dst, a, p0*lda+i0, lda, kc, mc)
	}
	for ir := start; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		d := dst[ir*kc : (ir+mr)*kc]
		switch {
		case !trans && rows == mr:
			// A stored m×k: six rows read side by side.
			base := (i0+ir)*lda + p0
			r0 := a[base : base+kc]
			r1 := a[base+lda : base+lda+kc]
			r2 := a[base+2*lda : base+2*lda+kc]
			r3 := a[base+3*lda : base+3*lda+kc]
			r4 := a[base+4*lda : base+4*lda+kc]
			r5 := a[base+5*lda : base+5*lda+kc]
			done := 0 // columns packed by the assembly routine
			if asm() {
				done = packRows6Asm(d, a, base, lda, kc)
			}
			for p := done; p < kc; p++ {
				q := d[p*mr : p*mr+mr : p*mr+mr]
				q[0], q[1], q[2], q[3], q[4], q[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
			}
		case !trans:
			clear(d)
			for i := range rows {
				base := (i0+ir+i)*lda + p0
				for p, v := range a[base : base+kc] {
					d[p*mr+i] = v
				}
			}
		case rows == mr:
			// A stored k×m: each step p is six contiguous elements.
			for p := range kc {
				base := (p0+p)*lda + i0 + ir
				s := a[base : base+mr : base+mr]
				q := d[p*mr : p*mr+mr : p*mr+mr]
				q[0], q[1], q[2], q[3], q[4], q[5] = s[0], s[1], s[2], s[3], s[4], s[5]
			}
		default:
			// Element loops: copy and clear would be calls per step.
			for p := range kc {
				base := (p0+p)*lda + i0 + ir
				s := a[base : base+rows]
				q := d[p*mr : p*mr+mr : p*mr+mr]
				for i, v := range s {
					q[i] = v
				}
				for i := rows; i < mr; i++ {
					q[i] = 0
				}
			}
		}
	}
}

// packB copies rows [p0, p0+kc) and columns [j0, j0+nc) of op(B) into dst
// as micro-panels of nr columns: panel q holds columns j0+q*nr.. with
// element (p, j) at dst[q*nr*kc + p*nr + j]. Columns past nc are zero.
func packB[T Float](dst, b []T, ldb int, trans bool, p0, kc, j0, nc, nr int) {
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		d := dst[jr*kc : (jr+nr)*kc]
		if !trans {
			// B stored k×n: each step p is nr contiguous elements (64
			// or 128 bytes, whole cache lines of the aligned panel).
			base := p0*ldb + j0 + jr
			if asm() && cols == nr {
				packBPanelAsm(d, b, base, ldb, kc, nr)
				continue
			}
			for p := range kc {
				q := d[p*nr : p*nr+nr]
				copy(q, b[base:base+cols])
				clear(q[cols:])
				base += ldb
			}
			continue
		}
		// B stored n×k: column j of op(B) is a contiguous row of B.
		if cols < nr {
			clear(d)
		}
		for j := range cols {
			base := (j0+jr+j)*ldb + p0
			for p, v := range b[base : base+kc] {
				d[p*nr+j] = v
			}
		}
	}
}

// pairOrder is where pairPanels puts element j of a 16-column row of a
// pair of B rows: vector 0 of the pair holds columns 0,1,4,5,8,9,12,13 and
// vector 1 columns 2,3,6,7,10,11,14,15, each column as its two rows'
// elements side by side. After the kernel's two products per column, the
// even-and-odd reduction's in-lane shuffles (imm 0x88, 0xdd) give the
// columns in order.
var pairOrder = func() (o [16]int) {
	for j := range 16 {
		// Column j is in 128-bit lane j/4 of the result, taken from
		// vector j/2%2 at pair j%2 of that lane.
		v, l, h := j/2%2, j/4, j%2
		o[j] = v*16 + l*4 + h*2
	}
	return o
}()

// pairPanels reorders packed 16-column B micro-panels of kc rows (kc
// even) for the pair-order kernels: rows 2q and 2q+1 (32 elements) become
// the two vectors of pairOrder, element (2q+r, j) at 32q + pairOrder[j] + r.
func pairPanels[T Float](bp []T, kc, nr int) {
	if nr != 16 || kc%2 != 0 {
		panic("gemm: pairPanels needs 16 columns and an even kc")
	}
	var tmp [32]T
	for q := 0; q+32 <= len(bp); q += 32 {
		copy(tmp[:], bp[q:q+32])
		for r := range 2 {
			for j := range 16 {
				bp[q+pairOrder[j]+r] = tmp[r*16+j]
			}
		}
	}
}
