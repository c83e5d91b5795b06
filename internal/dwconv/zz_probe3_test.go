package dwconv

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func minNs3(reps int, fn func()) float64 {
	fn()
	best := 1e18
	for range reps {
		t0 := time.Now()
		fn()
		if d := float64(time.Since(t0).Nanoseconds()); d < best {
			best = d
		}
	}
	return best
}

func TestProbeBanks(t *testing.T) {
	if os.Getenv("DWPROBE") == "" {
		t.Skip()
	}
	for _, c := range []int{32, 36, 40, 128, 132} {
		for _, s := range []int{1, 2} {
			npix := 28
			nb := 4
			o, x, tp := benchRows(c, npix, s)
			vec := float64(npix * nb)
			acc := make([]float32, 72*nb)
			f := minNs3(2000, func() {
				Filter3x3(acc, o, x, npix, nb, c, s, nil)
			}) / vec * 3.07
			w := minNs3(2000, func() { Fwd3x3(o, x, tp, npix, nb, c, s, nil) }) / vec * 3.07
			fmt.Printf("c%d s%d: filter %.2f fwd %.2f cycles/vec\n", c, s, f, w)
		}
	}
}
