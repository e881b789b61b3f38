"""CUDA kernels of ``reduce_window`` and ``select_and_scatter`` (one input; recognised
bodies).

Checks: the CPU ops' own constraint checks (:func:`xops.ops.windows.reduce_window_checks`,
:func:`xops.ops.windows.select_and_scatter_checks`) run first. They read only the
operands' types and shapes and the attributes, keep the parsed attributes for the
gradient rules, and give the result shape. Nothing O(n) runs on the host: the geometry
travels to the device as one small int64 array (a row of ``rank`` entries per attribute),
and the init value as one element.

Geometry: neighbouring dimensions the window does not touch (window 1, stride 1, no
padding, no dilation) are merged first, so a pooling layer's (N, C, H, W) runs as rank 3.
At most ``MAX_RANK`` dimensions may remain (a SpecError otherwise).

* ``reduce_window``: output-parallel, one thread per result element. The thread folds
  its window's elements from the init value in row-major window order; an element on
  padding or on a base-dilation hole contributes the init value. That is the CPU
  kernels' order (and the spec's), so every result is bit-identical to the CPU's:
  integers and i1 (wrapping arithmetic), float maximum/minimum (NaN and signed zeros as
  the CPU) and float add/multiply too (the same additions in the same order, each
  rounded to the element type).
* ``select_and_scatter``: owner-computes, one thread per result (operand) element. The
  thread visits, in ascending (row-major) window order, the windows whose span holds its
  element; for each it redoes that window's selection (the first operand element in
  row-major window order is the pick, a later one replaces it where ``select(pick,
  candidate)`` is false; padding is never a candidate), and if the pick is its own
  element it combines that window's source value into its result, which starts at the
  init value. No two threads write one element and the order is fixed: no atomics, the
  same result as the CPU's, bit for bit.

Bodies (recognised as :func:`xops.ops._bodies.binary_op_name` and
:func:`xops.ops._bodies.comparison_direction` read them): reduce / scatter add, multiply,
maximum, minimum (and, or for integers and i1; i1 add and maximum are or, multiply and
minimum are and, as on the CPU), select ``compare(a, b, DIR)`` with DIR one of GE, GT, LE,
LT, EQ, NE. Element types: i1, si8-64, ui8-64, f32, f64, and bf16 / f16 / f8 (and f6, f4:
session 22) as the CPU computes them: decoded to float32 (exact; the init value too), the
float32 kernel, each result rounded once (:mod:`.narrow`). The CPU's kernels fold narrow
types in float32 in the same order and round once, so these results are bit-identical too.
c64 / c128 (session 18): reduce_window with add and multiply bodies, complex arithmetic in
the same order (compared with the CPU within rounding: see tests/test_cuda_complex.py);
maximum and minimum (session 19) in NumPy's complex order, as the CPU's bodies, bit for bit;
select_and_scatter (session 22), selecting in NumPy's complex order (compare's, as the CPU's
select bodies), scattering with those bodies.
reduce_window with any other body, several inputs or another element type (session 22)
runs the CPU's generic fold in xops ops (:func:`_reduce_window_generic`): bit for bit as
the CPU where the body's ops are. select_and_scatter with any other select or scatter
body, or an element type the kernel does not take, runs the CPU's generic selection in
xops ops and the CPU's rounds of scatter body calls (:func:`_select_and_scatter_generic`,
:mod:`.scatter_rounds`): bit for bit as the CPU where the bodies' ops are.
"""

import math

import numpy as np
from numba import cuda, types

from ...errors import SpecError
from ...ops._bodies import binary_op_name
from ...ops._core import bound_arguments
from ...autodiff.helpers import _on
from ...dtypes import as_dtype
from ...ops._window_geometry import _Geometry
from ...ops.reduction import _body_call, _body_types, _promoted
from ...ops.windows import _check_select, reduce_window_checks, select_and_scatter_checks
from ...ops.windows import window_fold
from ...registry import get as _get_op, op as _op
from ...tensor import tensor as xo_tensor
from ._storage import device_empty, device_table, flat, from_holder, jit, launch_1d, storage_dtype
from .elementwise import _COMPLEX_CMP, _OK, _and, _dev, _eq, _ge, _gt, _le, _lt, _ne, _or
from .narrow import encode, is_small_float, to_f32
from .reduction import _BODIES
from .scatter_rounds import fold_rounds

