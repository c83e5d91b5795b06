#!/usr/bin/python3
"""PyTorch twin of examples/fashionmnist: the same model, data, optimiser and
schedule, so anyone can compare accuracy and epoch time on the same machine.

usage: /usr/bin/python3 examples/fashionmnist/torch_twin.py [--data DIR] [--epochs 20]
       [--batch 64] [--lr 0.002] [--threads 2] [--seed 1] [--max-train N] [--channels-last]
       [--pad 0] [--flip 0] [--erase 0] [--label-smoothing 0.1] [--tta]
Prints per-epoch lines and, last, "test accuracy: 0.XXXX".

The model (NHWC in tapegrad, NCHW or channels-last here):
  conv3x3(1->32, SAME) + BN + ReLU          28x28
  MaxPool 2x2                                -> 14x14
  conv3x3(32->96, SAME) + BN + ReLU         14x14
  depthwise3x3(96) + BN + ReLU, conv1x1(96->96) + BN + ReLU
  FractionalAvgPool ratio 1.5 (pseudo-random sequences, new each batch,
                             overlapping cells)  -> 9x9
  depthwise3x3(96) + BN + ReLU, conv1x1(96->160) + BN + ReLU
  FractionalAvgPool ratio 1.5                -> 6x6
  depthwise3x3(160) + BN + ReLU, conv1x1(160->160) + BN + ReLU   (twice)
  flatten, dense 5760->10
Training data: label smoothing 0.1 (--label-smoothing) and no augmentation,
  as the example's defaults; --flip 1 adds random horizontal flips, --pad
  random crops of the zero-padded images, --erase random erasing. --tta classifies each test
  image by the sum of its and its mirror's logits (the example's -tta).
Batch norm: eps 1e-3, momentum 0.1 (PyTorch convention; = TF momentum 0.9,
  exponential_avg_factor 0.1).
Adam (lr, betas 0.9/0.999, eps 1e-7 as Keras), cosine schedule over all steps.
PyTorch has no fractional average pool: it is written with averaging matrices
(as cmd/bench/torch/bench_torch.py does), with TF's pseudo-random sequence formula.
"""
import argparse, gzip, math, random, struct, time
import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument('--data', default='/usr/share/datasets/fashion-mnist')
ap.add_argument('--epochs', type=int, default=20)
ap.add_argument('--batch', type=int, default=64)
ap.add_argument('--lr', type=float, default=0.002)
ap.add_argument('--threads', type=int, default=2)
ap.add_argument('--seed', type=int, default=1)
ap.add_argument('--max-train', type=int, default=0)
ap.add_argument('--channels-last', action='store_true')
ap.add_argument('--pad', type=int, default=0, help='random crops of the images zero-padded by this many pixels (0: none)')
ap.add_argument('--flip', type=int, default=0, help='random horizontal flips (1) or none (0)')
ap.add_argument('--erase', type=float, default=0, help='probability of random erasing (RandomErasing with its defaults)')
ap.add_argument('--label-smoothing', type=float, default=0.1)
ap.add_argument('--tta', action='store_true', help="classify each test image by the sum of its and its mirror's logits")
ap.add_argument('--mem', choices=['eval', 'train'],
                help='measure the memory of an eval pass or a training step instead of training (see measure_memory) and exit')
args = ap.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
random.seed(args.seed)
rng = random.Random(args.seed)
MF = torch.channels_last if args.channels_last else torch.contiguous_format

def idx(path):
    with gzip.open(path, 'rb') as f:
        data = f.read()
    _, _, nd = struct.unpack('>HBB', data[:4])
    dims = struct.unpack('>' + 'I' * nd, data[4:4 + 4 * nd])
    return torch.frombuffer(bytearray(data[4 + 4 * nd:]), dtype=torch.uint8).reshape(dims)

xtr = idx(args.data + '/train-images-idx3-ubyte.gz').float().div_(255).unsqueeze(1)
ytr = idx(args.data + '/train-labels-idx1-ubyte.gz').long()
xte = idx(args.data + '/t10k-images-idx3-ubyte.gz').float().div_(255).unsqueeze(1)
yte = idx(args.data + '/t10k-labels-idx1-ubyte.gz').long()
if args.max_train:
    xtr, ytr = xtr[:args.max_train], ytr[:args.max_train]

