package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestWorkloads builds every workload and runs each of its modes once, so a
// workload broken by a change elsewhere (an op renamed, an attr refused, a
// shape error) fails here rather than in a benchmark run.
func TestWorkloads(t *testing.T) {
	want := []string{"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "GEMM512", "GEMM1024", "GEMM2048"}
	var got []string
	for _, w := range workloads {
		got = append(got, w.name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("workloads %v, want %v (in this order)", got, want)
	}
	wantModes := map[string]string{
		"W7": "fwd fwdbwd", "W8": "fwd fwdbwd", "W9": "fwd fwdbwd", "W10": "step",
		"W1": "fwd bwd_input bwd_filter fwdbwd", "W5": "fwd bwd_input bwd_filter fwdbwd",
		"GEMM512": "sgemm dgemm",
	}
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			ms, err := w.build(1)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			var names []string
			for _, m := range ms {
				names = append(names, m.name)
				if err := m.run(); err != nil {
					t.Errorf("%s: %v", m.name, err)
				}
				if m.flops == 0 && m.bytes == 0 {
					t.Errorf("%s: neither flops nor bytes", m.name)
				}
			}
			if wm, ok := wantModes[w.name]; ok && strings.Join(names, " ") != wm {
				t.Errorf("modes %v, want %s", names, wm)
			}
		})
	}
}

// TestW10Learns checks that W10's steps train: the loss of the fixed batch
// goes down.
func TestW10Learns(t *testing.T) {
	m, err := newW10(1)
	if err != nil {
		t.Fatal(err)
	}
	first := m.loss
	if math.IsNaN(first) || first < 1 || first > 5 {
		t.Fatalf("first loss %v, want about ln(10) = 2.3 for a fresh model", first)
	}
	for i := 0; i < 8; i++ {
		if err := m.step(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("loss %.4f → %.4f", first, m.loss)
	if !(m.loss < first) {
		t.Errorf("loss %v after 9 steps, first %v: not decreasing", m.loss, first)
	}
}

// TestRunJSON runs the command on W9 and checks the JSON lines carry
// bench_torch.py's keys.
func TestRunJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"-json", "-threads", "1", "-reps", "1", "-warmup", "0", "-min-time", "0", "-workload", "W9"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	sc := bufio.NewScanner(&out)
	var modes []string
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"system", "workload", "mode", "threads", "ms", "ms_min", "ms_max", "reps", "gbps", "allocs_per_op", "bytes_per_op"} {
			if _, ok := r[k]; !ok {
				t.Errorf("line %q lacks %q", sc.Text(), k)
			}
		}
		if r["workload"] != "W9" || r["threads"] != 1.0 || r["reps"] != 1.0 {
			t.Errorf("line %q: wrong workload, threads or reps", sc.Text())
		}
		if ms, _ := r["ms"].(float64); !(ms > 0) {
			t.Errorf("line %q: ms not positive", sc.Text())
		}
		for _, k := range []string{"allocs_per_op", "bytes_per_op"} {
			if v, ok := r[k].(float64); !ok || v < 0 {
				t.Errorf("line %q: %s is not a non-negative number", sc.Text(), k)
			}
		}
		modes = append(modes, r["mode"].(string))
	}
	if strings.Join(modes, " ") != "fwd fwdbwd" {
		t.Errorf("modes %v, want fwd fwdbwd", modes)
	}
	if rc := run([]string{"-workload", "W11"}, &out, &errb); rc != 2 {
		t.Errorf("unknown workload: exit %d, want 2", rc)
	}
}

// TestWorkloadLess checks the listing order: W-workloads by number, then
// the others.
func TestWorkloadLess(t *testing.T) {
	ordered := []string{"W1", "W2", "W9", "W9ap", "W10", "GEMM512", "GEMM1024", "GEMM2048"}
	for i := range ordered {
		for j := range ordered {
			if got := workloadLess(ordered[i], ordered[j]); got != (i < j) {
				t.Errorf("workloadLess(%s, %s) = %v", ordered[i], ordered[j], got)
			}
		}
	}
}

// BenchmarkW10Step times W10's training step and reports its allocations,
// on one thread and, as W10Step/threads=2, on two (run with -cpu 2 or
// more for the second to use two cores).
func BenchmarkW10Step(b *testing.B) {
	for _, threads := range []int{1, 2} {
		name := "threads=1"
		if threads > 1 {
			name = "threads=2"
		}
		b.Run(name, func(b *testing.B) {
			m, err := newW10(threads)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := m.step(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWorkloads times every mode of every workload at one thread, as
// sub-benchmarks named workload/mode, so that a single one can be profiled:
//
//	go test ./cmd/bench -run XXX -bench 'Workloads/W8/fwd$' -cpuprofile cpu.prof
func BenchmarkWorkloads(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			ms, err := w.build(1)
			if err != nil {
				b.Fatalf("build: %v", err)
			}
			for _, m := range ms {
				b.Run(m.name, func(b *testing.B) {
					b.ReportAllocs()
					if m.bytes > 0 {
						b.SetBytes(int64(m.bytes))
					}
					for i := 0; i < b.N; i++ {
						if err := m.run(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
