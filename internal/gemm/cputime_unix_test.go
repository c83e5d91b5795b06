//go:build unix

package gemm

import "syscall"

// cpuSeconds returns the user+system CPU time of the process, so that
// benchmarks can report throughput per CPU-second, which other processes
// on a shared machine disturb less than wall-clock time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
