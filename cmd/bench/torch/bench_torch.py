#!/usr/bin/python3
"""PyTorch (CPU) side of cmd/bench: the same workloads, timed the same way.

The workloads (shapes, TensorFlow attrs, modes, flop and byte counts) are
read from cmd/bench/workloads.json, which cmd/bench's Go test
(workloads_test.go) checks against the Go side, so the two cannot drift.

usage:
  /usr/bin/python3 cmd/bench/torch/bench_torch.py --threads 1              # every workload and mode
  /usr/bin/python3 cmd/bench/torch/bench_torch.py --threads 2 --only W1,W5 --modes fwd,fwdbwd
  /usr/bin/python3 cmd/bench/torch/bench_torch.py --channels-last --only W7
  /usr/bin/python3 cmd/bench/torch/bench_torch.py --list                   # ids and descriptions
  options: --reps 20 --warmup 3 --min-time 0.5 --mkldnn 1|0 --channels-last --malloc tuned|default
           --peak-gflops X --peak-gbps Y --workloads PATH

Prints one JSON object per line and per (workload, mode), in cmd/bench -json's
schema, so that compare.py joins the two on (workload, mode, threads):
  {"system": "torch-1.13.0a0", "layout": "nchw", "malloc": "tuned", "workload": "W1", "mode": "fwd",
   "threads": 1, "ms": median, "ms_min": .., "ms_max": .., "reps": n, "gflops": .., "pct_peak_flops": .., ...}

Modes:
  fwd         forward only (torch.no_grad(); batch norm in training mode, so batch statistics are computed)
  bwd_input   conv / depthwise: the input gradient alone (aten.convolution_backward, output_mask [1,0,0])
  bwd_filter  conv / depthwise: the filter gradient alone (output_mask [0,1,0])
  fwdbwd      forward with autograd, then backward of a fixed random upstream gradient
  step        W10: zero_grad, forward, loss, backward, SGD step
  sgemm/dgemm GEMM<n>: torch.mm of two random n x n float32/float64 matrices into a preallocated result
              (PyTorch's CPU BLAS: OpenBLAS in Debian's python3-torch; install libopenblas0-pthread,
              or torch falls back to the reference BLAS)

Layouts: PyTorch's tensors are NCHW by default; --channels-last stores them NHWC (TensorFlow's layout).
GEMM has no layout and runs only in the default (NCHW) run. Where TensorFlow's SAME padding is
asymmetric (stride 2: 0 before, 1 after), PyTorch pads 1 on both sides: same output size, same flops.

PyTorch lacks some ops: W8 is fake_quantize_per_channel_affine with the input gradient only, W8L adds
learnable scale and zero-point gradients (nearer TensorFlow's min/max gradients); W9 is fractional
average pooling written as a user would (row and column averaging matrices), W9cs the same through an
integral image, W9ap avg_pool2d 2x2 (the nearest built-in). cmd/bench compares W8 and W9 with these.

Bandwidth-bound ops (batch norm, fake quant, pooling) report GB/s = minimum bytes / time, the minimum
being the number of full-tensor passes a fused single-pass implementation needs times the tensor size
('bytes' in workloads.json). Percent-of-peak defaults were measured on a 2-core AMD EPYC (Zen 3):
FMA peak 97.8 GFLOP/s per core, DRAM triad 20.5 GB/s (1 thread) and 31.0 GB/s (2 threads).
"""
import argparse, json, os, statistics, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument('--threads', type=int, default=1)
ap.add_argument('--only', default='', help='comma list of workloads, e.g. W1,W5,GEMM1024')
ap.add_argument('--modes', default='', help='comma list of modes to run (default: all modes of each workload)')
ap.add_argument('--reps', type=int, default=20, help='minimum timed reps (median reported)')
ap.add_argument('--warmup', type=int, default=3)
ap.add_argument('--min-time', type=float, default=0.5, help='keep repeating until this many seconds were timed (max 500 reps)')
ap.add_argument('--mkldnn', type=int, default=1, help='0: disable oneDNN (conv falls back to im2col+BLAS / native)')
ap.add_argument('--channels-last', action='store_true', help='NHWC memory format (TF layout) for tensors and filters')
ap.add_argument('--peak-gflops', type=float, default=None, help='default: 97.8 x threads')
ap.add_argument('--peak-gbps', type=float, default=None, help='default: 20.5 (1 thread) / 31.0 (2 threads)')
ap.add_argument('--malloc', default='tuned', choices=['tuned', 'default'],
                help='tuned (default): re-exec with glibc MALLOC_MMAP_THRESHOLD_/TRIM/TOP_PAD so freed tensors stay '
                     'mapped; first-touch page faults (~1.5 GB/s on a VM) otherwise dominate big-tensor ops')
