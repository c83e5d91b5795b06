#!/usr/bin/python3
"""Golden cases for the ops of issue 18, from PyTorch float64.

    /usr/bin/python3 testdata/golden/gen_torch_goldens.py [family ...]

writes testdata/golden/<family>.json for the families cwise, array,
pool and fused_batch_norm_ex (all by default), in the format of testdata/golden/FORMAT.md. The
numbers come from PyTorch (an implementation independent of tapegrad);
where PyTorch's semantics differ from TensorFlow's, the reference is built
here by TensorFlow's rule, with a comment naming the rule and its source
(docs/spec/cwise.md, array.md, pool.md). Seeds are fixed: running the
script again reproduces the files byte for byte.
"""

import json
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------
# Case format helpers.

def enc(v):
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return v


def tens(name, a, dtype="float64"):
    """A TENSOR of FORMAT.md from a numpy array or torch tensor."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    a = np.asarray(a)
    if dtype == "bool":
        data = [bool(x) for x in a.reshape(-1)]
    elif dtype in ("int32", "int64"):
        data = [int(x) for x in a.reshape(-1)]
    else:
        data = [enc(x) for x in a.reshape(-1)]
    return {"name": name, "dtype": dtype, "shape": list(a.shape), "data": data}


def case(name, op, attrs, inputs, outputs=None, grad=None, error=None, rtol=1e-12, atol=1e-12):
    c = {"name": name, "op": op, "attrs": attrs or {}, "inputs": inputs}
    if error is not None:
        c["error"] = error
    else:
        c["outputs"] = outputs
    if grad is not None:
        c["grad"] = grad
    c["rtol"], c["atol"] = rtol, atol
    return c


def leaf(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def vjp(outs, ins, ups):
    """Gradients of sum(out * up) with respect to ins (None where unused)."""
    gs = torch.autograd.grad(outs, ins, ups, allow_unused=True)
    return [g if g is not None else torch.zeros_like(x) for g, x in zip(gs, ins)]


def sum_to(g, shape):
    """Sum a broadcast gradient back to shape (TF's BroadcastGradientArgs)."""
    g = g
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, d in enumerate(shape):
        if d == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g.reshape(shape)


# ---------------------------------------------------------------------------
# cwise: Abs, Sign, Maximum, Minimum, Pow, comparisons, Select, SelectV2.

def gen_cwise(rng):
    cases = []
    n = 0

    def nm(kind):
        nonlocal n
        n += 1
        return "cwise/%s/%04d" % (kind, n)

    # Abs: torch's gradient is grad*sign(x), TF's too (0 at x = 0).
    x = rng.normal(size=(2, 3))
    x[0, 1] = 0.0
    xt = leaf(x)
    y = torch.abs(xt)
    up = torch.tensor(rng.normal(size=y.shape))
    (gx,) = vjp(y, [xt], up)
    cases.append(case(nm("abs"), "Abs", {}, [tens("x", x)], [tens("y", y)],
                      {"upstream": [tens("dy", up)], "expected": [tens("dx", gx)]}))
    xi = np.array([-3, 0, 7, -2147483647], dtype=np.int32)
    cases.append(case(nm("abs-int32"), "Abs", {}, [tens("x", xi, "int32")], [tens("y", np.abs(xi), "int32")]))
    # Sign: torch.sign(NaN) is 0, Eigen's sign_impl (TF) gives NaN.
    xs = np.array([-1.5, 0.0, 2.0, float("nan"), -0.0])
    ys = torch.sign(torch.tensor(xs)).numpy()
    ys[np.isnan(xs)] = np.nan
    cases.append(case(nm("sign"), "Sign", {}, [tens("x", xs)], [tens("y", ys)]))

    # Maximum / Minimum: torch splits a tie's gradient in half; TF gives it
    # all to x (math_grad.py _MaximumMinimumGrad with greater_equal /
    # less_equal), so the gradients are built by TF's rule.
    for op, tf_sel, tfun in (("Maximum", np.greater_equal, torch.maximum), ("Minimum", np.less_equal, torch.minimum)):
        for xs_, ys_ in (((2, 3), (2, 3)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((), (2,))):
            x = np.round(rng.normal(size=xs_) * 2) / 2
            yv = np.round(rng.normal(size=ys_) * 2) / 2  # half-integers: frequent ties
            z = tfun(torch.tensor(x), torch.tensor(yv))
            up = rng.normal(size=z.shape)
            xb, yb = np.broadcast_arrays(x, yv)
            mask = tf_sel(xb, yb)
            gx = sum_to(torch.tensor(np.where(mask, up, 0.0)), list(np.shape(x)))
            gy = sum_to(torch.tensor(np.where(mask, 0.0, up)), list(np.shape(yv)))
            cases.append(case(nm(op.lower()), op, {}, [tens("x", x), tens("y", yv)], [tens("z", z)],
                              {"upstream": [tens("dz", up)], "expected": [tens("dx", gx), tens("dy", gy)]}))
        xn = np.array([float("nan"), 1.0, 2.0])
        yn = np.array([0.0, float("nan"), 1.0])
        cases.append(case(nm(op.lower() + "-nan"), op, {}, [tens("x", xn), tens("y", yn)],
                          [tens("z", tfun(torch.tensor(xn), torch.tensor(yn)))]))

    # Pow: for x > 0 torch's autograd is TF's rule; for x <= 0 TF's
    # gradient with respect to y is 0 (math_grad.py _PowGrad: mask = x > 0),
    # torch's is NaN (log of a negative) or 0·log(0), so it is masked here.
    for xs_, ys_, pos in (((2, 3), (2, 3), True), ((2, 3), (), True), ((4,), (4,), False)):
        if pos:
            x = rng.uniform(0.3, 2.0, size=xs_)
            yv = rng.uniform(-1.5, 2.5, size=ys_)
        else:
            x = np.array([-2.0, 0.0, 1.5, -0.5])
            yv = np.array([3.0, 2.0, 0.5, 2.0])
        xt, yt = leaf(x), leaf(yv)
        z = torch.pow(xt, yt)
        up = torch.tensor(rng.normal(size=z.shape))
        gx, gy = vjp(z, [xt, yt], up)
        xb = np.broadcast_to(x, z.shape)
        gy_tf = up.numpy() * z.detach().numpy() * np.where(xb > 0, np.log(np.where(xb > 0, xb, 1.0)), 0.0)
        gy = sum_to(torch.tensor(gy_tf), list(np.shape(yv)))
        cases.append(case(nm("pow"), "Pow", {}, [tens("x", x), tens("y", yv)], [tens("z", z)],
                          {"upstream": [tens("dz", up)], "expected": [tens("dx", gx), tens("dy", gy)]}))

    # Comparisons (not differentiable).
    ops = {"Greater": torch.gt, "GreaterEqual": torch.ge, "Less": torch.lt, "LessEqual": torch.le,
           "Equal": torch.eq, "NotEqual": torch.ne}
    for op, f in ops.items():
        x = np.round(rng.normal(size=(2, 3)))
        yv = np.round(rng.normal(size=(3,)))
        x[0, 0] = float("nan")
        cases.append(case(nm(op.lower()), op, {}, [tens("x", x), tens("y", yv)],
                          [tens("z", f(torch.tensor(x), torch.tensor(yv)), "bool")]))
        xi = rng.integers(-2, 3, size=(3, 1)).astype(np.int32)
        yi = rng.integers(-2, 3, size=(1, 2)).astype(np.int32)
        cases.append(case(nm(op.lower() + "-int32"), op, {}, [tens("x", xi, "int32"), tens("y", yi, "int32")],
                          [tens("z", f(torch.tensor(xi), torch.tensor(yi)), "bool")]))
    b1 = np.array([[True, False], [False, True]])
    b2 = np.array([True, False])
    cases.append(case(nm("equal-bool"), "Equal", {}, [tens("x", b1, "bool"), tens("y", b2, "bool")],
                      [tens("z", b1 == b2, "bool")]))
    x, yv = rng.normal(size=(2, 3)), rng.normal(size=(4,))
    cases.append(case(nm("equal-incompatible"), "Equal", {"incompatible_shape_error": False},
                      [tens("x", x), tens("y", yv)], [tens("z", np.array(False), "bool")]))
    cases.append(case(nm("notequal-incompatible"), "NotEqual", {"incompatible_shape_error": False},
                      [tens("x", x), tens("y", yv)], [tens("z", np.array(True), "bool")]))
    cases.append(case(nm("greater-incompatible"), "Greater", {}, [tens("x", x), tens("y", yv)],
                      error="Incompatible shapes: [2,3] vs. [4]"))

    # Select: torch.where with a same-shape or scalar condition; the row
    # form reshapes the condition to [n, 1, ...] (TF's BatchSelectFunctor).
    for cs, ts in (((2, 3), (2, 3)), ((), (2, 2)), ((3,), (3, 2, 2))):
        c = rng.integers(0, 2, size=cs).astype(bool)
        t, e = leaf(rng.normal(size=ts)), leaf(rng.normal(size=ts))
        cb = torch.tensor(c).reshape(list(cs) + [1] * (len(ts) - len(cs)))
        out = torch.where(cb, t, e)
        up = torch.tensor(rng.normal(size=ts))
        gt, ge = vjp(out, [t, e], up)
        cases.append(case(nm("select"), "Select", {}, [tens("condition", c, "bool"), tens("t", t), tens("e", e)],
                          [tens("output", out)],
                          {"upstream": [tens("doutput", up)], "expected": [None, tens("dt", gt), tens("de", ge)]}))
    cases.append(case(nm("select-rows-mismatch"), "Select", {},
                      [tens("condition", np.array([True, False]), "bool"), tens("t", rng.normal(size=(3, 2))),
                       tens("e", rng.normal(size=(3, 2)))],
                      error="Number of batches of 'then' must match size of 'cond', but saw: 3 vs. 2"))
    # SelectV2: torch.where broadcasts like tf.where (v2); its gradient sums
    # over the broadcast dimensions like _SelectGradV2.
    for cs, ts, es in (((2, 3), (2, 3), (2, 3)), ((3,), (2, 3), ()), ((2, 1, 3), (1, 4, 1), (4, 3))):
        c = rng.integers(0, 2, size=cs).astype(bool)
        t, e = leaf(rng.normal(size=ts)), leaf(rng.normal(size=es))
        out = torch.where(torch.tensor(c), t, e)
        up = torch.tensor(rng.normal(size=out.shape))
        gt, ge = vjp(out, [t, e], up)
        cases.append(case(nm("selectv2"), "SelectV2", {}, [tens("condition", c, "bool"), tens("t", t), tens("e", e)],
                          [tens("output", out)],
                          {"upstream": [tens("doutput", up)], "expected": [None, tens("dt", gt), tens("de", ge)]}))
    cases.append(case(nm("selectv2-mismatch"), "SelectV2", {},
                      [tens("condition", np.array([True, False]), "bool"), tens("t", rng.normal(size=(3,))),
                       tens("e", np.array(1.0))],
                      error="must be broadcastable"))
    return cases


# ---------------------------------------------------------------------------
# array: ConcatV2, Slice, StridedSlice, StridedSliceGrad, Pad, PadV2,
# ArgMax, ArgMin.

def np_index(begin, end, strides, bm=0, em=0, elm=0, nam=0, sam=0):
    """The NumPy index tf.strided_slice's spec stands for (docs/spec/array.md):
    ... for an ellipsis bit, np.newaxis for a new-axis bit, the integer
    begin[i] for a shrink bit, else slice(begin or None, end or None, step)
    with None where the begin/end mask bit is set."""
    idx = []
    for i in range(len(strides)):
        bit = 1 << i
        if elm & bit:
            idx.append(Ellipsis)
        elif nam & bit:
            idx.append(np.newaxis)
        elif sam & bit:
            idx.append(int(begin[i]))
        else:
            idx.append(slice(None if bm & bit else int(begin[i]), None if em & bit else int(end[i]), int(strides[i])))
    return tuple(idx)


def gen_array(rng):
    cases = []
    n = 0

    def nm(kind):
        nonlocal n
        n += 1
        return "array/%s/%04d" % (kind, n)

    # ConcatV2: torch.cat and its autograd (the gradient of each value is
    # its slice of the upstream gradient, as TF's _ConcatGradV2).
    for shapes, axis, adt in ((((2, 3), (1, 3)), 0, "int32"), (((2, 1, 2), (2, 3, 2), (2, 2, 2)), 1, "int32"),
                              (((2, 2), (2, 3)), -1, "int64"), (((3,), (0,), (2,)), 0, "int32")):
        vals = [leaf(rng.normal(size=s)) for s in shapes]
        out = torch.cat(vals, axis)
        up = torch.tensor(rng.normal(size=out.shape))
        gs = vjp(out, vals, up)
        ins = [tens("values", v) for v in vals] + [tens("axis", np.array(axis), adt)]
        cases.append(case(nm("concat"), "ConcatV2", {}, ins, [tens("output", out)],
                          {"upstream": [tens("doutput", up)], "expected": [tens("dvalues", g) for g in gs] + [None]}))
    xi = rng.integers(-5, 5, size=(2, 2)).astype(np.int32)
    cases.append(case(nm("concat-int32"), "ConcatV2", {}, [tens("values", xi, "int32"), tens("values", xi, "int32"),
                      tens("axis", np.array(1), "int32")], [tens("output", np.concatenate([xi, xi], 1), "int32")]))
    cases.append(case(nm("concat-axis-range"), "ConcatV2", {},
                      [tens("values", rng.normal(size=(2, 3))), tens("values", rng.normal(size=(2, 3))), tens("axis", np.array(2), "int32")],
                      error="Expected concatenating dimensions in the range [-2, 2), but got 2"))
    cases.append(case(nm("concat-dims"), "ConcatV2", {},
                      [tens("values", rng.normal(size=(2, 3))), tens("values", rng.normal(size=(3, 3))), tens("axis", np.array(1), "int32")],
                      error="Dimension 0 in both shapes must be equal"))

    # Slice: tensor slicing in torch, autograd for the gradient.
    for shape, begin, size, idt in (((3, 4), (1, 1), (2, 2), "int32"), ((2, 3, 4), (1, 0, 2), (-1, 2, -1), "int64"),
                                    ((5,), (2,), (0,), "int32")):
        x = leaf(rng.normal(size=shape))
        sl = tuple(slice(b, shape[i] if s == -1 else b + s) for i, (b, s) in enumerate(zip(begin, size)))
        out = x[sl]
        up = torch.tensor(rng.normal(size=out.shape))
        (gx,) = vjp(out, [x], up)
        cases.append(case(nm("slice"), "Slice", {}, [tens("input", x), tens("begin", np.array(begin), idt), tens("size", np.array(size), idt)],
                          [tens("output", out)], {"upstream": [tens("doutput", up)], "expected": [tens("dinput", gx), None, None]}))
    cases.append(case(nm("slice-size"), "Slice", {}, [tens("input", rng.normal(size=(3, 4))), tens("begin", np.array([1, 1]), "int32"),
                      tens("size", np.array([3, 1]), "int32")], error="Expected size[0] in [0, 2], but got 3"))

    # StridedSlice: NumPy basic indexing (torch has no negative steps); the
    # gradient scatters the upstream gradient through the same index.
    specs = [
        ((7,), (1,), (6,), (2,), {}),
        ((3, 4), (5, -1), (-9, 0), (-1, -2), {}),
        ((4, 5), (3, 1), (2, 9), (1, 2), {"begin_mask": 1, "end_mask": 2}),
        ((3, 4), (-1, 0, 1), (0, 0, 3), (1, 1, 1), {"shrink_axis_mask": 1, "new_axis_mask": 2}),
        ((2, 3, 4), (0, 2), (0, 3), (1, 1), {"ellipsis_mask": 1, "shrink_axis_mask": 2}),
        ((2, 3, 4), (1, 0, 0), (2, 0, 0), (1, 1, -1), {"ellipsis_mask": 2, "shrink_axis_mask": 1}),
        ((4, 3), (0, 0, 0), (0, 0, 0), (1, 1, 1), {"ellipsis_mask": 1, "new_axis_mask": 6}),
        ((5, 2), (1,), (-1,), (-1,), {}),
        ((3, 2), (0, -1), (3, 0), (2, 1), {"shrink_axis_mask": 2}),
    ]
    for k, (shape, b, e, st, a) in enumerate(specs):
        idt = "int64" if k % 2 else "int32"
        x = rng.normal(size=shape)
        idx = np_index(b, e, st, a.get("begin_mask", 0), a.get("end_mask", 0), a.get("ellipsis_mask", 0),
                       a.get("new_axis_mask", 0), a.get("shrink_axis_mask", 0))
        out = np.array(x[idx])
        up = rng.normal(size=out.shape)
        gx = np.zeros(shape)
        gx[idx] = up
        ins = [tens("input", x), tens("begin", np.array(b), idt), tens("end", np.array(e), idt), tens("strides", np.array(st), idt)]
        cases.append(case(nm("stridedslice"), "StridedSlice", a, ins, [tens("output", out)],
                          {"upstream": [tens("doutput", up)], "expected": [tens("dinput", gx), None, None, None]}))
        # StridedSliceGrad with the same spec: zeros with dy at the slice.
        dy = rng.normal(size=out.shape)
        want = np.zeros(shape)
        want[idx] = dy
        uw = rng.normal(size=shape)
        gdy = np.array(uw[idx])  # the gradient of StridedSliceGrad w.r.t. dy: the slice of the upstream
        gins = [tens("shape", np.array(shape), idt), tens("begin", np.array(b), idt), tens("end", np.array(e), idt),
                tens("strides", np.array(st), idt), tens("dy", dy)]
        cases.append(case(nm("stridedslicegrad"), "StridedSliceGrad", a, gins, [tens("output", want)],
                          {"upstream": [tens("doutput", uw)], "expected": [None, None, None, None, tens("ddy", gdy)]}))
    cases.append(case(nm("stridedslice-shrink-range"), "StridedSlice", {"shrink_axis_mask": 1},
                      [tens("input", rng.normal(size=(3,))), tens("begin", np.array([3]), "int32"), tens("end", np.array([4]), "int32"),
                       tens("strides", np.array([1]), "int32")], error="slice index 3 of dimension 0 out of bounds."))
    cases.append(case(nm("stridedslice-zero-stride"), "StridedSlice", {},
                      [tens("input", rng.normal(size=(3,))), tens("begin", np.array([0]), "int32"), tens("end", np.array([2]), "int32"),
                       tens("strides", np.array([0]), "int32")], error="strides[0] must be non-zero"))
    xb = np.array([[True, False, True], [False, False, True]])
    cases.append(case(nm("stridedslice-bool"), "StridedSlice", {"end_mask": 1},
                      [tens("input", xb, "bool"), tens("begin", np.array([1, 2]), "int32"), tens("end", np.array([0, -4]), "int32"),
                       tens("strides", np.array([1, -1]), "int32")], [tens("output", xb[1:, 2:-4:-1], "bool")]))

    # Pad, PadV2: torch.nn.functional.pad (constant mode), autograd.
    for shape, pads, pdt, cval in (((2, 3), ((1, 0), (2, 1)), "int32", None), ((1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)), "int64", None),
                                   ((3,), ((2, 1),), "int32", -1.5), ((), (), "int32", 2.0)):
        x = leaf(rng.normal(size=shape))
        flat = []
        for p in reversed(pads):  # F.pad lists the last dimension first
            flat += list(p)
        out = torch.nn.functional.pad(x, flat, value=0.0 if cval is None else cval) if flat else x * 1
        up = torch.tensor(rng.normal(size=out.shape))
        (gx,) = vjp(out, [x], up)
        pm = np.array(pads, dtype=np.int64).reshape(len(shape), 2)
        ins = [tens("input", x), tens("paddings", pm, pdt)]
        exp = [tens("dinput", gx), None]
        op = "Pad"
        if cval is not None:
            op = "PadV2"
            ins.append(tens("constant_values", np.array(cval)))
            exp.append(None)  # TF's _PadGrad gives constant_values no gradient
        cases.append(case(nm(op.lower()), op, {}, ins, [tens("output", out)], {"upstream": [tens("doutput", up)], "expected": exp}))
    cases.append(case(nm("pad-negative"), "Pad", {}, [tens("input", rng.normal(size=(2, 2))),
                      tens("paddings", np.array([[1, -1], [0, 0]]), "int32")], error="Paddings must be non-negative: 1 -1"))

    # ArgMax, ArgMin: np.argmax / np.argmin (first occurrence of ties).
    x = np.round(rng.normal(size=(3, 4)))
    for op, f in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        for dim, odt in ((1, None), (0, "int32"), (-1, "int64")):
            attrs = {} if odt is None else {"output_type": odt}
            cases.append(case(nm(op.lower()), op, attrs, [tens("input", x), tens("dimension", np.array(dim), "int32")],
                              [tens("output", f(x, axis=dim), odt or "int64")]))
        xi = rng.integers(-3, 3, size=(2, 5)).astype(np.int64)
        cases.append(case(nm(op.lower() + "-int64"), op, {}, [tens("input", xi, "int64"), tens("dimension", np.array(1), "int64")],
                          [tens("output", f(xi, axis=1), "int64")]))
    cases.append(case(nm("argmax-empty"), "ArgMax", {}, [tens("input", np.zeros((2, 0))), tens("dimension", np.array(1), "int32")],
                      error="Reduction axis 1 is empty in shape [2,0]"))
    return cases


# ---------------------------------------------------------------------------
# pool: MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad, AvgPoolGrad.

def tf_same(i, k, st):
    """TF's SAME output size and (before, after) padding of one axis."""
    o = (i + st - 1) // st
    need = max(0, (o - 1) * st + k - i)
    return o, need // 2, need - need // 2


def tf_pool(x, kind, k, st, padding, nchw):
    """TF's MaxPool / AvgPool built from PyTorch ops (docs/spec/pool.md): the
    asymmetric SAME padding applied explicitly; max pads with -Inf (padding
    never wins), avg pads with 0 and divides by the pooled count of the
    real elements (padding not counted). x is a torch tensor in the case's
    layout; so is the result."""
    xt = x if nchw else x.permute(0, 3, 1, 2)
    h, w = xt.shape[2], xt.shape[3]
    if padding == "SAME":
        _, pt, pb = tf_same(h, k[0], st[0])
        _, pl, pr = tf_same(w, k[1], st[1])
    else:
        pt = pb = pl = pr = 0
    pads = (pl, pr, pt, pb)
    if kind == "max":
        y = torch.nn.functional.max_pool2d(torch.nn.functional.pad(xt, pads, value=-math.inf), k, st)
    else:
        area = k[0] * k[1]
        ssum = torch.nn.functional.avg_pool2d(torch.nn.functional.pad(xt, pads, value=0.0), k, st) * area
        ones = torch.nn.functional.pad(torch.ones_like(xt), pads, value=0.0)
        cnt = torch.nn.functional.avg_pool2d(ones, k, st) * area
        y = ssum / cnt
    return y if nchw else y.permute(0, 2, 3, 1)


def pool_attrs(k, st, padding, nchw):
    if nchw:
        return {"ksize": [1, 1, k[0], k[1]], "strides": [1, 1, st[0], st[1]], "padding": padding, "data_format": "NCHW"}
    return {"ksize": [1, k[0], k[1], 1], "strides": [1, st[0], st[1], 1], "padding": padding, "data_format": "NHWC"}


def distinct(rng, shape):
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * 0.05 + 0.01 * rng.random(n)).reshape(shape)