def pseudo_random_seq(n_in, n_out, u01):
    k = n_in // n_out
    alpha = n_in / n_out
    u_max1 = (k + 2) / alpha - 1
    u_max2 = (n_in + 1 - k) / alpha - (n_out - 1)
    u = u01 * min(u_max1, u_max2)
    a = [1] + [int(math.ceil(alpha * (i + u))) for i in range(1, n_out)] + [n_in + 1]
    seq = [0]
    for i in range(n_out):
        seq.append(seq[-1] + a[i + 1] - a[i])
    return seq

def pool_matrix(seq, n_in):
    """Averaging matrix of overlapping cells: cell i spans rows seq[i] to
    seq[i+1] inclusive (the last one clipped to the input), as TF's
    overlapping=True."""
    P = torch.zeros(len(seq) - 1, n_in)
    for i in range(len(seq) - 1):
        lo, hi = seq[i], min(seq[i + 1], n_in - 1)
        P[i, lo:hi + 1] = 1.0 / (hi + 1 - lo)
    return P

class FracAvgPool(nn.Module):
    def __init__(self, ratio):
        super().__init__()
        self.ratio = ratio

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        oh, ow = int(h / self.ratio), int(w / self.ratio)
        if self.training:
            rs, cs = pseudo_random_seq(h, oh, rng.random()), pseudo_random_seq(w, ow, rng.random())
        else:
            rs, cs = pseudo_random_seq(h, oh, 0.5), pseudo_random_seq(w, ow, 0.5)
        return torch.matmul(torch.matmul(pool_matrix(rs, h), x), pool_matrix(cs, w).t())

def bn(c):
    return nn.BatchNorm2d(c, eps=1e-3, momentum=0.1)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(1, 32, 3, padding=1, bias=False), bn(32)
        self.p1 = nn.MaxPool2d(2)
        self.c2, self.b2 = nn.Conv2d(32, 96, 3, padding=1, bias=False), bn(96)
        self.dw2, self.b2b = nn.Conv2d(96, 96, 3, padding=1, groups=96, bias=False), bn(96)
        self.pw2, self.b2c = nn.Conv2d(96, 96, 1, bias=False), bn(96)
        self.p2 = FracAvgPool(1.5)
        self.dw, self.b3 = nn.Conv2d(96, 96, 3, padding=1, groups=96, bias=False), bn(96)
        self.pw, self.b4 = nn.Conv2d(96, 160, 1, bias=False), bn(160)
        self.p3 = FracAvgPool(1.5)
        self.dw4, self.b5 = nn.Conv2d(160, 160, 3, padding=1, groups=160, bias=False), bn(160)
        self.pw4, self.b6 = nn.Conv2d(160, 160, 1, bias=False), bn(160)
        self.dw5, self.b7 = nn.Conv2d(160, 160, 3, padding=1, groups=160, bias=False), bn(160)
        self.pw5, self.b8 = nn.Conv2d(160, 160, 1, bias=False), bn(160)
        self.fc = nn.Linear(160 * 6 * 6, 10)

    def forward(self, x):
        x = self.p1(F.relu(self.b1(self.c1(x))))
        x = F.relu(self.b2(self.c2(x)))
        x = F.relu(self.b2b(self.dw2(x)))
        x = self.p2(F.relu(self.b2c(self.pw2(x))))
        x = F.relu(self.b3(self.dw(x)))
        x = self.p3(F.relu(self.b4(self.pw(x))))
        x = F.relu(self.b5(self.dw4(x)))
        x = F.relu(self.b6(self.pw4(x)))
        x = F.relu(self.b7(self.dw5(x)))
        x = F.relu(self.b8(self.pw5(x)))
        # Flatten in NHWC order, as the tapegrad model does.
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
        return self.fc(x)

model = Net().to(memory_format=MF)
opt = torch.optim.Adam(model.parameters(), lr=args.lr, eps=1e-7)
steps_per_epoch = len(xtr) // args.batch
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps_per_epoch)

def evaluate():
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(xte), 500):
            x = xte[i:i + 500]
            out = model(x.contiguous(memory_format=MF))
            if args.tta:
                out = out + model(x.flip(3).contiguous(memory_format=MF))
            correct += (out.argmax(1) == yte[i:i + 500]).sum().item()
    model.train()
    return correct / len(xte)

def proc_status(key):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0

