// Command bench times tapegrad on the benchmark workloads W1–W10 and on
// GEMM (README.md; the definitions are in workloads.json, shared with the
// PyTorch side torch/bench_torch.py), printing one line per (workload,
// mode), or with -json one JSON object per line in bench_torch.py's schema,
// so the two outputs join on (workload, mode, threads).
// Each line also gives the heap allocations of a repetition (allocs_per_op,
// bytes_per_op in the JSON lines): runtime.MemStats counted around the
// timed repetitions, so over every goroutine (workers included), at the
// run's GOMAXPROCS; the warm-up repetitions are not counted.
//
//	go run ./cmd/bench [-json] [-threads N] [-workload W1,W2] [-modes fwd,fwdbwd] [-reps 20] [-min-time 0.5s]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// result is one line of output, in bench_torch.py's schema.
type result struct {
	System   string  `json:"system"`
	Workload string  `json:"workload"`
	Mode     string  `json:"mode"`
	Threads  int     `json:"threads"`
	Ms       float64 `json:"ms"`
	MsMin    float64 `json:"ms_min"`
	MsMax    float64 `json:"ms_max"`
	Reps     int     `json:"reps"`
	GFlops   float64 `json:"gflops,omitempty"`
	GBps     float64 `json:"gbps,omitempty"`
	Desc     string  `json:"desc,omitempty"`
	// AllocsPerOp and BytesPerOp are the heap allocations (objects and
	// bytes) per timed repetition; keys bench_torch.py's lines do not
	// have (compare.py ignores them).
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// ISA is the kernel tier the run used (internal/cpu.Tier: go, avx2 or
	// avx512; TAPEGRAD_ISA caps it).
	ISA string `json:"isa"`
}

// mode is one timed operation of a workload: run performs it once.
type mode struct {
	name  string
	flops float64 // 0 if not compute-bound
	bytes float64 // minimum memory traffic, 0 if not memory-bound
	run   func() error
	call  *opCall // the op run applies, nil for W10 and GEMM
}

// opCall describes the op application a mode times, for the test that
// checks the workloads against workloads.json: the op, its attrs, its
// inputs, and for fwdbwd the upstream gradient and how many leading inputs
// are differentiated.
type opCall struct {
	op       string
	attrs    any
	inputs   []*tensor.Dense
	upstream *tensor.Dense // fwdbwd only
	wrt      int           // fwdbwd only
}

// workload builds its modes for a thread count; a workload whose ops are
// not registered yet returns an error saying so, and is skipped.
type workload struct {
	name, desc string
	build      func(threads int) ([]mode, error)
}

var workloads []workload

// register adds w, keeping the workloads in a fixed order whatever the
// order of the files' init functions: W1 … W10 (numerically), then the
// others (GEMM512 …).
func register(w workload) {
	workloads = append(workloads, w)
	sort.SliceStable(workloads, func(i, j int) bool { return workloadLess(workloads[i].name, workloads[j].name) })
}

// workloadLess orders names as (W-workloads first, letters, number, rest).
func workloadLess(a, b string) bool {
	ga, la, na, ra := splitName(a)
	gb, lb, nb, rb := splitName(b)
	switch {
	case ga != gb:
		return ga < gb
	case la != lb:
		return la < lb
	case na != nb:
		return na < nb
	}
	return ra < rb
}

