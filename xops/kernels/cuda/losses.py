"""CUDA kernel of the fused cross-entropy (``nn.functional.softmax_cross_entropy``, the
one recorded op of :func:`xops.nn.functional.cross_entropy` for (N, C) f32 / f64 logits)
and of its gradient: one launch each, no host round trip.

Both run the CPU op's formulas (:func:`xops.nn.functional._softmax_xent`) in float64 and
round once to the logits' type. Per row r, by one block of nt threads (a power of two
from 32 to 256 that grows with C: a function of the shape only), thread t reading
columns t, t + nt, ... (coalesced): ``max`` of the row (NaN if any element is NaN, as
NumPy's), ``lse = log(sum(exp(x - max)))`` (each thread's share summed in column order,
then a fixed-order shared-memory tree), and then

* forward: ``lse - (x[label] - max)`` per row; ``"none"`` stores it, ``"sum"`` and
  ``"mean"`` add the rows' values in float64 (thread 0 of each block in row order, then
  the blocks' partials in a fixed-order tree: a second small launch only for more than
  :data:`ONE_BLOCK` rows) and divide by N for the mean (N = 0: NaN, as 0/0);
* gradient: ``(exp((x - max) - lse) - [j == label]) * f`` for every element, with
  ``f = g[r]`` (``"none"``), ``g`` (``"sum"``) or ``g / N`` (``"mean"``).

Against the CPU's fused op the results differ only by the order of the float64 sums
(NumPy sums pairwise) and libdevice's exp / log (within 1 ulp of float64): f32 results
equal the CPU's or differ by 1 ulp at a rounding boundary, f64 by a few ulp. The order
depends on the shape only, so results are the same on every run (no atomics).

A label outside [0, C) is never read past its row: that row's loss, or every element of
its gradient row, is NaN. :func:`xops.nn.functional.cross_entropy` raises its ValueError
before launching (its label range check reads each label array once,
:func:`xops.nn.functional._label_range`), so the kernel's guard only matters for a
direct call of the op with unchecked labels.
"""

import math

import numpy as np
from numba import cuda, float64, int64

from ...errors import SpecError
from ._storage import device_empty, flat, from_holder, jit, on_device

__all__ = ["KERNELS", "FUSED", "T", "ONE_BLOCK"]

NAME = "nn.functional.softmax_cross_entropy"
T = 256  # the most threads per block (the shared array's size)
ONE_BLOCK = 64  # a mean or sum over at most this many rows: one block, one launch
ROWS = 8  # rows per block of a longer mean or sum (then one launch adds the partials)
MAX_BLOCKS = 1024  # blocks of one launch (each takes every MAX_BLOCKS-th row after)
_MODES = {"none": 0, "sum": 1, "mean": 2}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_state = {}


def _threads(c):
    """Threads per row of C columns: the power of two from 32 to T that is at least C."""
    nt = 32
    while nt < T and nt < c:
        nt *= 2
    return nt


@cuda.jit(device=True)
def _combine(red, t, nt, v, take_max):
    """The ``v`` of the block's nt threads combined by a fixed-order tree in the shared
    array ``red``: their max (NaN if any is NaN, as NumPy's max) or their sum; every
    thread gets it, and ``red`` is free again on return."""
    red[t] = v
    cuda.syncthreads()
    h = nt >> 1
    while h:
        if t < h:
            w = red[t + h]
            if not take_max:
                red[t] = red[t] + w
            elif w > red[t] or w != w:
                red[t] = w
        cuda.syncthreads()
        h >>= 1
    v = red[0]
    cuda.syncthreads()
    return v


