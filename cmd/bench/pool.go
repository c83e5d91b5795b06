package main

import (
	"math/rand"

	"github.com/tapegrad/tapegrad/autodiff"
)

// W9: FractionalAvgPool, pooling ratio 1.44 on rows and columns (32 → 22),
// non-overlapping, x [32, 32, 32, 64] NHWC float32. The op runs in its
// deterministic mode with fixed non-zero seeds, so every repetition draws
// the same pooling sequences and does the same work (pseudo-random
// sequences, a_i = ceil(α·(i+u)), like the fixed row_seq and col_seq of
// workloads.json that PyTorch's W9 uses).
// fwd pools (and draws the sequences); fwdbwd adds the gradient of a fixed
// random upstream w.r.t. x (FractionalAvgPoolGrad).
//
// PyTorch has no fractional pooling: its W9 is a user-level emulation
// (averaging matmuls) and W9ap (avg_pool2d 2x2) the nearest built-in, which
// has no tapegrad twin (tapegrad has no AvgPool op), so W9ap is not run here.
func init() {
	register(workload{name: "W9", desc: "FractionalAvgPool ratio 1.44 (32->22) N32 32x32 C64 NHWC, fixed seeds", build: buildW9})
}

func buildW9(threads int) ([]mode, error) {
	const n, h, w, c = 32, 32, 32, 64
	const oh, ow = 22, 22 // floor(32 / 1.44)
	attrs, err := parseAttrs("FractionalAvgPool", map[string]any{
		"pooling_ratio": []any{1.0, 1.44, 1.44, 1.0}, "pseudo_random": true, "overlapping": false,
		"deterministic": true, "seed": 9.0, "seed2": 1.0,
	})
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(9))
	x, err := randParam(r, "x", n, h, w, c)
	if err != nil {
		return nil, err
	}
	up, err := randParam(r, "upstream", n, oh, ow, c)
	if err != nil {
		return nil, err
	}
	// Minimum traffic (workloads.json): fwd reads x and writes y; fwdbwd
	// also reads dy and writes dx.
	b := tensorBytes(n, h, w, c) + tensorBytes(n, oh, ow, c)
	return paramModes(threads, "FractionalAvgPool", attrs, []*autodiff.Param{x}, 1, up, 0, b, 2*b)
}