// splitName splits "W9ap" into group 0 (1 unless the letters are "W"),
// letters "W", number 9 and rest "ap".
func splitName(s string) (group int, letters string, num int, rest string) {
	i := 0
	for i < len(s) && (s[i] < '0' || s[i] > '9') {
		i++
	}
	letters = s[:i]
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		num = 10*num + int(s[j]-'0')
		j++
	}
	if letters != "W" {
		group = 1
	}
	return group, letters, num, s[j:]
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON lines in bench_torch.py's schema")
	threads := fs.Int("threads", 1, "threads (GOMAXPROCS and the kernels' budget)")
	only := fs.String("workload", "", "comma-separated workloads (default: all)")
	modes := fs.String("modes", "", "comma-separated modes (default: all of each workload)")
	reps := fs.Int("reps", 20, "minimum timed repetitions")
	warmup := fs.Int("warmup", 3, "untimed warm-up repetitions")
	minTime := fs.Duration("min-time", 500*time.Millisecond, "minimum total timed duration per mode")
	list := fs.Bool("list", false, "list the workloads and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, w := range workloads {
			fmt.Fprintf(stdout, "%-8s %s\n", w.name, w.desc)
		}
		return 0
	}
	if *threads < 1 {
		fmt.Fprintln(stderr, "bench: -threads must be >= 1")
		return 2
	}
	runtime.GOMAXPROCS(*threads)
	// Keep hot memory mapped: the arena reuses buffers, and returning them to
	// the OS between repetitions would make every repetition pay first-touch
	// page faults (see README.md).
	debug.SetGCPercent(400)
	want := set(*only)
	wantModes := set(*modes)
	known := map[string]bool{}
	for _, w := range workloads {
		known[w.name] = true
	}
	for n := range want {
		if !known[n] {
			fmt.Fprintf(stderr, "bench: unknown workload %q (see -list)\n", n)
			return 2
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	status := 0
	enc := json.NewEncoder(stdout)
	if !*asJSON {
		fmt.Fprintf(stdout, "kernel tier: %s (TAPEGRAD_ISA caps it)\n", cpu.Tier())
	}
	for _, w := range workloads {
		if len(want) > 0 && !want[w.name] {
			continue
		}
		ms, err := w.build(*threads)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %s skipped: %v\n", w.name, err)
			continue
		}
		for _, m := range ms {
			if len(wantModes) > 0 && !wantModes[m.name] {
				continue
			}
			runtime.GC() // collect setup garbage before timing
			times, al, err := timeIt(m.run, *warmup, *reps, *minTime)
			if err != nil {
				fmt.Fprintf(stderr, "bench: %s %s: %v\n", w.name, m.name, err)
				status = 1
				continue
			}
			r := summarize(w, m, *threads, times, al)
			if *asJSON {
				enc.Encode(r)
			} else {
				fmt.Fprintf(stdout, "%-8s %-10s threads=%d  %9.3f ms (min %.3f, max %.3f, n=%d)", r.Workload, r.Mode, r.Threads, r.Ms, r.MsMin, r.MsMax, r.Reps)
				if r.GFlops > 0 {
					fmt.Fprintf(stdout, "  %7.1f GFLOP/s", r.GFlops)
				}
				if r.GBps > 0 {
					fmt.Fprintf(stdout, "  %6.1f GB/s", r.GBps)
				}
				fmt.Fprintf(stdout, "  %.1f allocs/op  %.0f B/op\n", r.AllocsPerOp, r.BytesPerOp)
			}
		}
	}
	return status
}

func set(csv string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(csv, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

// maxReps bounds the timed repetitions of a mode.
const maxReps = 10000

// allocs is the heap allocation of a sequence of repetitions.
type allocs struct {
	objects, bytes uint64 // runtime.MemStats Mallocs and TotalAlloc deltas
	reps           int
}

// timeIt runs f warmup times, then at least reps times and for at least
// minTime, and returns each timed repetition's duration in ms and the
// heap allocations of the timed repetitions (the timing loop itself
// allocates nothing: times has room for maxReps).
func timeIt(f func() error, warmup, reps int, minTime time.Duration) ([]float64, allocs, error) {
	for i := 0; i < warmup; i++ {
		if err := f(); err != nil {
			return nil, allocs{}, err
		}
	}
	times := make([]float64, 0, maxReps)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for len(times) < reps || time.Since(start) < minTime {
		t0 := time.Now()
		if err := f(); err != nil {
			return nil, allocs{}, err
		}
		times = append(times, float64(time.Since(t0).Nanoseconds())/1e6)
		if len(times) >= maxReps {
			break
		}
	}
	runtime.ReadMemStats(&m1)
	return times, allocs{objects: m1.Mallocs - m0.Mallocs, bytes: m1.TotalAlloc - m0.TotalAlloc, reps: len(times)}, nil
}

func summarize(w workload, m mode, threads int, times []float64, al allocs) result {
	s := append([]float64(nil), times...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	r := result{System: "tapegrad", ISA: cpu.Tier().String(), Workload: w.name, Mode: m.name, Threads: threads,
		Ms: med, MsMin: s[0], MsMax: s[len(s)-1], Reps: len(s), Desc: w.desc}
	if al.reps > 0 {
		r.AllocsPerOp = float64(al.objects) / float64(al.reps)
		r.BytesPerOp = float64(al.bytes) / float64(al.reps)
	}
	if m.flops > 0 {
		r.GFlops = m.flops / (med * 1e6)
	}
	if m.bytes > 0 {
		r.GBps = m.bytes / (med * 1e6)
	}
	return r
}
