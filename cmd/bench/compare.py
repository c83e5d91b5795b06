#!/usr/bin/python3
"""Join cmd/bench -json output with PyTorch's (cmd/bench/torch/bench_torch.py, one
file per layout) on (workload, mode, threads) and print throughput ratios (torch ms /
tapegrad ms: above 1 means tapegrad is faster). For each key the fastest PyTorch
layout counts.

usage: compare.py tapegrad.jsonl torch.jsonl [torch2.jsonl ...]
"""
import json, sys

def load(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith('{'):
                yield json.loads(line)

go = {}
for r in load(sys.argv[1]):
    go[(r['workload'], r['mode'], r['threads'])] = r
torch = {}
for p in sys.argv[2:]:
    for r in load(p):
        k = (r['workload'], r['mode'], r['threads'])
        if k not in torch or r['ms'] < torch[k]['ms']:
            torch[k] = r
print('%-9s %-10s %3s %12s %12s %8s  %s' % ('workload', 'mode', 'thr', 'tapegrad ms', 'torch ms', 'ratio', 'torch layout'))
for k in sorted(go):
    g = go[k]
    t = torch.get(k)
    if t is None:
        print('%-9s %-10s %3d %12.3f %12s %8s' % (k[0], k[1], k[2], g['ms'], '-', '-'))
        continue
    print('%-9s %-10s %3d %12.3f %12.3f %8.2f  %s' % (k[0], k[1], k[2], g['ms'], t['ms'], t['ms'] / g['ms'], t.get('layout', '')))
