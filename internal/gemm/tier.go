package gemm

import "github.com/tapegrad/tapegrad/internal/cpu"

// tier is the instruction-set tier the package runs: cpu.Tier() (the
// best the CPU has, capped by TAPEGRAD_ISA), chosen once at start-up.
// Tests switch it to run every tier the CPU has.
var tier = cpu.Tier()

// asm reports whether the current tier runs the assembly routines.
func asm() bool { return tier > cpu.Go }

// Blocking parameters per tier, indexed by cpu.ISA.
//
// Go and AVX2 (6×16 float32, 6×8 float64 tiles), tuned on Zen 3 (32 KiB
// L1D, 512 KiB L2 per core, 32 MiB L3): a 16 KiB B micro-panel in L1, a
// ~150 KiB A block in L2, a ~4 MiB B block in L3. Scans of kc 192–384 and
// mc 96–240 at n = 1024 all ran within the machine's noise of these.
//
// AVX-512 (6×32 float32, 6×16 float64 tiles), for Zen 5 (48 KiB L1D,
// 1 MiB L2 per core): a 32 KiB B micro-panel in L1.
//
// Variables rather than constants so tests can shrink them.
var (
	blocking32 = [...]blocking{
		cpu.Go:     {nr: 16, mc: 144, kc: 256, nc: 4080},
		cpu.AVX2:   {nr: 16, mc: 144, kc: 256, nc: 4080},
		cpu.AVX512: {nr: 32, mc: 144, kc: 256, nc: 4096},
	}
	blocking64 = [...]blocking{
		cpu.Go:     {nr: 8, mc: 72, kc: 256, nc: 4080},
		cpu.AVX2:   {nr: 8, mc: 72, kc: 256, nc: 4080},
		cpu.AVX512: {nr: 16, mc: 72, kc: 256, nc: 4096},
	}
)

// maxNR is the widest micro-tile of any tier.
const maxNR = 32

// problemTier is the tier whose kernels compute a product with n columns:
// the current tier, except that AVX-512 hands products no wider than an
// AVX2 tile (16 float32 or 8 float64 columns) to AVX2's tile shapes and
// blocking, without a half-empty tile (a convolution with few channels);
// on the AVX-512 tier their kernels run on ZMM registers (zmmNarrow) with
// AVX2's bits. The choice depends on the shape only, so results stay
// bit-identical for any thread count.
func problemTier[T Float](n int) cpu.ISA {
	var z T
	nr := blocking64[cpu.AVX2].nr
	if _, ok := any(z).(float32); ok {
		nr = blocking32[cpu.AVX2].nr
	}
	if tier == cpu.AVX512 && n <= nr {
		return cpu.AVX2
	}
	return tier
}

// setup returns the blocking and micro-kernel of tier isa for T.
func setup[T Float](isa cpu.ISA) (blocking, kernelFunc[T]) {
	var z T
	switch any(z).(type) {
	case float32:
		var k kernelFunc[float32]
		switch isa {
		case cpu.AVX2:
			k = kernelAVX2F32
		case cpu.AVX512:
			k = kernelAVX512F32
		default:
			k = kernelGo[float32]
		}
		return blocking32[isa], any(k).(kernelFunc[T])
	default:
		var k kernelFunc[float64]
		switch isa {
		case cpu.AVX2:
			k = kernelAVX2F64
		case cpu.AVX512:
			k = kernelAVX512F64
		default:
			k = kernelGo[float64]
		}
		return blocking64[isa], any(k).(kernelFunc[T])
	}
}

// stridedKernel returns tier isa's strided-A kernel for T, or nil for
// the Go tier, and whether it computes any edge tile (1 to mr
// rows, 1 to nr columns) straight into C; otherwise it takes 2, 4 or 6
// rows and all nr columns.
func stridedKernel[T Float](isa cpu.ISA) (k stridedKernelFunc[T], anyEdge bool) {
	var z T
	_, f32 := any(z).(float32)
	switch {
	case isa == cpu.AVX2 && f32:
		return any(stridedKernelFunc[float32](stridedAVX2F32)).(stridedKernelFunc[T]), false
	case isa == cpu.AVX2:
		return any(stridedKernelFunc[float64](stridedAVX2F64)).(stridedKernelFunc[T]), false
	case isa == cpu.AVX512 && f32:
		return any(stridedKernelFunc[float32](stridedAVX512F32)).(stridedKernelFunc[T]), true
	case isa == cpu.AVX512:
		return any(stridedKernelFunc[float64](stridedAVX512F64)).(stridedKernelFunc[T]), true
	}
	return nil, false
}

