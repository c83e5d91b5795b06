package backward_test

import (
	"syscall"
	"testing"
)

// benchCPU runs step once to warm up, then b.N times on the benchmark's
// clock, and reports the process's CPU time per step as cpu-ms/op (the
// machine is shared: CPU time is steadier than wall time).
func benchCPU(b *testing.B, step func()) {
	step()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		step()
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