def gen_pool(rng):
    cases = []
    n = 0

    def nm(kind):
        nonlocal n
        n += 1
        return "pool/%s/%04d" % (kind, n)

    configs = [  # shape in the case's layout, ksize, strides, padding, nchw
        ((2, 4, 4, 2), (2, 2), (2, 2), "VALID", False),
        ((1, 5, 4, 2), (3, 3), (2, 2), "SAME", False),
        ((2, 2, 3, 3), (2, 2), (1, 1), "SAME", True),
        ((1, 4, 5, 3), (3, 2), (1, 2), "VALID", False),
        ((1, 2, 5, 4), (1, 1), (3, 3), "VALID", True),
        ((2, 3, 3, 1), (4, 4), (3, 3), "SAME", False),
        ((1, 6, 7, 1), (3, 2), (2, 3), "SAME", False),
    ]
    for shape, k, st, padding, nchw in configs:
        attrs = pool_attrs(k, st, padding, nchw)
        for kind, op in (("max", "MaxPool"), ("avg", "AvgPool")):
            x = leaf(distinct(rng, shape) if kind == "max" else rng.normal(size=shape))
            y = tf_pool(x, kind, k, st, padding, nchw)
            up = torch.tensor(rng.normal(size=y.shape))
            (gx,) = vjp(y, [x], up)
            cases.append(case(nm(op.lower()), op, attrs, [tens("input" if kind == "max" else "value", x)], [tens("output", y)],
                              {"upstream": [tens("doutput", up)], "expected": [tens("dinput", gx)]}))
            if kind == "max":
                # MaxPoolGrad(x, y, dy) = the gradient above; its own
                # gradient: zeros for x and y (TF), dy's = u gathered at
                # the argmax = the MaxPool construction's vjp read back.
                u = torch.tensor(rng.normal(size=shape))
                xm = leaf(x.detach().numpy())
                ym = tf_pool(xm, "max", k, st, padding, nchw)
                gy = torch.autograd.grad(ym, xm, torch.ones_like(ym), retain_graph=True)[0]
                # gather: for a one-hot argmax map, u at the argmax of each
                # window = jvp of the pooling in direction u.
                gathered = torch.autograd.functional.jvp(lambda t: tf_pool(t, "max", k, st, padding, nchw), xm.detach(), u)[1]
                cases.append(case(nm("maxpoolgrad"), "MaxPoolGrad", attrs,
                                  [tens("orig_input", x), tens("orig_output", y), tens("grad", up)], [tens("output", gx)],
                                  {"upstream": [tens("doutput", u)],
                                   "expected": [tens("dorig_input", np.zeros(shape)), tens("dorig_output", np.zeros(y.shape)), tens("dgrad", gathered)]}))
                w2 = torch.tensor(rng.normal(size=y.shape))
                (scat,) = vjp(ym, [xm], w2)
                cases.append(case(nm("maxpoolgradgrad"), "MaxPoolGradGrad", attrs,
                                  [tens("orig_input", x), tens("orig_output", y), tens("grad", u)], [tens("output", gathered)],
                                  {"upstream": [tens("doutput", w2)],
                                   "expected": [tens("dorig_input", np.zeros(shape)), tens("dorig_output", np.zeros(y.shape)), tens("dgrad", scat)]}))
            else:
                # AvgPoolGrad(shape, dy) = the gradient above; its gradient
                # with respect to dy is AvgPool of the upstream.
                u = torch.tensor(rng.normal(size=shape))
                cases.append(case(nm("avgpoolgrad"), "AvgPoolGrad", attrs,
                                  [tens("orig_input_shape", np.array(shape), "int32"), tens("grad", up)], [tens("output", gx)],
                                  {"upstream": [tens("doutput", u)], "expected": [None, tens("dgrad", tf_pool(u, "avg", k, st, padding, nchw))]}))

    # Ties: the gradient goes to the first maximum in row-major order (TF's
    # CPU MaxPoolGrad). Built with NumPy by that rule and checked against
    # torch's CPU max_pool2d, whose argmax follows the same rule.
    x = np.array([1.0, 3.0, 3.0, 2.0, 0.0, 5.0, 5.0, 5.0, 2.0, 2.0, 2.0, 2.0]).reshape(1, 3, 4, 1)
    attrs = pool_attrs((2, 2), (1, 2), "VALID", False)
    xt = leaf(x)
    y = tf_pool(xt, "max", (2, 2), (1, 2), "VALID", False)
    up = torch.tensor(rng.normal(size=y.shape))
    (g_torch,) = vjp(y, [xt], up)
    g_tf = np.zeros_like(x)
    for oh in range(y.shape[1]):
        for ow in range(y.shape[2]):
            win = [(oh + i, 2 * ow + j) for i in range(2) for j in range(2)]
            vals = [x[0, h, w, 0] for h, w in win]
            h, w = win[int(np.argmax(vals))]
            g_tf[0, h, w, 0] += up[0, oh, ow, 0].item()
    assert np.array_equal(g_tf, g_torch.numpy()), "torch's max_pool2d tie rule differs from TF's"
    cases.append(case(nm("maxpool-ties"), "MaxPool", attrs, [tens("input", x)], [tens("output", y)],
                      {"upstream": [tens("doutput", up)], "expected": [tens("dinput", g_tf)]}))
    cases.append(case(nm("maxpoolgrad-ties"), "MaxPoolGrad", attrs, [tens("orig_input", x), tens("orig_output", y), tens("grad", up)],
                      [tens("output", g_tf)]))

    # float32.
    x32 = rng.normal(size=(1, 4, 4, 2)).astype(np.float32)
    attrs = pool_attrs((3, 3), (2, 2), "SAME", False)
    for kind, op in (("max", "MaxPool"), ("avg", "AvgPool")):
        y = tf_pool(torch.tensor(x32.astype(np.float64)), kind, (3, 3), (2, 2), "SAME", False)
        cases.append(case(nm(op.lower() + "-f32"), op, attrs, [tens("input" if kind == "max" else "value", x32, "float32")],
                          [tens("output", y.numpy().astype(np.float32), "float32")], rtol=1e-6, atol=1e-6))

    # Errors.
    xe = rng.normal(size=(1, 4, 4, 1))
    cases.append(case(nm("maxpool-batch"), "MaxPool", {"ksize": [2, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "VALID"},
                      [tens("input", xe)], error="Pooling is not yet supported on the batch dimension."))
    cases.append(case(nm("avgpool-negative"), "AvgPool", {"ksize": [1, 6, 1, 1], "strides": [1, 1, 1, 1], "padding": "VALID"},
                      [tens("value", xe)], error="Computed output size would be negative"))
    cases.append(case(nm("maxpool-ksize"), "MaxPool", {"ksize": [1, 2, 2], "strides": [1, 1, 1, 1], "padding": "VALID"},
                      [tens("input", xe)], error="Sliding window ksize field must specify 4 dimensions"))
    return cases


# ---------------------------------------------------------------------------
# _FusedBatchNormEx: FusedBatchNormV3 followed by its activation (Identity or
# Relu), TensorFlow's fusion of FusedBatchNormV3 + Relu (its op definition:
# y = activation(batch_norm(x)); the other outputs are FusedBatchNormV3's).
# Batch norm here is torch.nn.functional.batch_norm in float64 with
# TensorFlow's conventions built in: batch_mean/batch_variance are the
# running statistics (unbiased variance, blended with
# exponential_avg_factor f as (1-f)*old + f*batch); reserve_space_1/2 the
# batch mean and biased variance in training, the given mean and variance
# in inference; the gradient is TensorFlow's (through the batch statistics
# in training, with mean and variance constant in inference).

def bn_ex_case(rng, name, shape, fmt, training, relu, eps=None, factor=None, dtype="float64"):
    nd = len(shape)
    cdim = 1 if fmt in ("NCHW", "NCDHW") else nd - 1
    C = shape[cdim]
    x = rng.normal(0.3, 1.5, size=shape)
    g = rng.uniform(0.5, 1.5, size=C) * rng.choice([-1.0, 1.0], size=C)
    b = rng.normal(0, 1, size=C)
    f = 1.0 if factor is None else float(np.float32(factor))  # a 32-bit float attr too
    if training and f == 1.0:
        m_in, v_in = np.zeros(0), np.zeros(0)
    else:
        m_in, v_in = rng.normal(0.2, 1, size=C), rng.uniform(0.5, 2, size=C)
    if dtype == "float32":
        x, g, b, m_in, v_in = [np.asarray(a, dtype=np.float32).astype(np.float64) for a in (x, g, b, m_in, v_in)]
    # The epsilon attr is a 32-bit float: the op adds float32(eps).
    e_attr = 1e-4 if eps is None else eps
    e = float(np.float32(e_attr))
    perm = [0, cdim] + [d for d in range(1, nd) if d != cdim]
    inv = list(np.argsort(perm))
    xt, gt, bt = leaf(x), leaf(g), leaf(b)
    xc = xt.permute(*perm)
    red = [d for d in range(nd) if d != 1]
    n = x.size // C
    if training:
        yc = torch.nn.functional.batch_norm(xc, None, None, gt, bt, training=True, eps=e)
        with torch.no_grad():
            mean = xc.mean(dim=red)
            var = xc.var(dim=red, unbiased=False)
        uvar = var * (n / max(n - 1, 1))
        if f == 1.0:
            bm, bv = mean, uvar
        else:
            bm = (1 - f) * torch.tensor(m_in) + f * mean
            bv = (1 - f) * torch.tensor(v_in) + f * uvar
        rs1, rs2 = mean, var
    else:
        yc = torch.nn.functional.batch_norm(xc, torch.tensor(m_in), torch.tensor(v_in), gt, bt, training=False, eps=e)
        bm = rs1 = torch.tensor(m_in)
        bv = rs2 = torch.tensor(v_in)
    if relu:
        yc = torch.relu(yc)
    y = yc.permute(*inv)
    up = rng.normal(0, 1, size=shape)
    if dtype == "float32":
        up = np.asarray(up, dtype=np.float32).astype(np.float64)
    dx, dg, db = vjp([y], [xt, gt, bt], [torch.tensor(up)])
    attrs = {"epsilon": e_attr, "data_format": fmt, "is_training": training, "activation_mode": "Relu" if relu else "Identity"}
    if factor is not None:
        attrs["exponential_avg_factor"] = factor
    tol = 1e-12 if dtype == "float64" else 2e-5
    return case(name, "_FusedBatchNormEx", attrs,
                [tens("x", x, dtype), tens("scale", g, dtype), tens("offset", b, dtype),
                 tens("mean", m_in, dtype), tens("variance", v_in, dtype)],
                outputs=[tens("y", y, dtype), tens("batch_mean", bm, dtype), tens("batch_variance", bv, dtype),
                         tens("reserve_space_1", rs1, dtype), tens("reserve_space_2", rs2, dtype),
                         {"name": "reserve_space_3", "dtype": dtype, "shape": [], "data": None}],
                grad={"upstream": [tens("d_y", up, dtype), None, None, None, None, None],
                      "expected": [tens("d_x", dx, dtype), tens("d_scale", dg, dtype), tens("d_offset", db, dtype), None, None]},
                rtol=tol, atol=tol)


def gen_bnex(rng):
    cases = []
    nm = lambda k: "fused_batch_norm_ex/" + k
    cases.append(bn_ex_case(rng, nm("nhwc-train-relu/f64"), [2, 3, 4, 5], "NHWC", True, True, eps=1e-3))
    cases.append(bn_ex_case(rng, nm("nchw-train-relu-f0.6/f64"), [3, 4, 2, 3], "NCHW", True, True, factor=0.6))
    cases.append(bn_ex_case(rng, nm("nhwc-infer-relu/f64"), [2, 2, 3, 6], "NHWC", False, True, eps=1e-2))
    cases.append(bn_ex_case(rng, nm("nchw-infer-relu/f64"), [2, 3, 2, 2], "NCHW", False, True))
    cases.append(bn_ex_case(rng, nm("ndhwc-train-relu/f64"), [2, 2, 2, 3, 4], "NDHWC", True, True, eps=1e-3))
    cases.append(bn_ex_case(rng, nm("ncdhw-train-relu-f0.25/f64"), [2, 3, 2, 2, 2], "NCDHW", True, True, factor=0.25))
    cases.append(bn_ex_case(rng, nm("nhwc-train-identity/f64"), [2, 3, 3, 4], "NHWC", True, False))
    cases.append(bn_ex_case(rng, nm("nhwc-train-relu/f32"), [4, 5, 5, 16], "NHWC", True, True, eps=1e-3, dtype="float32"))
    cases.append(bn_ex_case(rng, nm("nhwc-infer-relu/f32"), [2, 4, 4, 12], "NHWC", False, True, eps=1e-3, dtype="float32"))
    x = rng.normal(size=[2, 3, 4])
    c3 = lambda: [tens("scale", np.ones(4)), tens("offset", np.zeros(4)), tens("mean", np.zeros(0)), tens("variance", np.zeros(0))]
    x4 = rng.normal(size=[1, 2, 2, 4])
    cases.append(case(nm("error/x-rank3"), "_FusedBatchNormEx", {"activation_mode": "Relu"}, [tens("x", x)] + c3(),
                      error="4 or 5-dimensional"))
    cases.append(case(nm("error/two-side-inputs"), "_FusedBatchNormEx", {"activation_mode": "Relu", "num_side_inputs": 2},
                      [tens("x", x4)] + c3(), error="at most one side input"))
    cases.append(case(nm("error/activation-elu"), "_FusedBatchNormEx", {"activation_mode": "Elu"}, [tens("x", x4)] + c3(),
                      error="activation_mode"))
    return cases


# family: (generator, seed)
FAMILIES = {"cwise": (gen_cwise, 1801), "array": (gen_array, 1802), "pool": (gen_pool, 1803),
            "fused_batch_norm_ex": (gen_bnex, 1804)}


def main(argv):
    fams = argv or sorted(FAMILIES)
    for fam in fams:
        gen, seed = FAMILIES[fam]
        rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        cases = gen(rng)
        path = os.path.join(HERE, fam + ".json")
        with open(path, "w") as f:
            json.dump({"cases": cases}, f, separators=(",", ":"))
            f.write("\n")
        print("%s: %d cases" % (path, len(cases)))


if __name__ == "__main__":
    main(sys.argv[1:])
