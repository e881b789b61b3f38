"""Window kernels: reduce_window and select_and_scatter for recognised bodies.

The op layer brings every problem to rank 4: adjacent dimensions the window does not
touch (window 1, stride 1, no padding or dilation) are merged, and leading size-1
dimensions are added. Each dimension ``d`` then comes with a small table
``t_d[w, o]``: the operand index along ``d`` of window element ``w`` of window ``o``,
or -1 where that element lies on padding or on a base-dilation hole. The tables carry
padding, strides and both dilations, so one loop nest serves every attribute mix.

Element types and ops are those of :mod:`xops.kernels.reduction` (float32, float64,
int64, uint64 compute dtypes; ``combine`` with a compile-time ``OP``; one
variant per op code, and per select code for the select phase).

Race-free patterns:

* ``reduce_window4``: output-parallel (each iteration owns whole output rows).
* ``select_windows4``: output-parallel over windows (each iteration writes the selected
  positions of its own windows).
* ``scatter_selected4``: owner-computes (each iteration owns a block of result rows
  and gathers, for each of its positions, the source values of the windows that
  selected it, in ascending window order). No two iterations write the same element and the
  combine order is fixed, so results are bit-identical for any thread count.
* ``reduce_window_tiles`` / ``select_scatter_tiles`` (non-overlapping windows tiling the
  last two dims, as 2x2 / 2 pooling): output-parallel over output rows / over window
  rows together with the operand rows they cover (each operand element lies in at
  most one window, so these blocks are disjoint). 2x2 windows of floats compute a row
  of windows in SIMD vectors (``reduce_window_tiles22``, and ``select_scatter_tiles``'
  2x2 variant: :mod:`xops.kernels.windows22`).
"""

import numpy as np
from numba import prange, types
from numba.extending import overload

from . import config as _config
from .config import _dispatcher, kernel, renamed, scalar

from .windows22 import reduce22, select_scatter22
from .reduction import (
    MAX,
    MIN,
    OP,
    OP_CODES,
    SEL,
    SELECT_CODES,
    combine,
    per_op,  # noqa: F401
    select_keeps,
)