__all__ = ["KERNELS", "MAX_RANK", "reduce_window_kernel", "select_and_scatter_kernel"]

MAX_RANK = 8  # dimensions left after merging (the size of the threads' local arrays)

# body name -> element kind -> device function of (accumulator, value): reduce's bodies,
# and / or too
_COMBINE = {
    **_BODIES,
    "and": {"bool": _and, "si": _and, "ui": _and},
    "or": {"bool": _or, "si": _or, "ui": _or},
}
# select direction -> device function select(pick, candidate): True keeps the pick
_KEEPS = {"GE": _ge, "GT": _gt, "LE": _le, "LT": _lt, "EQ": _eq, "NE": _ne}

_cache = {}


# -- kernels -----------------------------------------------------------------------------
# g: the merged geometry, int64[k * r]: row j (entries j*r .. j*r + r - 1) is one
# attribute per dimension, in the order the kernel names them below.


def _next_element(w, g, r):
    """Step ``w``, a window element (row-major, ``r`` dims), to the next one: the window
    dimensions are row 2 of ``g`` in both kernels."""
    d = r - 1
    while d >= 0:
        w[d] += 1
        if w[d] < g[2 * r + d]:
            return
        w[d] = 0
        d -= 1


def _device(fn):
    k = _cache.get(fn)
    if k is None:
        k = _cache[fn] = cuda.jit(device=True)(fn)
    return k


def reduce_window_kernel(combine):
    """The reduce_window kernel folding with device function ``combine``. g rows:
    operand shape, result shape, window dimensions, window strides, base dilations,
    window dilations, low padding; ``nwin`` = window elements, ``init`` one element."""
    k = _cache.get(("reduce_window", combine))
    if k is not None:
        return k
    fn = _device(combine)
    step = _device(_next_element)

    def reduce_window(x, init, g, r, nwin, out):
        i = cuda.grid(1)
        if i >= out.shape[0]:
            return
        origin = cuda.local.array(MAX_RANK, types.int64)  # window start, padded coordinates
        w = cuda.local.array(MAX_RANK, types.int64)  # window element, row-major odometer
        rest = i
        for d in range(r - 1, -1, -1):
            o = g[r + d]
            origin[d] = (rest % o) * g[3 * r + d] - g[6 * r + d]
            rest //= o
            w[d] = 0
        iv = init[0]
        acc = iv
        for _ in range(nwin):
            pos = 0
            inside = True
            for d in range(r):
                n = g[d]
                b = g[4 * r + d]
                c = origin[d] + w[d] * g[5 * r + d]
                q = c
                if b != 1:  # (no 64-bit division for undilated inputs)
                    q = c // b
                if c < 0 or q * b != c or q >= n:  # padding, or a base-dilation hole
                    inside = False
                pos = pos * n + q
            if inside:
                acc = fn(acc, x[pos])
            else:
                acc = fn(acc, iv)
            step(w, g, r)
        out[i] = acc

    k = _cache[("reduce_window", combine)] = jit(reduce_window)
    return k


