//go:build unix

package parallel

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user plus system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIdleUsesNoCPU checks that workers stop using CPU shortly after the
// last call: a burst of calls on several threads, a pause of 50 ms for the
// workers to park, then at most 20 ms of CPU time over 200 ms of idleness
// (the whole process's, so the runtime's own background work counts too).
// A window over the limit is measured again, up to three windows in all:
// a spinning worker burns most of every window, while a transient (the
// runtime's background work, a worker the OS held back under load) does
// not repeat.
func TestIdleUsesNoCPU(t *testing.T) {
	var sink atomic.Int64
	work := func() {
		for range 2000 {
			For(8, 8, 1, func(lo, hi int) { sink.Add(int64(hi - lo)) })
			Each(4, 16, func(w, i int) { sink.Add(1) })
		}
	}
	work()
	time.Sleep(50 * time.Millisecond)
	var used []time.Duration
	for range 3 {
		c0 := cpuTime(t)
		time.Sleep(200 * time.Millisecond)
		u := cpuTime(t) - c0
		used = append(used, u)
		t.Logf("CPU time over 200 ms of idleness: %v", u)
		if u <= 20*time.Millisecond {
			return
		}
	}
	t.Errorf("idle process used %v of CPU in three windows of 200 ms, want under 20 ms in one (workers still spinning?)", used)
}

// BenchmarkGapCPU measures the CPU time a call costs when calls come
// 1 ms apart (a process doing small parallel work now and then): the
// work itself plus what the workers and the caller burn spinning before
// they park. Reported as cpu-µs/call (the process's user plus system
// time, divided by the calls).
func BenchmarkGapCPU(b *testing.B) {
	var sink [8][16]int64
	fn := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sink[i][0]++
		}
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		For(4, 4, 1, fn)
		time.Sleep(time.Millisecond)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/call")
}
