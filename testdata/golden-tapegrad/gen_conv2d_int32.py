#!/usr/bin/python3
"""Generates testdata/golden-tapegrad/conv2d_int32.json: golden cases of the int32
Conv2D family (Conv2D and Conv2DBackpropInput, the two ops TensorFlow
registers int32 CPU kernels for), from references independent of tapegrad:

* PyTorch float64 (torch.nn.functional.conv2d, and autograd through it for
  the input gradient) on integer operands whose exact results stay below
  2^53, so float64 holds them exactly; TensorFlow's SAME and EXPLICIT
  paddings are applied with F.pad (they can be asymmetric) and the
  convolution then runs unpadded.
* Every result is reduced modulo 2^32 into [-2^31, 2^31) in Python
  integers: TensorFlow's int32 kernels compute in int32, which wraps.
* A second, separate reference in numpy int64 (an im2col product; int64
  wraps modulo 2^64, a multiple of 2^32) must agree on every case, and is
  the only reference for the full-range cases whose exact sums exceed 2^53.
* TensorFlow's own int32 expectations (tensorflow/python/kernel_tests/
  nn_ops/conv_ops_test.py, Conv2DTest: every NHWC _VerifyValues case runs
  in int32 too) are checked against both references before being written.

Run from the repository root:  /usr/bin/python3 testdata/golden-tapegrad/gen_conv2d_int32.py
The output is deterministic (fixed seeds); commit it with this script.
"""

import json
import os
import random

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv2d_int32.json")


def wrap32(v):
    v = int(v) % (1 << 32)
    return v - (1 << 32) if v >= (1 << 31) else v