def select_and_scatter_kernel(keeps, combine):
    """The select_and_scatter kernel selecting with device function ``keeps`` (select's
    compare) and scattering with ``combine``. g rows: operand shape, source shape
    (windows), window dimensions, window strides, low padding; ``nwin`` = window
    elements, ``init`` one element."""
    key = ("select_and_scatter", keeps, combine)
    k = _cache.get(key)
    if k is not None:
        return k
    sel = _device(keeps)
    fn = _device(combine)
    step = _device(_next_element)

    def select_and_scatter(x, src, init, g, r, nwin, out):
        p = cuda.grid(1)
        if p >= out.shape[0]:
            return
        first = cuda.local.array(MAX_RANK, types.int64)  # windows holding p, per dim
        last = cuda.local.array(MAX_RANK, types.int64)
        o = cuda.local.array(MAX_RANK, types.int64)  # the window, row-major odometer
        w = cuda.local.array(MAX_RANK, types.int64)  # its element, row-major odometer
        acc = init[0]
        some = True
        rest = p
        for d in range(r - 1, -1, -1):
            n = g[d]
            q = rest % n
            rest //= n
            s = g[3 * r + d]
            at = q + g[4 * r + d]  # padded coordinate; windows start at o * s
            lo = -((g[2 * r + d] - 1 - at) // s)  # ceil((at - window + 1) / s)
            first[d] = lo if lo > 0 else 0
            hi = at // s
            last[d] = hi if hi < g[r + d] - 1 else g[r + d] - 1
            o[d] = first[d]
            if last[d] < first[d]:
                some = False
        while some:
            for d in range(r):
                w[d] = 0
            pick = x[0]
            picked = -1
            for _ in range(nwin):
                pos = 0
                inside = True
                for d in range(r):
                    n = g[d]
                    c = o[d] * g[3 * r + d] + w[d] - g[4 * r + d]
                    if c < 0 or c >= n:  # padding: never a candidate
                        inside = False
                    pos = pos * n + c
                if inside:
                    v = x[pos]
                    if picked < 0 or not sel(pick, v):
                        pick = v
                        picked = pos
                step(w, g, r)
            if picked == p:
                s_pos = 0
                for d in range(r):
                    s_pos = s_pos * g[r + d] + o[d]
                acc = fn(acc, src[s_pos])
            d = r - 1
            while d >= 0:  # the next window holding p
                o[d] += 1
                if o[d] <= last[d]:
                    break
                o[d] = first[d]
                d -= 1
            some = d >= 0
        out[p] = acc

    k = _cache[key] = jit(select_and_scatter)
    return k


# -- host side ---------------------------------------------------------------------------


def _merge(rows, untouched):
    """The per-dimension attribute ``rows`` (lists of one int per dim; rows[0] and
    rows[1] the operand and result shapes) with each run of neighbouring ``untouched``
    dimensions merged into one (their sizes multiplied; the other rows keep the values
    an untouched dim has)."""
    merged = []
    prev = False
    for d, plain in enumerate(untouched):
        col = [row[d] for row in rows]
        if plain and prev:
            merged[-1][0] *= col[0]
            merged[-1][1] *= col[1]
        else:
            merged.append(col)
        prev = plain
    return [list(row) for row in zip(*merged)] if merged else [[] for _ in rows]


def _geometry(op, rows):
    """The merged rows as one int64 device array (one element for rank 0) and the rank."""
    r = len(rows[0])
    if r > MAX_RANK:
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for windows over more than {MAX_RANK} dimensions "
            f"the window touches (got {r} after merging untouched neighbours)",
        )
    values = tuple(int(v) for row in rows for v in row) or (0,)
    return device_table(("window",) + values, lambda: values), r


def _reduce_window_rows(shape, out_shape, window):
    """reduce_window's merged rows (operand and result shapes, window dimensions,
    strides, base and window dilations, low padding) with its untouched dims merged."""
    wd, ws, bd, wdl, pad = window
    lo = [p[0] for p in pad]
    untouched = [
        w == s == b == e == 1 and p == (0, 0) for w, s, b, e, p in zip(wd, ws, bd, wdl, pad)
    ]
    return _merge([list(shape), list(out_shape), wd, ws, bd, wdl, lo], untouched)


def _select_and_scatter_rows(shape, src_shape, wd, ws, pad):
    """select_and_scatter's merged rows (operand and source shapes, window dimensions,
    strides, low padding) with its untouched dims merged."""
    lo = [p[0] for p in pad]
    untouched = [w == s == 1 and p == (0, 0) for w, s, p in zip(wd, ws, pad)]
    return _merge([list(shape), list(src_shape), wd, ws, lo], untouched)


