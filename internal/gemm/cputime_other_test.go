//go:build !unix

package gemm

// cpuSeconds is not measured on this platform.
func cpuSeconds() float64 { return -1 }