def axis(size, k, s, d, padding, p0=0, p1=0):
    """TensorFlow's output size and (before, after) padding of one axis."""
    e = (k - 1) * d + 1
    if padding == "VALID":
        return max(0, (size - e + s) // s), 0, 0
    if padding == "SAME":
        o = (size + s - 1) // s
        total = max(0, (o - 1) * s + e - size)
        return o, total // 2, total - total // 2
    return (size + p0 + p1 - e) // s + 1, p0, p1


class Geom:
    """An NHWC problem: input [n,h,w,c], filter [kh,kw,cf,o]."""

    def __init__(self, n, h, w, c, kh, kw, cf, o, sh=1, sw=1, dh=1, dw=1,
                 padding="VALID", pads=(0, 0, 0, 0)):
        self.n, self.h, self.w, self.c = n, h, w, c
        self.kh, self.kw, self.cf, self.o = kh, kw, cf, o
        self.sh, self.sw, self.dh, self.dw = sh, sw, dh, dw
        self.padding, self.pads = padding, tuple(pads)
        self.oh, self.pt, self.pb = axis(h, kh, sh, dh, padding, pads[0], pads[1])
        self.ow, self.pl, self.pr = axis(w, kw, sw, dw, padding, pads[2], pads[3])
        assert c % cf == 0 and o % (c // cf) == 0
        self.groups = c // cf

    def attrs(self):
        a = {"strides": [1, self.sh, self.sw, 1], "padding": self.padding,
             "data_format": "NHWC", "dilations": [1, self.dh, self.dw, 1]}
        if self.padding == "EXPLICIT":
            p = self.pads
            a["explicit_paddings"] = [0, 0, p[0], p[1], p[2], p[3], 0, 0]
        return a

    def tag(self):
        t = "%s-s%d%d-d%d%d-k%dx%d" % (self.padding.lower(), self.sh, self.sw,
                                       self.dh, self.dw, self.kh, self.kw)
        return t + ("-groups%d" % self.groups if self.groups > 1 else "")


# ---------------------------------------------------------------------------
# Reference 1: PyTorch float64 (exact for |results| < 2^53).

def torch_forward(g, x, f):
    xt = torch.tensor(x, dtype=torch.float64).permute(0, 3, 1, 2)  # NCHW
    ft = torch.tensor(f, dtype=torch.float64).permute(3, 2, 0, 1)  # OIHW
    xt = F.pad(xt, (g.pl, g.pr, g.pt, g.pb))
    y = F.conv2d(xt, ft, stride=(g.sh, g.sw), dilation=(g.dh, g.dw), groups=g.groups)
    return y.permute(0, 2, 3, 1).numpy()


def torch_backprop_input(g, f, dy):
    xt = torch.zeros((g.n, g.c, g.h, g.w), dtype=torch.float64, requires_grad=True)
    ft = torch.tensor(f, dtype=torch.float64).permute(3, 2, 0, 1)
    y = F.conv2d(F.pad(xt, (g.pl, g.pr, g.pt, g.pb)), ft, stride=(g.sh, g.sw),
                 dilation=(g.dh, g.dw), groups=g.groups)
    y.backward(torch.tensor(dy, dtype=torch.float64).permute(0, 3, 1, 2))
    return xt.grad.permute(0, 2, 3, 1).numpy()


def exact_ints(a):
    """The float64 results as Python ints; they must be whole numbers below
    2^53 (checked), so float64 held them exactly."""
    flat = a.reshape(-1)
    assert all(float(v).is_integer() and abs(v) < 2.0 ** 53 for v in flat)
    return [int(v) for v in flat]


# ---------------------------------------------------------------------------
# Reference 2: numpy int64 im2col (wraps modulo 2^64).

def np_patches(g, x):
    """im2col rows [n, oh, ow, kh, kw, c] of the zero-padded input."""
    xp = np.zeros((g.n, g.h + g.pt + g.pb, g.w + g.pl + g.pr, g.c), dtype=np.int64)
    xp[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w, :] = x
    rows = np.zeros((g.n, g.oh, g.ow, g.kh, g.kw, g.c), dtype=np.int64)
    for i in range(g.oh):
        for j in range(g.ow):
            for p in range(g.kh):
                for q in range(g.kw):
                    rows[:, i, j, p, q, :] = xp[:, i * g.sh + p * g.dh, j * g.sw + q * g.dw, :]
    return rows


def np_forward(g, x, f):
    rows = np_patches(g, np.asarray(x, dtype=np.int64))
    f = np.asarray(f, dtype=np.int64)
    og = g.o // g.groups
    out = np.zeros((g.n, g.oh, g.ow, g.o), dtype=np.int64)
    with np.errstate(over="ignore"):
        for grp in range(g.groups):
            r = rows[..., grp * g.cf:(grp + 1) * g.cf].reshape(g.n, g.oh, g.ow, -1)
            w = f[:, :, :, grp * og:(grp + 1) * og].reshape(-1, og)
            out[..., grp * og:(grp + 1) * og] = np.tensordot(r, w, axes=([3], [0]))
    return [wrap32(v) for v in out.reshape(-1)]


def np_backprop_input(g, f, dy):
    """Scatter of dy·fᵀ back into the padded input, then cropped."""
    f = np.asarray(f, dtype=np.int64)
    dy = np.asarray(dy, dtype=np.int64)
    og = g.o // g.groups
    dxp = np.zeros((g.n, g.h + g.pt + g.pb, g.w + g.pl + g.pr, g.c), dtype=np.int64)
    with np.errstate(over="ignore"):
        for grp in range(g.groups):
            fg = f[:, :, :, grp * og:(grp + 1) * og]  # kh, kw, cf, og
            dyg = dy[..., grp * og:(grp + 1) * og]
            for i in range(g.oh):
                for j in range(g.ow):
                    for p in range(g.kh):
                        for q in range(g.kw):
                            yy, xx = i * g.sh + p * g.dh, j * g.sw + q * g.dw
                            dxp[:, yy, xx, grp * g.cf:(grp + 1) * g.cf] += dyg[:, i, j, :] @ fg[p, q].T
    dx = dxp[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w, :]
    return [wrap32(v) for v in dx.reshape(-1)]


# ---------------------------------------------------------------------------
# Cases.

def tensor(name, shape, data):
    return {"name": name, "dtype": "int32", "shape": list(shape), "data": [int(v) for v in data]}


cases = []


def add_forward(name, g, x, f, tf_expected=None, exact=True):
    x = np.asarray(x, dtype=np.int64).reshape(g.n, g.h, g.w, g.c)
    f = np.asarray(f, dtype=np.int64).reshape(g.kh, g.kw, g.cf, g.o)
    want = np_forward(g, x, f)
    if exact:
        t = [wrap32(v) for v in exact_ints(torch_forward(g, x.astype(np.float64), f.astype(np.float64)))]
        assert t == want, name
    if tf_expected is not None:
        assert [wrap32(v) for v in tf_expected] == want, name
    cases.append({
        "name": "conv2d_int32/" + name, "op": "Conv2D", "attrs": g.attrs(),
        "inputs": [tensor("input", x.shape, x.reshape(-1)), tensor("filter", f.shape, f.reshape(-1))],
        "outputs": [tensor("output", (g.n, g.oh, g.ow, g.o), want)],
    })


def add_backprop_input(name, g, f, dy, sizes=None, exact=True):
    f = np.asarray(f, dtype=np.int64).reshape(g.kh, g.kw, g.cf, g.o)
    dy = np.asarray(dy, dtype=np.int64).reshape(g.n, g.oh, g.ow, g.o)
    want = np_backprop_input(g, f, dy)
    if exact:
        t = [wrap32(v) for v in exact_ints(torch_backprop_input(g, f.astype(np.float64), dy.astype(np.float64)))]
        assert t == want, name
    sizes = sizes if sizes is not None else [g.n, g.h, g.w, g.c]
    cases.append({
        "name": "conv2d_int32/" + name, "op": "Conv2DBackpropInput", "attrs": g.attrs(),
        "inputs": [tensor("input_sizes", [len(sizes)], sizes), tensor("filter", f.shape, f.reshape(-1)),
                   tensor("out_backprop", dy.shape, dy.reshape(-1))],
        "outputs": [tensor("output", (g.n, g.h, g.w, g.c), want)],
    })


def add_error(name, op, attrs, inputs, error):
    cases.append({"name": "conv2d_int32/error/" + name, "op": op, "attrs": attrs,
                  "inputs": inputs, "error": error})


def arange(shape):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64)


# TensorFlow's Conv2DTest cases that run in int32 (NHWC) with their
# expected values (C1–C9, C11 of spec/conv2d.md §7) ...
tf_cases = [
    ("C1-testConv2D1x1Filter", Geom(1, 2, 3, 3, 1, 1, 3, 3),
     [30, 36, 42, 66, 81, 96, 102, 126, 150, 138, 171, 204, 174, 216, 258, 210, 261, 312]),
    ("C2-testConv2D2x2Filter", Geom(1, 2, 3, 3, 2, 2, 3, 3), [2271, 2367, 2463, 2901, 3033, 3165]),
    ("C3-testConv2D1x2Filter", Geom(1, 2, 3, 3, 1, 2, 3, 3),
     [231, 252, 273, 384, 423, 462, 690, 765, 840, 843, 936, 1029]),
    ("C4-testConv2D2x2FilterStride2", Geom(1, 2, 3, 3, 2, 2, 3, 3, 2, 2), [2271, 2367, 2463]),
    ("C5-testConv2D2x2FilterStride2Same", Geom(1, 2, 3, 3, 2, 2, 3, 3, 2, 2, padding="SAME"),
     [2271, 2367, 2463, 1230, 1305, 1380]),
    ("C6-testConv2D2x2FilterStride1x2", Geom(1, 3, 6, 1, 2, 2, 1, 1, 1, 2), [58, 78, 98, 118, 138, 158]),
    ("C7-testConv2DKernelSmallerThanStrideValid", Geom(1, 7, 7, 1, 2, 2, 1, 1, 3, 3), [65, 95, 275, 305]),
    ("C8a-testConv2DKernelSmallerThanStrideSame", Geom(1, 3, 3, 1, 1, 1, 1, 1, 2, 2, padding="SAME"), [1, 3, 7, 9]),
    ("C8b-testConv2DKernelSmallerThanStrideSame", Geom(1, 4, 4, 1, 1, 1, 1, 1, 2, 2, padding="SAME"), [1, 3, 9, 11]),
    ("C8c-testConv2DKernelSmallerThanStrideSame", Geom(1, 4, 4, 1, 2, 2, 1, 1, 3, 3, padding="SAME"), [44, 28, 41, 16]),
    ("C9-testConv2DKernelSizeMatchesInputSize", Geom(1, 2, 2, 1, 2, 2, 1, 2), [50, 60]),
    ("C11-testConv2dOnlyPaddingReturnsZeros", Geom(1, 0, 2, 1, 1, 1, 1, 1, padding="EXPLICIT", pads=(1, 1, 1, 1)),
     [0] * 8),
]
for name, g, expected in tf_cases:
    add_forward("tf/" + name, g, arange((g.n, g.h, g.w, g.c)), arange((g.kh, g.kw, g.cf, g.o)), tf_expected=expected)

# ... and its explicit-padding tests (_VerifyExplicitPaddings: expected =
# the VALID convolution of the padded input; int32 runs them too).
for name, (n, h, w, c), (kh, kw, cf, o), (sh, sw), (pt, pb, pl, pr), (dh, dw) in [
    ("testConv2D0x0Padding", (3, 4, 3, 2), (1, 1, 2, 1), (2, 2), (0, 0, 0, 0), (1, 1)),
    ("testConv2D1x1Padding", (1, 2, 3, 2), (2, 2, 2, 2), (1, 1), (1, 1, 1, 1), (1, 1)),
    ("testConv2D2x2Padding", (1, 2, 1, 2), (1, 1, 2, 1), (2, 1), (2, 2, 2, 2), (1, 1)),
    ("testConv2DOnlyBottomPadding", (2, 2, 4, 3), (1, 2, 3, 2), (2, 2), (0, 3, 0, 0), (1, 1)),
    ("testConv2DOnlyTopRightPadding", (1, 2, 4, 2), (2, 2, 2, 2), (1, 3), (1, 0, 0, 2), (1, 1)),
    ("testConv2DLotsPadding", (1, 2, 1, 1), (2, 2, 1, 3), (2, 1), (3, 4, 4, 2), (1, 1)),
    ("testConv2DExplicitPaddingWithDilations", (1, 2, 3, 2), (3, 2, 2, 1), (1, 1), (2, 1, 1, 2), (2, 3)),
]:
    g = Geom(n, h, w, c, kh, kw, cf, o, sh, sw, dh, dw, "EXPLICIT", (pt, pb, pl, pr))
    add_forward("tf-explicit/" + name, g, arange((n, h, w, c)), arange((kh, kw, cf, o)))

# Random geometries, small operands (exact in float64 everywhere).
rng = random.Random(2026)
nprng = np.random.default_rng(2026)
fwd_count = bi_count = 0
while fwd_count < 24 or bi_count < 16:
    backprop = fwd_count >= 24
    padding = rng.choice(["VALID", "SAME", "EXPLICIT"])
    pads = tuple(rng.randrange(3) for _ in range(4)) if padding == "EXPLICIT" else (0, 0, 0, 0)
    groups = 1 if backprop else rng.choice([1, 1, 2, 3])
    cf = rng.randrange(1, 4)
    dh, dw = (1, 1) if backprop else (rng.choice([1, 1, 2]), rng.choice([1, 1, 2]))
    g = Geom(rng.randrange(1, 3), rng.randrange(1, 9), rng.randrange(1, 9), groups * cf,
             rng.randrange(1, 4), rng.randrange(1, 4), cf, groups * rng.randrange(1, 4),
             rng.randrange(1, 4), rng.randrange(1, 4), dh, dw, padding, pads)
    if g.oh <= 0 or g.ow <= 0:
        continue
    if not backprop:
        x = nprng.integers(-9, 10, size=(g.n, g.h, g.w, g.c))
        f = nprng.integers(-9, 10, size=(g.kh, g.kw, g.cf, g.o))
        add_forward("fwd/%s/small/%04d" % (g.tag(), fwd_count), g, x, f)
        fwd_count += 1
    else:
        f = nprng.integers(-9, 10, size=(g.kh, g.kw, g.cf, g.o))
        dy = nprng.integers(-9, 10, size=(g.n, g.oh, g.ow, g.o))
        sizes = [g.h, g.w] if bi_count % 4 == 3 else None
        add_backprop_input("bprop-input/%s/small/%04d" % (g.tag(), bi_count), g, f, dy, sizes=sizes)
        bi_count += 1

# Wrapping: operands up to 2^20 make sums beyond 2^31 (wrapped modulo 2^32)
# but below 2^53 (float64 still exact, so both references apply).
for i, g in enumerate([Geom(1, 4, 4, 3, 3, 3, 3, 2, padding="SAME"),
                       Geom(2, 5, 3, 4, 2, 2, 2, 4, 2, 1, 1, 2, "EXPLICIT", (1, 0, 0, 1))]):
    x = nprng.integers(-(1 << 20), (1 << 20) + 1, size=(g.n, g.h, g.w, g.c))
    f = nprng.integers(-(1 << 20), (1 << 20) + 1, size=(g.kh, g.kw, g.cf, g.o))
    add_forward("fwd/%s/wrap/%04d" % (g.tag(), i), g, x, f)
g = Geom(1, 5, 4, 3, 3, 2, 3, 4, 2, 1, padding="SAME")
add_backprop_input("bprop-input/%s/wrap/0000" % g.tag(), g,
                   nprng.integers(-(1 << 20), (1 << 20) + 1, size=(g.kh, g.kw, g.cf, g.o)),
                   nprng.integers(-(1 << 20), (1 << 20) + 1, size=(g.n, g.oh, g.ow, g.o)))
# Full-range operands: exact sums beyond 2^53; numpy int64 is the reference.
for i, g in enumerate([Geom(1, 3, 3, 2, 2, 2, 2, 3, padding="VALID"),
                       Geom(1, 4, 3, 4, 3, 1, 2, 2, 1, 2, padding="SAME")]):
    x = nprng.integers(-(1 << 31), 1 << 31, size=(g.n, g.h, g.w, g.c))
    f = nprng.integers(-(1 << 31), 1 << 31, size=(g.kh, g.kw, g.cf, g.o))
    add_forward("fwd/%s/full-range/%04d" % (g.tag(), i), g, x, f, exact=False)
g = Geom(1, 4, 4, 2, 2, 2, 2, 3, 2, 2, padding="SAME")
add_backprop_input("bprop-input/%s/full-range/0000" % g.tag(), g,
                   nprng.integers(-(1 << 31), 1 << 31, size=(g.kh, g.kw, g.cf, g.o)),
                   nprng.integers(-(1 << 31), 1 << 31, size=(g.n, g.oh, g.ow, g.o)), exact=False)

# Refusals of TensorFlow's int32 kernels and the ops without one.
nhwc = {"strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NHWC", "dilations": [1, 1, 1, 1]}
nchw = dict(nhwc, data_format="NCHW")
add_error("conv2d-nchw", "Conv2D", nchw,
          [tensor("input", [1, 2, 3, 3], arange((1, 2, 3, 3))), tensor("filter", [2, 2, 2, 1], arange((2, 2, 2, 1)))],
          "only supports the NHWC tensor format")
add_error("bprop-input-nchw", "Conv2DBackpropInput", nchw,
          [tensor("input_sizes", [4], [1, 1, 3, 3]), tensor("filter", [2, 2, 1, 1], arange((2, 2, 1, 1))),
           tensor("out_backprop", [1, 1, 2, 2], arange((1, 1, 2, 2)))], "only supports NHWC")
add_error("bprop-input-dilated", "Conv2DBackpropInput", dict(nhwc, dilations=[1, 2, 1, 1]),
          [tensor("input_sizes", [4], [1, 3, 3, 1]), tensor("filter", [2, 2, 1, 1], arange((2, 2, 1, 1))),
           tensor("out_backprop", [1, 1, 2, 1], arange((1, 1, 2, 1)))], "dilation rates larger than 1")
add_error("bprop-input-grouped", "Conv2DBackpropInput", nhwc,
          [tensor("input_sizes", [4], [1, 3, 3, 4]), tensor("filter", [2, 2, 2, 2], arange((2, 2, 2, 2))),
           tensor("out_backprop", [1, 2, 2, 2], arange((1, 2, 2, 2)))], "grouped convolutions")
add_error("bprop-filter", "Conv2DBackpropFilter", nhwc,
          [tensor("input", [1, 3, 3, 1], arange((1, 3, 3, 1))), tensor("filter_sizes", [4], [2, 2, 1, 1]),
           tensor("out_backprop", [1, 2, 2, 1], arange((1, 2, 2, 1)))], "int32")
add_error("depthwise", "DepthwiseConv2dNative", nhwc,
          [tensor("input", [1, 3, 3, 1], arange((1, 3, 3, 1))), tensor("filter", [2, 2, 1, 1], arange((2, 2, 1, 1)))],
          "int32")

with open(OUT, "w") as fh:
    json.dump({"cases": cases}, fh, separators=(",", ":"))
    fh.write("\n")
print("%d cases -> %s" % (len(cases), OUT))