_layouts = {}  # (op, shapes, window attributes) -> (geometry device array, rank)
_LAYOUTS_KEPT = 1024


def _layout(key, rows):
    """The (geometry, rank) of a window op's checked call, worked out once per signature
    (``rows()``: its merged rows; a training step repeats a few signatures)."""
    hit = _layouts.get(key)
    if hit is None:
        if len(_layouts) >= _LAYOUTS_KEPT:
            _layouts.clear()
        hit = _layouts[key] = _geometry(key[0], rows())
    return hit


def _operand(t):
    """A device array of ``t`` to read from (one dummy element when ``t`` is empty: the
    kernels then never read it)."""
    if t.size == 0:
        return cuda.to_device(np.zeros(1, storage_dtype(t._dtype.np)))
    return flat(t._value)


def reduce_window(*args, **kwargs):
    """The kernel; it takes the arguments as the CPU op does (same signature)."""
    op = "reduce_window"
    a = bound_arguments(_get_op(op).kernels["cpu"], args, kwargs)
    xs, inits, window, out_shape = reduce_window_checks(*a.values())
    (x, *more), (init, *_) = xs, inits
    dt = x._dtype
    kind = "float" if is_small_float(dt) else dt.kind
    fn = None if more else _COMBINE.get(binary_op_name(a["body"]), {}).get(kind)
    if fn is None or not (dt.np in _OK or dt.kind == "complex" or is_small_float(dt)):
        outs = _reduce_window_generic(xs, inits, window, out_shape, a["body"])
        return outs[0] if len(outs) == 1 else tuple(outs)
    if is_small_float(dt):  # in float32, rounded once (as the CPU)
        a["inputs"], a["init_values"] = [to_f32(x)], [to_f32(init)]
        return encode(reduce_window(**a), dt)
    wd, ws, bd, wdl, pad = window
    key = (op, x.shape, *map(tuple, window[:4]), *map(tuple, pad))
    g, r = _layout(key, lambda: _reduce_window_rows(x.shape, out_shape, window))
    out = device_empty(out_shape, dt.np)
    n = math.prod(out_shape)
    if n:
        launch_1d(
            reduce_window_kernel(fn), n, _operand(x), _dev(op, init), g, r, math.prod(wd), flat(out)
        )
    return from_holder(out, dt)


def _reduce_window_generic(xs, inits, window, out_shape, body):
    """Any body, several inputs: the CPU's generic fold on device tensors
    (xops.ops.windows.window_fold, the fold the reduce_window rule re-runs on the tape,
    in xops ops: one ``pad`` per input, a strided slice per window position, one body
    call per position in row-major order from the init values), with the body's results
    checked as the CPU's forward path checks them. Returns the results as a list."""
    op = "reduce_window"
    inits = [_on(i, xs[0]) for i in inits]  # (weak scalars: 0-d CPU tensors here)
    dts = _body_types(op, "C13", body, inits, xs)
    xs, inits = ([from_holder(t._value, t._dtype) for t in ts] for ts in (xs, inits))
    if math.prod(out_shape) == 0:
        return [_op.broadcast_in_dim(i, [], out_shape) for i in _promoted(inits, dts)]
    geo = _Geometry(xs[0].shape, *window)
    return window_fold(xs, inits, geo, body, dts, checked=True)


