//go:build amd64 && !noasm

package cpu

import xcpu "golang.org/x/sys/cpu"

func init() {
	// HasAVX already includes the OS check (XGETBV); HasFMA does not, so
	// all three are required.
	X86.AVX2FMA = xcpu.X86.HasAVX && xcpu.X86.HasAVX2 && xcpu.X86.HasFMA
}