// rowsKernel returns tier isa's kernel reading a Rows A in place for T,
// or nil where A is packed instead (the Go tier).
func rowsKernel[T Float](isa cpu.ISA) rowsKernelFunc[T] {
	if blocking32[isa].kc > zeroLen || blocking64[isa].kc > zeroLen {
		return nil
	}
	var z T
	_, f32 := any(z).(float32)
	switch {
	case isa == cpu.AVX2 && f32:
		return any(rowsKernelFunc[float32](rowsAVX2F32)).(rowsKernelFunc[T])
	case isa == cpu.AVX2:
		return any(rowsKernelFunc[float64](rowsAVX2F64)).(rowsKernelFunc[T])
	case isa == cpu.AVX512 && f32:
		return any(rowsKernelFunc[float32](rowsAVX512F32)).(rowsKernelFunc[T])
	case isa == cpu.AVX512:
		return any(rowsKernelFunc[float64](rowsAVX512F64)).(rowsKernelFunc[T])
	}
	return nil
}

// rowsKernelTall returns tier isa's kernel reading a Rows A in place for
// two mr-row tiles stacked, or nil where there is none: the AVX2 tile
// shapes on ZMM registers (zmmNarrow), whose Rows kernel of six rows
// keeps only six accumulators. It gives the bits of rowsKernel(isa).
func rowsKernelTall[T Float](isa cpu.ISA) rowsKernelFunc[T] {
	if isa != cpu.AVX2 || !zmmNarrow() || rowsKernel[T](isa) == nil {
		return nil
	}
	var z T
	if _, ok := any(z).(float32); ok {
		return any(rowsKernelFunc[float32](rowsTallF32)).(rowsKernelFunc[T])
	}
	return any(rowsKernelFunc[float64](rowsTallF64)).(rowsKernelFunc[T])
}

// rowsKernelPair returns the pair-order kernels (one tile, two stacked)
// for pr's Rows A on tier isa, or nils: float32 products no wider than an
// AVX2 tile on ZMM registers (zmmNarrow), whose A segments have an even
// length and fit in a k block (planRowsK's whole-segment blocks, so every
// block starts at an even k and has an even length). They load each pair
// of A's elements once for two products where the Z kernels load each
// element for one: the tile loop of W1's input gradient (n 16, segments
// of 32), 150–165 → 200–206 GFLOP/s on Zen 5 (BenchmarkKernelW1). The sums differ from AVX2's in
// order (even and odd k apart), not with the thread count: the choice
// depends on the shape only.
func rowsKernelPair[T Float](pr *problem[T], isa cpu.ISA) (rowsKernelFunc[T], rowsKernelFunc[T]) {
	var z T
	if _, ok := any(z).(float32); !ok || !pairRows || isa != cpu.AVX2 || !zmmNarrow() ||
		pr.ra.Map == nil || pr.ra.Seg%2 != 0 || pr.piece != 0 {
		return nil, nil
	}
	return any(rowsKernelFunc[float32](rowsPairF32)).(rowsKernelFunc[T]),
		any(rowsKernelFunc[float32](rowsPairTallF32)).(rowsKernelFunc[T])
}

// pairRows lets Gemm use the pair-order Rows kernels (rowsKernelPair);
// tests turn it off to compare with AVX2's order.
var pairRows = true

// srowsKernel returns the AVX-512 kernel reading a stored Aᵀ and a Rows B
// in place for T (see bothInPlaceKernel).
func srowsKernel[T Float]() srowsKernelFunc[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(srowsKernelFunc[float32](srowsF32)).(srowsKernelFunc[T])
	}
	return any(srowsKernelFunc[float64](srowsF64)).(srowsKernelFunc[T])
}