def rss_delta(f):
    """Runs f and returns (peak RSS during f) - (RSS before f), in bytes: the
    peak (VmHWM) is reset through /proc/self/clear_refs first (Linux)."""
    with open('/proc/self/clear_refs', 'w') as c:
        c.write('5')
    rss0 = proc_status('VmRSS:')
    f()
    return proc_status('VmHWM:') - rss0

def measure_memory(what):
    """--mem eval: the peak RSS delta (rss_delta) of an evaluation pass over
    the test set in batches of 500 under torch.no_grad(), in eval mode, as
    evaluate does; --mem train: that of one training step at --batch
    (zero_grad, forward, loss, backward, Adam step). Each is measured cold
    (first call, in a fresh process: run one measure per process) and warm
    (third call: PyTorch's and glibc's allocators keep some freed memory
    resident, so a warm delta is only what the pass adds on top of that).
    RSS is the only comparable measure: tracemalloc sees no tensor memory."""
    xb, yb = xtr[:args.batch].contiguous(memory_format=MF), ytr[:args.batch]
    def train_step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    name, f = {'eval': ('eval, batch 500, no_grad', evaluate),
               'train': ('train step, batch %d' % args.batch, train_step)}[what]
    rss0 = proc_status('VmRSS:')
    d = [rss_delta(f) for _ in range(3)]
    print('%s: peak RSS delta cold %.1f MB, warm %.1f MB (RSS before %.1f MB, after %.1f MB)'
          % (name, d[0] / 1e6, d[2] / 1e6, rss0 / 1e6, proc_status('VmRSS:') / 1e6), flush=True)

if args.mem:
    measure_memory(args.mem)
    raise SystemExit(0)

def augment(x):
    """The example's augmentation (nn/data's Augment), in distribution: each
    image shifted by a random crop of its zero-padded copy, and flipped
    horizontally with probability 1/2 (the random choices differ from Go's)."""
    if args.pad > 0:
        p, n = args.pad, x.shape[0]
        xp = F.pad(x, (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (n,))
        dx = torch.randint(0, 2 * p + 1, (n,))
        rows = (dy[:, None] + torch.arange(28)[None, :])[:, None, :, None].expand(n, 1, 28, 28 + 2 * p)
        xp = torch.gather(xp, 2, rows)
        cols = (dx[:, None] + torch.arange(28)[None, :])[:, None, None, :].expand(n, 1, 28, 28)
        x = torch.gather(xp, 3, cols)
    if args.flip:
        m = torch.rand(x.shape[0]) < 0.5
        x = torch.where(m[:, None, None, None], x.flip(3), x)
    if args.erase > 0:
        # torchvision's RandomErasing(p=args.erase) with its defaults (scale
        # 0.02-0.33, ratio 0.3-3.3 log-uniform, 10 attempts, value 0).
        x = x.clone()
        for k in range(x.shape[0]):
            if random.random() >= args.erase:
                continue
            for _ in range(10):
                area = 28 * 28 * random.uniform(0.02, 0.33)
                ratio = math.exp(random.uniform(math.log(0.3), math.log(3.3)))
                h, w = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
                if h < 28 and w < 28:
                    i, j = random.randint(0, 28 - h), random.randint(0, 28 - w)
                    x[k, :, i:i + h, j:j + w] = 0
                    break
    return x

acc = None
for epoch in range(1, args.epochs + 1):
    perm = torch.randperm(len(xtr))
    t0 = time.perf_counter()
    tot, correct, n = 0.0, 0, 0
    for s in range(steps_per_epoch):
        ix = perm[s * args.batch:(s + 1) * args.batch]
        x, y = augment(xtr[ix]).contiguous(memory_format=MF), ytr[ix]
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = F.cross_entropy(out, y, label_smoothing=args.label_smoothing)
        loss.backward()
        opt.step()
        sched.step()
        tot += loss.item() * len(y)
        correct += (out.argmax(1) == y).sum().item()
        n += len(y)
    dt = time.perf_counter() - t0
    acc = evaluate()
    print('epoch %d: loss %.4f train acc %.4f  %.1f s (%.0f examples/s)  test acc %.4f'
          % (epoch, tot / n, correct / n, dt, n / dt, acc), flush=True)
print('test accuracy: %.4f' % (acc if acc is not None else evaluate()))  # the last epoch's