ap.add_argument('--workloads', default=os.path.join(HERE, '..', 'workloads.json'), help='workload definitions')
ap.add_argument('--list', action='store_true', help='list the workloads and exit')
args = ap.parse_args()

with open(args.workloads) as f:
    WORKLOADS = [w for w in json.load(f)['workloads'] if 'torch' in w['systems']]

if args.list:
    for w in WORKLOADS:
        print('%-8s %s' % (w['id'], w['desc']))
    sys.exit(0)

only = set(w for w in args.only.split(',') if w)
unknown = only - set(w['id'] for w in WORKLOADS)
if unknown:
    sys.exit('bench_torch.py: unknown workload(s) %s (see --list)' % ','.join(sorted(unknown)))

# Keep freed memory mapped (the Go side keeps its buffers in the tape's arena for the same reason).
MALLOC_ENV = {'MALLOC_MMAP_THRESHOLD_': '33554432', 'MALLOC_TRIM_THRESHOLD_': '68719476736', 'MALLOC_TOP_PAD_': '268435456'}
if args.malloc == 'tuned' and os.environ.get('MALLOC_TRIM_THRESHOLD_') != MALLOC_ENV['MALLOC_TRIM_THRESHOLD_']:
    os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, **MALLOC_ENV))

# OpenBLAS and OpenMP read their thread counts when torch loads: set them first, or
# --threads 1 still runs GEMM on every core.
for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[v] = str(args.threads)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
torch.set_num_threads(args.threads)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass
torch.backends.mkldnn.enabled = bool(args.mkldnn)
torch.manual_seed(0)
PEAK_GF = args.peak_gflops or 97.8 * args.threads
PEAK_BW = args.peak_gbps or (20.5 if args.threads == 1 else 31.0)
MF = torch.channels_last if args.channels_last else torch.contiguous_format
SYSTEM = 'torch-%s%s' % (torch.__version__, '' if args.mkldnn else '-nomkldnn')
LAYOUT = 'nhwc' if args.channels_last else 'nchw'


def nchw(s):
    """PyTorch's logical NCHW shape of an NHWC (TensorFlow) shape."""
    return [s[0], s[3], s[1], s[2]]


def rnd(*shape, grad=False):
    t = torch.randn(*shape)
    if len(shape) == 4:
        t = t.contiguous(memory_format=MF)
    return t.requires_grad_(grad)


def timeit(fn):
    for _ in range(args.warmup):
        fn()
    ts = []
    t_total = 0.0
    while len(ts) < args.reps or (t_total < args.min_time and len(ts) < 500):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        ts.append(dt)
        t_total += dt
    return ts


# ---------------------------------------------------------------- workload builders: return {mode: fn}
def build_conv(s):
    Cin, Cout, K, st, p, g = s['Cin'], s['Cout'], s['K'], s['stride'], s['torch_pad'], s['groups']
    x = rnd(*nchw(s['input']))
    w = rnd(Cout, Cin // g, K, K)  # OIHW; TensorFlow's filter is s['filter'] (HWIO, or HW C multiplier)
    gy = rnd(*nchw(s['output']))
    xg = x.detach().clone().requires_grad_(True)
    wg = w.detach().clone().requires_grad_(True)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, None, st, p, 1, g)

    def bwd(mask):
        def f():
            torch.ops.aten.convolution_backward(gy, x, w, None, [st, st], [p, p], [1, 1], False, [0, 0], g, mask)
        return f

    def fwdbwd():
        xg.grad = None
        wg.grad = None
        y = F.conv2d(xg, wg, None, st, p, 1, g)
        y.backward(gy)
    return {'fwd': fwd, 'bwd_input': bwd([True, False, False]), 'bwd_filter': bwd([False, True, False]), 'fwdbwd': fwdbwd}