def select_and_scatter(*args, **kwargs):
    """The kernel; it takes the arguments as the CPU op does (same signature)."""
    op = "select_and_scatter"
    a = bound_arguments(_get_op(op).kernels["cpu"], args, kwargs)
    x, src, init, (wd, ws, pad), direction = select_and_scatter_checks(*a.values())
    select, scatter = a["select"], a["scatter"]
    dt = x._dtype
    kind = "float" if is_small_float(dt) else dt.kind
    fn = _COMBINE.get(binary_op_name(scatter), {}).get(kind)
    if fn is None:  # any other scatter body: the generic selection and rounds
        return _select_and_scatter_generic(x, src, init, wd, ws, pad, select, scatter)
    if is_small_float(dt):  # in float32 (selection exact), rounded once (as the CPU)
        a["operand"], a["source"], a["init_value"] = to_f32(x), to_f32(src), to_f32(init)
        return encode(select_and_scatter(**a), dt)
    if direction not in _KEEPS or not (dt.kind == "complex" or dt.np in _OK):
        return _select_and_scatter_generic(x, src, init, wd, ws, pad, select, scatter)
    key = (op, x.shape, src.shape, tuple(wd), tuple(ws), *map(tuple, pad))
    g, r = _layout(key, lambda: _select_and_scatter_rows(x.shape, src.shape, wd, ws, pad))
    out = device_empty(x.shape, dt.np)
    if x.size:
        keeps = (_COMPLEX_CMP if dt.kind == "complex" else _KEEPS)[direction]
        launch_1d(
            select_and_scatter_kernel(keeps, fn),
            x.size,
            flat(x._value),
            _operand(src),
            _dev(op, init),
            g,
            r,
            math.prod(wd),
            flat(out),
        )
    return from_holder(out, dt)


def _select_and_scatter_generic(x, src, init, wd, ws, pad, select, scatter):
    """Any select or scatter body (or an element type the kernel does not take): the
    CPU's generic selection (xops.ops.windows._select_generic) in xops ops on device
    tensors, then its scatter of the source values to the picks. A running pick over all
    windows at once, one select call per window position in row-major order: a
    position's values are a strided slice of the padded operand, its flat operand
    indices one of a padded index tensor (-1 on padding, never a candidate); a valid
    candidate replaces the pick where there is none yet or ``select(pick, candidate)`` is
    false. The source values then combine into a result of init values at their
    windows' picks, in ascending window order (windows of padding alone pick -1:
    skipped), as the CPU's xops.ops.windows._scatter_generic: its rounds, one ``scatter``
    body call per round (:func:`.scatter_rounds.fold_rounds`; the body checked and its
    errors raised as there)."""
    op = "select_and_scatter"
    init = _on(init, x)  # (a weak scalar: a 0-d CPU tensor here)
    _check_select(op, select, init)
    (dt,) = _body_types(op, "C10", scatter, [init], [x], what="scatter")
    x = from_holder(x._value, x._dtype)
    src, init = (from_holder(t._value, t._dtype) for t in _promoted([src, init], [dt, dt]))
    nwin, n = list(src.shape), x.size
    if n == 0 or src.size == 0:
        return _op.broadcast_in_dim(init, [], list(x.shape))
    geo = _Geometry(x.shape, wd, ws, [1] * x.ndim, [1] * x.ndim, pad)  # (geo.out: nwin)
    fill = _op.reshape(_op.slice(_op.reshape(x, [n]), [0], [1], [1]), [])
    px = geo.padded(x, fill)
    where = xo_tensor(np.arange(n, dtype=np.int64).reshape(x.shape), device="cuda")
    none = xo_tensor(np.int64(-1), device="cuda")
    pidx = geo.padded(where, none)
    pick = _op.broadcast_in_dim(fill, [], nwin)
    best = _op.broadcast_in_dim(none, [], nwin)
    i1 = as_dtype("i1")
    for w in geo.positions():
        vals, at = geo.slot(px, w), geo.slot(pidx, w)
        (keep,) = _body_call(op, "C9", "select", select, [pick, vals], nwin, [i1])
        first = _op.compare(best, 0, "LT")
        replace = _op.and_(_op.compare(at, 0, "GE"), _op.or_(first, _op.not_(keep)))
        pick = _op.select(replace, vals, pick)
        best = _op.select(replace, at, best)
    (out,) = fold_rounds(
        [_op.broadcast_in_dim(init, [], [n])],
        _op.reshape(best, [src.size]),
        None,
        [_op.reshape(src, [src.size])],
        scatter,
        [dt],
        (op, "C10", "scatter"),
    )
    return _op.reshape(out, list(x.shape))


KERNELS = {"reduce_window": reduce_window, "select_and_scatter": select_and_scatter}
