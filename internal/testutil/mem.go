package testutil

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"
)

// MemProbe measures the memory of a benchmark: the peak live heap (the
// garbage collector's /gc/heap/live:bytes of runtime/metrics, sampled
// every millisecond, and after a forced collection when the probe starts
// and when it stops) and the process's peak resident set (VmHWM of
// /proc/self/status, reset through /proc/self/clear_refs when the probe
// starts; Linux only).
//
// The live heap counts everything the process keeps reachable (data sets,
// models, a tape's pooled buffers); the collector updates it at the end of
// each cycle, so between cycles the sample lags. The forced collection at
// the stop counts what the caller still holds (keep the tape reachable
// until then: its pooled buffers are what its next step uses). The peak
// RSS is meaningful only when the benchmark runs alone in its process
// (go test -run '^$' -bench '^BenchmarkName$').
type MemProbe struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
	rss0 uint64 // VmRSS when the probe started
}

// LiveHeap returns the live heap at the end of the last collection.
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// StartMemProbe collects garbage, resets the peak RSS and starts sampling.
func StartMemProbe() *MemProbe {
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM
	p := &MemProbe{stop: make(chan struct{}), peak: LiveHeap(), rss0: procStatus("VmRSS:")}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tk.C:
				p.peak = max(p.peak, LiveHeap())
			}
		}
	}()
	return p
}

// Stop stops sampling, collects garbage and returns the peak live heap
// and the peak RSS (0 if unknown), in bytes.
func (p *MemProbe) Stop() (peakLive, peakRSS uint64) {
	close(p.stop)
	p.done.Wait()
	runtime.GC()
	p.peak = max(p.peak, LiveHeap())
	return p.peak, VmHWM()
}

// Report stops p and reports the peak live heap, the peak RSS and the
// peak RSS less the RSS when the probe started as the benchmark metrics
// peak-live-MB, peak-RSS-MB and RSS-delta-MB (the last is what
// torch_twin.py --mem reports for PyTorch).
func (p *MemProbe) Report(b *testing.B) {
	live, rss := p.Stop()
	b.ReportMetric(float64(live)/1e6, "peak-live-MB")
	if rss > 0 {
		b.ReportMetric(float64(rss)/1e6, "peak-RSS-MB")
		b.ReportMetric((float64(rss)-float64(p.rss0))/1e6, "RSS-delta-MB")
	}
}

// VmHWM returns the process's peak resident set in bytes, or 0 if
// /proc/self/status cannot tell.
func VmHWM() uint64 { return procStatus("VmHWM:") }

// procStatus returns the size on the line of /proc/self/status that starts
// with key, in bytes, or 0.
func procStatus(key string) uint64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(s, []byte("\n")) {
		if f := bytes.Fields(line); len(f) == 3 && string(f[0]) == key {
			kb, _ := strconv.ParseUint(string(f[1]), 10, 64)
			return kb << 10
		}
	}
	return 0
}