@jit
def _xent(x, y, g, n, c, mode, grad, out, partial):
    """Rows b, b + blocks, ... of flat (n, c) logits ``x`` with labels ``y``: the loss per
    row into ``out[r]`` (``mode`` 0), or each block's float64 sum of its rows' losses into
    ``partial[b]`` (or, for one block, the sum (mode 1) or mean (mode 2) into ``out[0]``);
    with ``grad``, the gradient row for cotangent ``g`` into ``out[r * c:(r + 1) * c]``."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    nt = cuda.blockDim.x
    red = cuda.shared.array(T, float64)
    acc = float64(0.0)
    r = b
    while r < n:
        base = r * c
        m = -math.inf
        j = t
        while j < c:
            v = float64(x[base + j])
            if v > m or v != v:  # (a NaN stays: NumPy's max propagates it)
                m = v
            j += nt
        mx = _combine(red, t, nt, m, True)
        s = float64(0.0)
        j = t
        while j < c:
            s += math.exp(float64(x[base + j]) - mx)
            j += nt
        lse = math.log(_combine(red, t, nt, s, False))
        lab = int64(y[r])
        ok = lab >= 0 and lab < c
        if grad:
            f = float64(g[r]) if mode == 0 else float64(g[0])
            if mode == 2:
                f = f / n
            j = t
            while j < c:
                d = math.nan
                if ok:
                    d = math.exp((float64(x[base + j]) - mx) - lse)
                    if j == lab:
                        d -= 1.0
                    d = d * f
                out[base + j] = d
                j += nt
        elif t == 0:
            per = math.nan
            if ok:
                per = lse - (float64(x[base + lab]) - mx)
            if mode == 0:
                out[r] = per
            else:
                acc += per
        r += cuda.gridDim.x
    if mode != 0 and not grad and t == 0:
        if cuda.gridDim.x > 1:
            partial[b] = acc
        elif mode == 1:
            out[0] = acc
        elif n > 0:
            out[0] = acc / n
        else:  # the mean of no rows: 0/0
            out[0] = math.nan


@jit
def _total(partial, parts, n, mode, out):
    """One block: the sum of the ``parts`` float64 partials (each thread a strided share,
    then a fixed-order tree) into ``out[0]``, divided by n for the mean (``mode`` 2)."""
    t = cuda.threadIdx.x
    red = cuda.shared.array(T, float64)
    s = float64(0.0)
    j = t
    while j < parts:
        s += partial[j]
        j += cuda.blockDim.x
    s = _combine(red, t, cuda.blockDim.x, s, False)
    if t == 0:
        out[0] = s / n if mode == 2 else s


def _dummy():
    """A one-element float64 device array for the unused ``partial`` argument."""
    d = _state.get("dummy")
    if d is None:
        d = _state["dummy"] = device_empty((1,), np.float64)
    return d


def _operands(logits, labels, reduction):
    """``(x, y, n, c, mode)``: the logits' and labels' device arrays (x flat), the shape
    and the reduction's code; a SpecError for operands the kernel does not take (it is
    reached through :func:`xops.nn.functional.cross_entropy`, which sends it only
    these)."""
    mode = _MODES.get(reduction) if isinstance(reduction, str) else None
    dt, lt = logits._dtype, labels._dtype
    if (
        mode is None
        or logits.ndim != 2
        or dt.np not in _FLOATS
        or lt.kind not in ("si", "ui")
        or labels.shape != logits.shape[:1]
    ):
        raise SpecError(
            NAME,
            "device",
            f"has no cuda kernel for logits {logits.type}, labels {labels.type} and "
            f"reduction {reduction!r} (2-D f32 / f64 logits (N, C), integer labels (N,), "
            f"reduction 'mean', 'sum' or 'none')",
        )
    x = on_device(NAME, logits, "logits")
    y = on_device(NAME, labels, "labels")
    if y.dtype != lt.np:  # (i2 / i4 / ui2 / ui4 labels: stored as bit patterns)
        raise SpecError(NAME, "device", f"has no cuda kernel for labels {labels.type}")
    n, c = logits.shape
    return flat(x), y, n, c, mode


def softmax_cross_entropy(logits, labels, reduction):
    """The kernel of ``nn.functional.softmax_cross_entropy``: same signature and results
    as the CPU op (within the rounding order, module docstring)."""
    x, y, n, c, mode = _operands(logits, labels, reduction)
    dt = logits._dtype
    if mode == 0:
        out = device_empty((n,), dt.np)
        if n:
            _xent[min(n, MAX_BLOCKS), _threads(c)](x, y, x, n, c, 0, 0, out, _dummy())
        return from_holder(out, dt)
    out = device_empty((), dt.np)
    o = flat(out)
    blocks = 1 if n <= ONE_BLOCK else min(-(-n // ROWS), MAX_BLOCKS)
    partial = _dummy() if blocks == 1 else device_empty((blocks,), np.float64)
    _xent[blocks, _threads(c)](x, y, x, n, c, mode, 0, o, partial)
    if blocks > 1:
        _total[1, T](partial, blocks, n, mode, o)
    return from_holder(out, dt)


def softmax_cross_entropy_grad(g, logits, labels, reduction):
    """The gradient of :func:`softmax_cross_entropy` for cotangent ``g`` (0-d, or (N,)
    for ``"none"``), d/d logits, as the CPU rule computes it when no graph of the backward
    pass is recorded (``xops.device._updates``: the rule looks it up by device kind)."""
    x, y, n, c, mode = _operands(logits, labels, reduction)
    gv = on_device(NAME, g, "the cotangent")
    dt = logits._dtype
    if gv.dtype not in _FLOATS or g.shape != (logits.shape[:1] if mode == 0 else ()):
        raise SpecError(
            NAME, "device", f"has no cuda kernel for cotangent {g.type} of logits {logits.type}"
        )
    out = device_empty((n, c), dt.np)
    if n and c:
        _xent[min(n, MAX_BLOCKS), _threads(c)](x, y, flat(gv), n, c, mode, 1, flat(out), _dummy())
    return from_holder(out, dt)


KERNELS = {NAME: softmax_cross_entropy}
FUSED = {"softmax_cross_entropy_grad": softmax_cross_entropy_grad}
