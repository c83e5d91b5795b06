// Package cpu reports the CPU features tapegrad's assembly kernels need,
// detected once at start-up. Under the noasm build tag every feature reads
// as absent, which forces the portable Go kernels everywhere.
package cpu

// X86 describes the x86-64 features the assembly kernels use. All fields
// are false on other architectures and under the noasm build tag.
var X86 struct {
	// AVX2FMA is true when the CPU and the operating system support AVX,
	// AVX2 and FMA3 (256-bit YMM registers saved by the OS), which is what
	// the AVX2/FMA micro-kernels require.
	AVX2FMA bool
}