def build_bn(s):
    a, C = s['attrs'], s['C']
    x = rnd(*nchw(s['input']))
    xg = x.detach().clone().requires_grad_(True)
    gamma = torch.full((C,), s['params']['scale'], requires_grad=True)
    beta = torch.full((C,), s['params']['offset'], requires_grad=True)
    rm, rv = torch.full((C,), s['params']['mean']), torch.full((C,), s['params']['variance'])
    gy = rnd(*nchw(s['input']))
    # TensorFlow's exponential_avg_factor is PyTorch's momentum (the weight of the batch statistics).
    mom, eps = a['exponential_avg_factor'], a['epsilon']

    def fwd():
        with torch.no_grad():
            F.batch_norm(x, rm, rv, gamma, beta, True, mom, eps)

    def fwdbwd():
        xg.grad = None
        gamma.grad = None
        beta.grad = None
        y = F.batch_norm(xg, rm, rv, gamma, beta, True, mom, eps)
        y.backward(gy)
    return {'fwd': fwd, 'fwdbwd': fwdbwd}


def build_fq(s):
    a, C = s['attrs'], s['C']
    learnable = 'scale' in s['torch_wrt']
    qmin = 1 if a['narrow_range'] else 0
    qmax = 2 ** a['num_bits'] - 1
    x = rnd(*nchw(s['input'])) * s['x_scale']
    xg = x.detach().clone().requires_grad_(True)
    # Per-channel ranges [min_c, max_c] as scale and zero point (asymmetric, like TF's nudged min/max).
    (lo0, lo1), (hi0, hi1) = s['min_range'], s['max_range']
    mn = lo1 - (lo1 - lo0) * torch.rand(C)
    mx = hi0 + (hi1 - hi0) * torch.rand(C)
    scale = (mx - mn) / (qmax - qmin)
    zp = (qmin + torch.round(-mn / scale)).clamp(qmin, qmax)
    zpi = zp.to(torch.int32)
    gy = rnd(*nchw(s['input']))
    scale_g = scale.clone().requires_grad_(True)
    zp_g = zp.clone().requires_grad_(True)

    if not learnable:
        def fwd():
            with torch.no_grad():
                torch.fake_quantize_per_channel_affine(x, scale, zpi, 1, qmin, qmax)

        def fwdbwd():
            xg.grad = None
            y = torch.fake_quantize_per_channel_affine(xg, scale, zpi, 1, qmin, qmax)
            y.backward(gy)
    else:
        def fwd():
            with torch.no_grad():
                torch._fake_quantize_learnable_per_channel_affine(x, scale, zp, 1, qmin, qmax, 1.0)

        def fwdbwd():
            xg.grad = None
            scale_g.grad = None
            zp_g.grad = None
            y = torch._fake_quantize_learnable_per_channel_affine(xg, scale_g, zp_g, 1, qmin, qmax, 1.0)
            y.backward(gy)
    return {'fwd': fwd, 'fwdbwd': fwdbwd}


def pool_matrix(seq, n_in):
    n_out = len(seq) - 1
    P = torch.zeros(n_out, n_in)
    for i in range(n_out):
        a, b = seq[i], seq[i + 1]
        P[i, a:b] = 1.0 / (b - a)
    return P


def build_fracpool(s):
    N, C, H, W = s['N'], s['C'], s['H'], s['W']
    x = rnd(N, C, H, W)
    xg = x.detach().clone().requires_grad_(True)
    rs, cs = s['row_seq'], s['col_seq']
    gy = torch.randn(*nchw(s['output']))
    if s['torch_impl'] == 'matmul':
        Pr = pool_matrix(rs, H)                     # (Ho, H)
        PcT = pool_matrix(cs, W).t().contiguous()   # (W, Wo)

        def op(t):
            return torch.matmul(torch.matmul(Pr, t), PcT)   # (N,C,H,W) -> (N,C,Ho,W) -> (N,C,Ho,Wo)
    else:
        r0 = torch.tensor(rs[:-1])
        r1 = torch.tensor(rs[1:])
        c0 = torch.tensor(cs[:-1])
        c1 = torch.tensor(cs[1:])
        area = ((r1 - r0).view(-1, 1) * (c1 - c0).view(1, -1)).float()

        def op(t):
            S = F.pad(t.cumsum(2).cumsum(3), (1, 0, 1, 0))       # integral image (N,C,H+1,W+1)
            A = S.index_select(2, r1)
            B = S.index_select(2, r0)
            tot = (A.index_select(3, c1) - A.index_select(3, c0) - B.index_select(3, c1) + B.index_select(3, c0))
            return tot / area

    def fwd():
        with torch.no_grad():
            op(x)

    def fwdbwd():
        xg.grad = None
        op(xg).backward(gy)
    return {'fwd': fwd, 'fwdbwd': fwdbwd}