@scalar
def _rows_per_task(n_rows, row_len):
    """Rows of the last dimension per prange iteration (about 4096 elements), from the
    shapes alone."""
    return max(1, min(n_rows, 4096 // max(row_len, 1)))


@scalar
def _row_index(r, d1, d2):
    """(i0, i1, i2) of row r of a (d0, d1, d2, *) array."""
    return r // (d1 * d2), (r // d2) % d1, r % d2


@scalar
def _carry_row(i0, i1, i2, d1, d2):
    """The row coordinates (i0, i1, i2), with i2 just stepped, brought back in range: i2
    == d2 carries into i1, and i1 == d1 into i0 (no divisions per row)."""
    if i2 == d2:
        i2 = 0
        i1 += 1
        if i1 == d1:
            i1 = 0
            i0 += 1
    return i0, i1, i2


def _combine_blend(a, b, op):
    """``combine(a, b, op)`` (same results, NaN payloads included), with IEEE maximum /
    minimum of floats written as selects with no branch: loops of them vectorise, and
    the scalar iterations (short rows, loop remainders) do not mispredict on random
    data (reduce_window 3x3 / 2 on (16,32,32,32) f32, one thread: 2.2 ms instead of
    11.7 ms). Callable from Numba kernels only (implemented by the overload below)."""
    raise NotImplementedError("_combine_blend is only callable from Numba kernels")


@scalar
def _float_blend(a, b, op):
    if op == MAX:
        m = a if a > b else b
        zero = a + b  # of two zeros: +0 unless both are -0
    else:
        m = a if a < b else b
        zero = -(-a - b)  # of two zeros: -0 unless both are +0
    m = zero if (a == b) & (a == 0) else m
    return m if (a == a) & (b == b) else a + b  # a NaN is involved: as combine's


@overload(_combine_blend, prefer_literal=True)
def _combine_blend_typed(a, b, op):
    if isinstance(a, types.Float) and isinstance(op, types.IntegerLiteral):
        if op.literal_value in (MAX, MIN):
            # a kernel's per-op constant OP: compiled for that op alone, with no
            # ``combine`` of a runtime code to compile beside it (0.4 s of the first
            # max pool's 1.1 s)

            def float_blend_by_code(a, b, op):
                return _float_blend(a, b, op)

            return float_blend_by_code
    if isinstance(a, types.Float):

        def float_blend(a, b, op):
            if op == MAX or op == MIN:
                return _float_blend(a, b, op)
            return combine(a, b, op)

        return float_blend

    def other(a, b, op):
        return combine(a, b, op)

    return other


# Arrays come as 2-D row matrices: x[(s0, s1, s2) row, s3], out[(i0, i1, i2) row, i3].
# Inner loops index row views from 0 up (acc = out[r], xv = x[row][start:]), so every
# index is provably non-negative: Numba then emits no negative-index wraparound and
# LLVM vectorises the constant-stride loops (an index like row_offset + i, whose sign
# LLVM cannot know, would cost a wraparound select per access and a scalar loop).


def reduce_window4(x, xshape, out, oshape, t0, t1, t2, t3, run3, init):
    """Output-parallel: each iteration owns a block of whole output rows
    out[i0, i1, i2, :]. Each output is the left fold, from the init value, of its
    window's elements in row-major window order, an element on padding or a dilation
    hole contributing the init value: exactly the naive reference's order, so results
    are bit-identical to it. Tables are (window, output)-major: t_d[w, o]; run3[w] =
    (a, b, base, step) says t3[w, i] = base + i * step >= 0 for a <= i < b, read with
    no table and no test (vectorised for steps 1 and 2)."""
    n_rows = out.shape[0]
    per = _rows_per_task(n_rows, oshape[3])
    for task in prange((n_rows + per - 1) // per):
        lo, hi = task * per, min(n_rows, (task + 1) * per)
        _task(x, xshape, out, oshape, t0, t1, t2, t3, run3, init, lo, hi)


def reduce_window4_task(x, xshape, out, oshape, t0, t1, t2, t3, run3, init, lo, hi):
    """Output rows lo <= r < hi of reduce_window4 (compiled per variant and called, as
    select_scatter_tiles_task: the same loops inlined into the prange body ran 6x slower
    for 3x3 / 1 windows)."""
    n1, n2 = xshape[1], xshape[2]
    o1, o2, o3 = oshape[1], oshape[2], oshape[3]
    w0n, w1n, w2n, w3n = t0.shape[0], t1.shape[0], t2.shape[0], t3.shape[0]
    i0, i1, i2 = _row_index(lo, o1, o2)
    for r in range(lo, hi):
        i0, i1, i2 = _carry_row(i0, i1, i2, o1, o2)
        acc = out[r]
        for i3 in range(o3):
            acc[i3] = init
        for w0 in range(w0n):
            s0 = t0[w0, i0]
            for w1 in range(w1n):
                s1 = t1[w1, i1]
                for w2 in range(w2n):
                    s2 = t2[w2, i2]
                    if s0 < 0 or s1 < 0 or s2 < 0:  # a whole window row of padding
                        for _w3 in range(w3n):
                            for i3 in range(o3):
                                acc[i3] = _combine_blend(acc[i3], init, OP)
                        continue
                    xrow = x[(s0 * n1 + s1) * n2 + s2]
                    for w3 in range(w3n):
                        a, b, base, step = run3[w3, 0], run3[w3, 1], run3[w3, 2], run3[w3, 3]
                        for i3 in range(a):
                            s3 = t3[w3, i3]
                            v = xrow[s3] if s3 >= 0 else init
                            acc[i3] = _combine_blend(acc[i3], v, OP)
                        if b > a:
                            run = acc[a:b]
                            xv = xrow[base + a * step :]
                            if step == 1:
                                for k in range(b - a):
                                    run[k] = _combine_blend(run[k], xv[k], OP)
                            elif step == 2:
                                for k in range(b - a):
                                    run[k] = _combine_blend(run[k], xv[2 * k], OP)
                            else:
                                for k in range(b - a):
                                    run[k] = _combine_blend(run[k], xv[step * k], OP)
                        for i3 in range(b, o3):
                            s3 = t3[w3, i3]
                            v = xrow[s3] if s3 >= 0 else init
                            acc[i3] = _combine_blend(acc[i3], v, OP)
        i2 += 1


def select_windows4(x, xshape, sel, oshape, t0, t1, t2, t3, dummy):
    """Output-parallel over windows: each iteration owns a block of whole rows
    sel[i0, i1, i2, :]. For each window, the operand elements in row-major window
    order (padding is never a candidate): the first one is the pick, and a later
    candidate replaces it when select(pick, candidate) is false. sel gets the pick's
    flat operand index, or -1 for a window with no operand element. ``dummy`` is any
    value of x's type. Tables as in reduce_window4. (The select step is written out
    inline: a helper taking the row arrays would update their reference counts on
    every call.)"""
    n1, n2, n3 = xshape[1], xshape[2], xshape[3]
    o1, o2, o3 = oshape[1], oshape[2], oshape[3]
    w0n, w1n, w2n, w3n = t0.shape[0], t1.shape[0], t2.shape[0], t3.shape[0]
    n_rows = sel.shape[0]
    per = _rows_per_task(n_rows, o3)
    for task in prange((n_rows + per - 1) // per):
        pick = np.empty(o3, x.dtype)
        i0, i1, i2 = _row_index(task * per, o1, o2)
        for r in range(task * per, min(n_rows, (task + 1) * per)):
            i0, i1, i2 = _carry_row(i0, i1, i2, o1, o2)
            best = sel[r]
            for i3 in range(o3):
                best[i3] = -1
                pick[i3] = dummy
            for w0 in range(w0n):
                s0 = t0[w0, i0]
                if s0 < 0:
                    continue
                for w1 in range(w1n):
                    s1 = t1[w1, i1]
                    if s1 < 0:
                        continue
                    for w2 in range(w2n):
                        s2 = t2[w2, i2]
                        if s2 < 0:
                            continue
                        xr = (s0 * n1 + s1) * n2 + s2
                        xrow = x[xr]
                        xb = xr * n3
                        for w3 in range(w3n):
                            col = t3[w3]
                            for i3 in range(o3):
                                s3 = col[i3]
                                if s3 >= 0:  # (blends, not branches: random data)
                                    v = xrow[s3]
                                    b = best[i3]
                                    keep = (b >= 0) & select_keeps(pick[i3], v, SEL)
                                    pick[i3] = pick[i3] if keep else v
                                    best[i3] = b if keep else xb + s3
            i2 += 1


def scatter_selected4(source, sel, sshape, out, pshape, c0, c1, c2, init, rows_per_block):
    """Owner-computes: each iteration owns ``rows_per_block`` consecutive rows
    out[p0, p1, q0:q1, :] of one (p0, p1) plane of the flat result ``out``. They start
    at the init value; then every window s that can reach them (c_d[p] = [first,
    last + 1) window index along d covering index p) is visited in ascending
    (row-major) order, and if s selected a position in the block, source[s] is combined
    into it. Each position thus combines its source values in ascending window order,
    as the spec's reduce over them, whatever the block size."""
    so1, so2, so3 = sshape[1], sshape[2], sshape[3]
    p1n, p2n, p3n = pshape[1], pshape[2], pshape[3]
    nblk = (p2n + rows_per_block - 1) // rows_per_block
    for task in prange(pshape[0] * p1n * nblk):
        plane = task // nblk
        q0 = (task - plane * nblk) * rows_per_block
        q1 = min(p2n, q0 + rows_per_block)
        p0 = plane // p1n
        p1 = plane - p0 * p1n
        lo = (plane * p2n + q0) * p3n
        hi = (plane * p2n + q1) * p3n
        block = out[lo:hi]
        for i in range(block.shape[0]):
            block[i] = init
        s2lo = so2
        s2hi = 0
        for q in range(q0, q1):
            if c2[q, 1] > c2[q, 0]:
                s2lo = min(s2lo, c2[q, 0])
                s2hi = max(s2hi, c2[q, 1])
        for s0 in range(c0[p0, 0], c0[p0, 1]):
            for s1 in range(c1[p1, 0], c1[p1, 1]):
                for s2 in range(s2lo, s2hi):
                    sr = (s0 * so1 + s1) * so2 + s2
                    srow = sel[sr]
                    vrow = source[sr]
                    for s3 in range(so3):
                        f = srow[s3]
                        if f >= lo and f < hi:
                            out[f] = combine(out[f], vrow[s3], OP)


# -- non-overlapping windows that tile the last two dims (pooling's 2x2 / 2) -------------
# The op layer sends windows here when, after merging, only the last two dims are
# windowed, each with stride == window size and no padding or dilation: every operand
# element then lies in at most one window, and window (r, i2, i3) covers
# x[r, i2*k2 : (i2+1)*k2, i3*k3 : (i3+1)*k3]. The loops run across a whole row of
# windows at a time (the i3 loops), with no index tables, so they vectorise. The
# helpers take the op / select codes as arguments: ``OP`` and ``SEL`` are bound per
# variant in the kernels' globals only (a helper's own globals keep the placeholders).


@scalar
def _fold_row(acc, xrow, k3, op):
    """Each window i folds its elements in operand row ``xrow``, xrow[i * k3 + w3], into
    acc[i], left to right. For k3 == 2 both are read in one loop (an interleaved load:
    the loop vectorises)."""
    if k3 == 2:
        for i in range(acc.shape[0]):
            a = _combine_blend(acc[i], xrow[2 * i], op)
            acc[i] = _combine_blend(a, xrow[2 * i + 1], op)
    else:
        for w3 in range(k3):
            for i in range(acc.shape[0]):
                acc[i] = _combine_blend(acc[i], xrow[i * k3 + w3], op)


@scalar
def _select_row(best, arg, xrow, k3, w0, sel):
    """The running select of each window i over its elements in operand row ``xrow``,
    xrow[i * k3 + w3] (window element w0 + w3), left to right: a candidate replaces the
    pick (best[i], with its element index arg[i]) where select(pick, candidate) is
    false. Blends, so the loop vectorises; for k3 == 2 both elements are read in one
    loop (an interleaved load)."""
    if k3 == 2:
        for i in range(best.shape[0]):
            v0 = xrow[2 * i]
            v1 = xrow[2 * i + 1]
            b = best[i]
            a = arg[i]
            keep = select_keeps(b, v0, sel)
            b = b if keep else v0
            a = a if keep else w0
            keep = select_keeps(b, v1, sel)
            best[i] = b if keep else v1
            arg[i] = a if keep else w0 + 1
    else:
        for w3 in range(k3):
            for i in range(best.shape[0]):
                v = xrow[i * k3 + w3]
                keep = select_keeps(best[i], v, sel)
                best[i] = best[i] if keep else v
                arg[i] = arg[i] if keep else w0 + w3


@scalar
def _scatter_row(orow, arg, src, k3, w0, init, op):
    """orow[i * k3 + w3] = combine(init, src[i]) where window i picked its element
    w0 + w3, else init (a whole operand row, written in order)."""
    if k3 == 2:
        for i in range(src.shape[0]):
            v = combine(init, src[i], op)
            a = arg[i]
            orow[2 * i] = v if a == w0 else init
            orow[2 * i + 1] = v if a == w0 + 1 else init
    else:
        for i in range(src.shape[0]):
            v = combine(init, src[i], op)
            a = arg[i]
            for w3 in range(k3):
                orow[i * k3 + w3] = v if a == w0 + w3 else init


def reduce_window_tiles(x, out, k2, k3, init):
    """Output-parallel: iteration t owns output row out[r, i2, :] (t = r * o2 + i2), the
    left fold from ``init`` of each window's elements in row-major window order (w2,
    then w3): the naive reference's order, so results are bit-identical to it."""
    o2, o3 = out.shape[1], out.shape[2]
    for t in prange(out.shape[0] * o2):
        r = t // o2
        i2 = t - r * o2
        acc = out[r, i2]
        for i3 in range(o3):
            acc[i3] = init
        for w2 in range(k2):
            _fold_row(acc, x[r, i2 * k2 + w2], k3, OP)


def reduce_window_tiles22(x, out, init):
    """reduce_window_tiles for 2x2 windows and maximum or minimum (``OP``), a row of
    windows in SIMD vectors (xops.kernels.windows22). Output-parallel as
    reduce_window_tiles; the same results (the order of a maximum or minimum changes no
    value). C-contiguous x and out."""
    n2, n3 = x.shape[1], x.shape[2]
    o2, o3 = out.shape[1], out.shape[2]
    xf = x.reshape(x.size)
    of = out.reshape(out.size)
    for t in prange(out.shape[0] * o2):
        r = t // o2
        top = (r * n2 + 2 * (t - r * o2)) * n3
        reduce22(xf, top, top + n3, of, t * o3, o3, init, OP)


_task = None  # each variant's compiled *_task function (_TaskVariants)
TILES_22 = False  # select_scatter_tiles' variant for 2x2 windows (_TaskVariants)


def select_scatter_tiles(x, source, out, k2, k3, init):
    """Output-parallel: iteration t owns a block of consecutive window rows (r, i2) and
    the operand rows they cover, out[r, i2*k2 : (i2+1)*k2, :] (plus, for a plane's last
    window row, the rows below it that no window covers): ``_task`` (below)."""
    o2, o3 = source.shape[1], source.shape[2]
    n_rows = source.shape[0] * o2
    per = _rows_per_task(n_rows, o3 * k2 * k3)  # from the shapes alone
    for task in prange((n_rows + per - 1) // per):
        _task(x, source, out, k2, k3, init, task * per, min(n_rows, (task + 1) * per))


def select_scatter_tiles_task(x, source, out, k2, k3, init, lo, hi):
    """Window rows lo <= t < hi of select_scatter_tiles. Each window's pick is its first
    element, replaced by a later one (row-major window order) where select(pick,
    candidate) is false; the picked position gets combine(init, source) (the only
    source value aimed at it), every other position init.

    A function of its own, compiled per variant and called (not inlined into the prange
    body): inside Numba's parallel loop body the scratch rows below read as shared
    arrays and the 2x2 loops stop vectorising (max pooling's gradient on
    (16,32,32,32) f32: 1.8 ms instead of 0.27 ms, one thread)."""
    n2, n3 = x.shape[1], x.shape[2]
    o2, o3 = source.shape[1], source.shape[2]
    if TILES_22:  # (a compile-time constant: one branch is compiled)
        xf, sf, of = x.reshape(x.size), source.reshape(source.size), out.reshape(out.size)
    else:  # the running select's scratch: each window's pick and its element index
        best = np.empty(o3, x.dtype)
        arg = np.empty(o3, np.int32)
    for t in range(lo, hi):
        r = t // o2
        i2 = t - r * o2
        if TILES_22:  # the variant for k2 == k3 == 2 (a compile-time constant)
            top = (r * n2 + 2 * i2) * n3
            select_scatter22(xf, top, top + n3, sf, t * o3, of, o3, init, SEL, OP)
        else:
            src = source[r, i2]
            first = x[r, i2 * k2]
            for i3 in range(o3):
                best[i3] = first[i3 * k3]
                arg[i3] = 0
            # (window element 0 is then visited again: select(pick, pick) keeping or
            # replacing the pick by itself leaves it, and its index 0, as they are)
            for w2 in range(k2):
                _select_row(best, arg, x[r, i2 * k2 + w2], k3, w2 * k3, SEL)
            for w2 in range(k2):
                _scatter_row(out[r, i2 * k2 + w2], arg, src, k3, w2 * k3, init, OP)
        if n3 > o3 * k3:  # columns no window covers
            for w2 in range(k2):
                orow = out[r, i2 * k2 + w2]
                for c in range(o3 * k3, n3):
                    orow[c] = init
        if i2 == o2 - 1:  # rows no window covers
            for q in range(o2 * k2, n2):
                orow = out[r, q]
                for c in range(n3):
                    orow[c] = init


class _Tasks:
    """One variant of a kernel whose prange loop calls a compiled task over blocks of
    rows ``[lo, hi)``: ``variant(n, *args)`` runs the kernel (see config.Kernel) for
    ``n >= PARALLEL_THRESHOLD``, else the task itself, once, over every row. The rows
    are independent and each is computed the same whatever block holds it, so the
    results are the same, and a small operand never compiles the kernel's loop (the
    serial select_scatter_tiles loop cost 0.6 s of the main job's first max-pool
    gradient, for a loop that only calls the task)."""

    __slots__ = ("kernel", "task", "rows")

    def __init__(self, kernel, task, rows):
        self.kernel, self.task, self.rows = kernel, task, rows

    def __call__(self, n, *args):
        if n < _config.PARALLEL_THRESHOLD:
            return self.task(*args, 0, self.rows(*args))
        return self.kernel(n, *args)


class _TaskVariants(dict):
    """{code: _Tasks} (op codes) or {(select code, op code[, 2x2]): _Tasks}, each built
    on first use: kernel_fn whose ``_task`` is the variant's own compiled copy of task_fn
    (SEL and OP bound as in per_op, and TILES_22 to the key's third entry, False if
    none; each under its own name, hence its own cache file). ``rows(*args)``: the
    number of rows the task's ``[lo, hi)`` ranges over, from the kernel's arguments."""

    def __init__(self, kernel_fn, task_fn, rows):
        super().__init__()
        self._fns = kernel_fn, task_fn, rows

    def __missing__(self, key):
        sel, op, *tiles_22 = key if isinstance(key, tuple) else (None, key)
        consts = {"OP": op, "TILES_22": bool(tiles_22 and tiles_22[0])}
        tag = {v: k for k, v in OP_CODES.items()}[op]
        if sel is not None:
            consts["SEL"] = sel
            tag += "_" + {v: k for k, v in SELECT_CODES.items()}[sel].lower()
        if consts["TILES_22"]:
            tag += "_22"
        kernel_fn, task_fn, rows = self._fns
        task = _dispatcher(renamed(task_fn, f"{task_fn.__name__}_{tag}", consts), False)
        consts["_task"] = task
        made = kernel(renamed(kernel_fn, f"{kernel_fn.__name__}_{tag}", consts))
        self[key] = _Tasks(made, task, rows)
        return self[key]


REDUCE_WINDOW4 = _TaskVariants(
    reduce_window4, reduce_window4_task, lambda x, xshape, out, *rest: out.shape[0]
)
REDUCE_WINDOW_TILES = per_op(reduce_window_tiles)
REDUCE_WINDOW_TILES22 = per_op(reduce_window_tiles22, codes={"maximum": MAX, "minimum": MIN})


class _ByTileShape(dict):
    """{(select code, op code): kernel}: each call runs the variant compiled for 2x2
    windows (max pooling's gradient) when k2 == k3 == 2, else the general one. The
    general loops pruned from the 2x2 variant cost a quarter of its compile time (2.4
    vs 3.3 s CPU for (ge, add), fresh process, empty cache); the main job compiles only
    the 2x2 variant."""

    def __init__(self, variants):
        super().__init__()
        self._variants = variants

    def __missing__(self, key):
        variants = self._variants

        def run(n, x, source, out, k2, k3, init):
            return variants[(*key, k2 == 2 and k3 == 2)](n, x, source, out, k2, k3, init)

        self[key] = run
        return run


# one variant per (select code, scatter op code, 2x2 or not): compile-time constants
SELECT_SCATTER_TILES = _ByTileShape(
    _TaskVariants(
        select_scatter_tiles,
        select_scatter_tiles_task,
        lambda x, source, *rest: source.shape[0] * source.shape[1],
    )
)
SELECT_WINDOWS4 = per_op(select_windows4, "SEL", SELECT_CODES)
SCATTER_SELECTED4 = per_op(scatter_selected4)
