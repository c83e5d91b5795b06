#!/usr/bin/python3
"""Same-run reference for cmd/bench's GEMM workloads: torch.mm (PyTorch's CPU
BLAS, OpenBLAS in Debian's python3-torch) on square float32/float64 matrices.

usage: /usr/bin/python3 cmd/bench/gemm_torch.py --threads 1 [--sizes 512,1024,2048]
Prints JSON lines in cmd/bench's schema (workload GEMM<n>, mode sgemm|dgemm).
"""
import argparse, json, os, statistics, sys, time

ap = argparse.ArgumentParser()
ap.add_argument('--threads', type=int, default=1)
ap.add_argument('--sizes', default='512,1024,2048')
ap.add_argument('--reps', type=int, default=20)
ap.add_argument('--min-time', type=float, default=0.5)
args = ap.parse_args()
# OpenBLAS reads its thread count at load time: set it before importing torch,
# or --threads 1 still runs SGEMM on every core.
os.environ['OPENBLAS_NUM_THREADS'] = os.environ['OMP_NUM_THREADS'] = str(args.threads)
import torch  # noqa: E402
torch.set_num_threads(args.threads)
for n in [int(s) for s in args.sizes.split(',')]:
    for mode, dt in (('sgemm', torch.float32), ('dgemm', torch.float64)):
        a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
        c = torch.empty(n, n, dtype=dt)
        for _ in range(3):
            torch.mm(a, b, out=c)
        times, start = [], time.perf_counter()
        while len(times) < args.reps or time.perf_counter() - start < args.min_time:
            t0 = time.perf_counter()
            torch.mm(a, b, out=c)
            times.append((time.perf_counter() - t0) * 1e3)
            if len(times) >= 500:
                break
        ms = statistics.median(times)
        print(json.dumps({"system": "torch-" + torch.__version__, "workload": "GEMM%d" % n, "mode": mode,
                          "threads": args.threads, "ms": ms, "ms_min": min(times), "ms_max": max(times),
                          "reps": len(times), "gflops": 2 * n ** 3 / (ms * 1e6)}))