def build_avgpool(s):
    x = rnd(*nchw(s['input']))
    xg = x.detach().clone().requires_grad_(True)
    gy = rnd(*nchw(s['output']))

    def fwd():
        with torch.no_grad():
            F.avg_pool2d(x, 2, 2)

    def fwdbwd():
        xg.grad = None
        F.avg_pool2d(xg, 2, 2).backward(gy)
    return {'fwd': fwd, 'fwdbwd': fwdbwd}


class GlobalAvgPool(torch.nn.Module):
    """Mean over the spatial axes: (N, C, H, W) -> (N, C)."""

    def forward(self, x):
        return x.mean((2, 3))


def small_cnn(s):
    """W10's model, layer by layer from workloads.json (PyTorch pads SAME 3x3 convs by 1 on each side)."""
    nn = torch.nn
    bn = s['bn']
    mods = []
    for l in s['layers']:
        t = l['type']
        if t == 'conv2d':
            mods.append(nn.Conv2d(l['cin'], l['cout'], l['k'], l['stride'], l['k'] // 2, bias=l['bias']))
        elif t == 'depthwise':
            c = l['channels']
            mods.append(nn.Conv2d(c, c, l['k'], l['stride'], l['k'] // 2, groups=c, bias=l['bias']))
        elif t == 'batchnorm':
            mods.append(nn.BatchNorm2d(l['channels'], eps=bn['epsilon'], momentum=bn['exponential_avg_factor']))
        elif t == 'relu':
            mods.append(nn.ReLU())
        elif t == 'global_avg_pool':
            mods.append(GlobalAvgPool())
        elif t == 'dense':
            mods.append(nn.Linear(l['cin'], l['cout'], bias=l['bias']))
        else:
            raise ValueError('W10: unknown layer type %r' % t)
    return nn.Sequential(*mods)


def build_cnn(s):
    m = small_cnn(s).to(memory_format=MF)
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=s['lr'])
    x = rnd(*nchw(s['input']))
    y = torch.randint(0, s['classes'], (s['input'][0],))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
    return {'step': step}


def build_gemm(s):
    n = s['size']
    fns = {}
    for mode, dt in (('sgemm', torch.float32), ('dgemm', torch.float64)):
        a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
        c = torch.empty(n, n, dtype=dt)

        def f(a=a, b=b, c=c):
            torch.mm(a, b, out=c)
        fns[mode] = f
    return fns


BUILDERS = {'conv2d': build_conv, 'depthwise': build_conv, 'batchnorm': build_bn, 'fakequant': build_fq,
            'fracavgpool': build_fracpool, 'avgpool': build_avgpool, 'train_step': build_cnn, 'gemm': build_gemm}

# ---------------------------------------------------------------- main
modes_sel = set(m for m in args.modes.split(',') if m)
for s in WORKLOADS:
    if only and s['id'] not in only:
        continue
    if s['kind'] == 'gemm' and args.channels_last:
        continue  # no layout: timed once, in the default run
    fns = BUILDERS[s['kind']](s)
    for mode in s['modes']:
        if modes_sel and mode not in modes_sel:
            continue
        ts = timeit(fns[mode])
        med = statistics.median(ts)
        rec = dict(system=SYSTEM, layout='' if s['kind'] == 'gemm' else LAYOUT, malloc=args.malloc,
                   workload=s['id'], mode=mode, threads=args.threads,
                   ms=round(med * 1e3, 4), ms_min=round(min(ts) * 1e3, 4), ms_max=round(max(ts) * 1e3, 4), reps=len(ts))
        if 'flops' in s and mode in s['flops']:
            gf = s['flops'][mode] / med / 1e9
            rec.update(gflops=round(gf, 2), pct_peak_flops=round(100 * gf / PEAK_GF, 1))
        if 'bytes' in s and mode in s['bytes']:
            bw = s['bytes'][mode] / med / 1e9
            rec.update(gbps=round(bw, 2), pct_peak_bw=round(100 * bw / PEAK_BW, 1))
        print(json.dumps(rec), flush=True)
