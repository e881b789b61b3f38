"""stablehlo.scatter (gather, its transpose, and the batching dims both take:
:mod:`xops.ops.indexing`).

Semantic decisions (seed 004 = the StableHLO spec):

* **scatter skips per element**: 004 "scatter" updates ``results...[result_index]``
  only "if result_index is in bounds for shape(results...)", one update element at a
  time, so a window that is partly out of bounds still writes its in-bounds part (XLA's
  scatter expander and JAX's FILL_OR_DROP drop the whole window instead). Indices are
  never clamped; huge, negative and int64/uint64-extreme values are simply out of
  bounds.
* **scatter schedule** (004: "an implementation-defined permutation of
  index_space(updates[0])"): windows in row-major order of their scatter index
  (update_scatter_dims), and within a window row-major over update_window_dims. Updates
  that hit the same element are folded in that order, ``body(current, update)``, so
  non-commutative bodies (``lambda a, b: b``, subtract) are deterministic, and every
  result is bit-identical for any thread count. ``indices_are_sorted`` and
  ``unique_indices`` are promises that xops never relies on.

**Fast paths.** scatter with one input and a body recognised by :mod:`xops.ops._bodies`
as ``add``, ``multiply``, ``maximum`` or ``minimum``, or the overwrite body ``lambda a,
b: b`` (recognised there, never by calling it), runs an owner-computes Numba kernel
that also does the copy of the input, chunk by chunk; any other body runs vectorised:
updates are grouped by target and folded in schedule order in rounds, one body call per
round on all targets that have a k-th update (per window where windows coincide or are
disjoint, as in row scatters; per element otherwise). Results and index temporaries
come from the buffer pool (:mod:`xops.kernels.pool`).

The gradient rule reaches gather by name (:data:`xops.registry.op`):
:mod:`xops.ops.indexing` imports this module for gather's own rule.
"""

import sys

import numpy as np

from ..autodiff import helpers as _H
from ..autodiff.tape import bump_version, is_grad_enabled, primitive
from ..dtypes import as_dtype, from_compute, wrap_int
from ..kernels import config as _config
from ..kernels import indexing as K
from ..kernels import pool as _pool
from ..registry import op as _op
from ..tensor import Tensor, _wrap
from ._core import SpecError, attr_int, bound_arguments, check, compute, operands, tstr
from . import _device_grads
from ..autodiff.local import local_vjp
from ._bodies import Body, binary_op_name, call, is_overwrite, outputs, result_types
from ._indexing_common import _cached_plan, _check_batching, _check_dims, _check_index_vector
from ._indexing_common import _check_rank, _read_attributes
from ._indexing_common import _int_tensor_check, _variadic, _zero_d, _UINT_BY_SIZE, _i64
from ._indexing_common import _index_matrix, _prod, _ro, _row_indices, _strides

__all__ = ["scatter"]  # (index_add_ is a Tensor method: Tensor.index_add_)

_zeros_like = _H.zeros_like


# ---------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------


@primitive("scatter", quantized_params=("inputs", "updates"), body_params=("update_computation",))
def scatter(
    inputs,
    scatter_indices,
    updates,
    update_window_dims,
    inserted_window_dims,
    scatter_dims_to_operand_dims,
    index_vector_dim,
    indices_are_sorted=False,
    unique_indices=False,
    update_computation=None,
    input_batching_dims=(),
    scatter_indices_batching_dims=(),
):
    """stablehlo.scatter: ``inputs`` with the windows at ``scatter_indices`` combined
    with ``updates`` by ``update_computation``.

    ``inputs``/``updates``: one tensor each, or sequences of N; the result is a Tensor
    for a Tensor and a tuple for a sequence. ``update_computation(current_0, ...,
    current_{N-1}, update_0, ..., update_{N-1})`` returns N values (a tensor for N=1).
    Update elements whose result_index is out of bounds are skipped one by one
    (004 "scatter"); indices are never clamped. Updates aimed at one element are
    applied in the schedule order of the module docstring.

    Constraint labels: 004's C1-C17 (C2 counts the batching dims too; C9 as meant:
    inserted_window_dims unique and sorted); batching constraints from the current spec:
    B1 inserted and input batching dims disjoint (current C9), B2 input_batching_dims
    sorted and unique (C12), B3 in range (C13), B4 scatter_indices_batching_dims unique
    (C14), B5 in range (C15), B6 not index_vector_dim (C16), B7 as many as
    input_batching_dims (C17), B8 same sizes (C18), B9 scatter_dims_to_operand_dims
    disjoint from input_batching_dims (C20).

    >>> x = xo.tensor([1.0, 2.0, 3.0])
    >>> xo.scatter(x, xo.tensor([[0], [0], [5]]), xo.tensor([10.0, 20.0, 30.0]), [], [0], [0],
    ...            1, update_computation=xo.add)   # [31, 2, 3]
    xo.tensor([31.,  2.,  3.], f32[3])
    """
    xs, seq, us, useq, si, p = _scatter_args(*locals().values())  # (the parameters, in order)
    dts = _scatter_body_types(xs, us, p.body)
    res = _scatter_impl(xs, si, us, p, dts)
    return tuple(res) if seq or useq else res[0]


def _scatter_args(inputs, scatter_indices, updates, *attrs):
    """scatter's operands as Tensors and its checked plan (``attrs``: scatter's
    attributes in signature order, update_window_dims to scatter_indices_batching_dims):
    (xs, xs was a sequence, us, us was a sequence, scatter_indices, plan). The op, its
    gradient rule and its reference all parse here."""
    xs, seq = _variadic("scatter", inputs, "inputs")
    us, useq = _variadic("scatter", updates, "updates")
    (si,) = operands("scatter", scatter_indices, names=["scatter_indices"])
    plan = _cached_plan(_PLANS, xs + us + [si], attrs, lambda: _scatter_plan(xs, si, us, *attrs))
    return xs, seq, us, useq, si, plan


_PLANS = {}  # scatter's checked plans (_cached_plan)


class _ScatterPlan:
    __slots__ = ("uwd", "iwd", "sdod", "ivd", "ibd", "sibd", "body", "rows")


def _scatter_plan(xs, si, us, *attributes):
    """Check scatter's constraints (pure function of shapes, types and attributes)."""
    op = "scatter"
    _int_tensor_check(op, "I2", "scatter_indices", si)
    uwd, iwd, sdod, ivd, _, _, body, ibd, sibd = _read_attributes(op, scatter, attributes)
    check(
        len(xs) > 0 and len(xs) == len(us),
        op,
        "C5",
        lambda: (
            f"inputs and updates must be non-empty and of one size, got {len(xs)} "
            f"inputs and {len(us)} updates"
        ),
    )
    x0, u0 = xs[0], us[0]
    check(
        all(x.shape == x0.shape for x in xs),
        op,
        "C1",
        lambda: f"inputs must have one shape, got {', '.join(tstr(x) for x in xs)}",
    )
    check(
        all(u.shape == u0.shape for u in us),
        op,
        "C3",
        lambda: f"updates must have one shape, got {', '.join(tstr(u) for u in us)}",
    )
    check(
        all(x._dtype is u._dtype for x, u in zip(xs, us)),
        op,
        "C6",
        lambda: (
            f"updates must have the element types of inputs, got "
            f"{', '.join(tstr(u) for u in us)} for {', '.join(tstr(x) for x in xs)}"
        ),
    )
    r, ru = x0.ndim, u0.ndim
    sdod_map = ("scatter_dims_to_operand_dims", sdod)
    _check_index_vector(op, ("C14", "C11"), ("scatter_indices", si), ivd, sdod_map)
    _check_dims(op, ("C7", "C8"), "update_window_dims", uwd, ru, "rank(updates[0])")
    _check_dims(op, ("C9", "C10"), "inserted_window_dims", iwd, r, "rank(inputs[0])")
    _check_dims(
        op,
        ("C12", "C13"),
        "scatter_dims_to_operand_dims",
        sdod,
        r,
        "rank(inputs[0])",
        ordered=False,
    )
    maps = ("inserted_window_dims", iwd), ("scatter_dims_to_operand_dims", sdod)
    sides = ("inputs", x0, ibd), ("scatter_indices", si, sibd)
    _check_batching(op, "B2 B3 B1 B4 B5 B6 B7 B8 B9".split(), *sides, ivd, *maps)
    windows = [
        ("update_window_dims", uwd),
        ("inserted_window_dims", iwd),
        ("input_batching_dims", ibd),
    ]
    _check_rank(op, "C2", "inputs[0]", r, windows)
    scatter_sizes = [n for d, n in enumerate(si.shape) if d != ivd]
    wdims = [d for d in range(r) if d not in iwd and d not in ibd]
    usd = [d for d in range(ru) if d not in uwd]
    check(
        len(usd) == len(scatter_sizes)
        and [u0.shape[d] for d in usd] == scatter_sizes
        and all(u0.shape[a] <= x0.shape[b] for a, b in zip(uwd, wdims)),
        op,
        "C4",
        lambda: (
            f"updates {tstr(u0)} must have the scatter dims {scatter_sizes} of "
            f"scatter_indices {tstr(si)} (without index_vector_dim={ivd}) outside "
            f"update_window_dims {uwd}, and window sizes <= the sizes "
            f"{[x0.shape[d] for d in wdims]} of inputs {tstr(x0)} dims {wdims}"
        ),
    )
    check(
        callable(body),
        op,
        "C15",
        lambda: f"update_computation must be a callable body, got {body!r}",
    )
    p = _ScatterPlan()
    p.uwd, p.iwd, p.sdod, p.ivd, p.ibd, p.sibd = uwd, iwd, sdod, ivd, ibd, sibd
    p.body = body
    # a row scatter (x.at[idx].add(rows) along dim 0, its longest): whole rows of dim 0
    p.rows = (
        iwd == [0]
        and sdod == [0]
        and not ibd
        and uwd == list(range(ru - r + 1, ru))
        and [u0.shape[d] for d in uwd] == list(x0.shape[1:])
        and x0.shape[0] == max(x0.shape)
    )
    return p


def _scatter_body_types(xs, us, body, probe=_zero_d):
    """The element types E_i the body computes in: those it returns for 0-d values of the
    inputs' types (``probe(t)``: one for tensor t; a device kernel passes zeros made on
    the host). Each must be promotable from its input's type (C15)."""
    if len(xs) == 1 and xs[0]._dtype.kind in _KERNEL_KINDS and _scatter_op_name(body):
        return [xs[0]._dtype]  # a body that is one binary op computes in its operands' type
    zeros = [probe(x) for x in xs] + [probe(u) for u in us]
    return result_types("scatter", "C15", "update_computation", body, zeros, xs)


_KERNEL_KINDS = ("float", "si", "ui", "bool")  # the element types the scatter kernels take


def _scatter_op_name(body):
    """ "overwrite" for ``lambda a, b: b``, else the scatter kernels' binary op the body
    is (add, multiply, maximum, minimum; None for any other body)."""
    if is_overwrite(body):
        return "overwrite"
    name = binary_op_name(body)
    return name if name in K.OP_CODES else None


class _Geometry:
    """Scatter windows described with flat strides over the (contiguous) result and
    updates: the kernels' arguments. Rank-0 inputs get one dummy dim of size 1. The
    window starts are computed by scatter_starts, unless ``fill`` is False (the fast path
    calls fill_starts() where it needs them)."""

    def __init__(self, shape, si, ushape, p, fill=True):
        r = len(shape)
        idx, batch = _index_matrix(si, p.ivd)
        self.idx = idx
        self.nb = idx.shape[0]
        ustr = _strides(ushape)
        usd = [d for d in range(len(ushape)) if d not in p.uwd]
        self.bshape = _i64([ushape[d] for d in usd])
        self.ustr_b = _i64([ustr[d] for d in usd])
        si_dims = [d for d in range(si.ndim) if d != p.ivd]
        bdim = [-1] * len(si_dims)
        for a, b in zip(p.ibd, p.sibd):
            bdim[si_dims.index(b)] = a
        self.bdim = _i64(bdim)
        wdims = [d for d in range(r) if d not in p.iwd and d not in p.ibd]
        wsize, wstr = [1] * r, [0] * r
        for d, ud in zip(wdims, p.uwd):
            wsize[d], wstr[d] = ushape[ud], ustr[ud]
        self.kdim = _i64(p.sdod)
        dims = list(shape)
        if r == 0:
            dims, wsize, wstr = [1], [1], [0]
        self.dims, self.wsize, self.wstr = _i64(dims), _i64(wsize), _i64(wstr)
        self.rstr = _i64(_strides(dims))
        self.axis = int(np.argmax(self.dims))  # the owner partition axis: the longest
        self.starts = _pool.empty((self.nb, len(dims)), np.int64)
        self.ubase = _pool.empty(self.nb, np.int64)
        self.rbase = _pool.empty(self.nb, np.int64)
        if fill:
            self.fill_starts()

    def fill_starts(self):
        K.scatter_starts(
            self.nb,
            _ro(self.idx),
            self.kdim,
            self.bshape,
            self.bdim,
            self.ustr_b,
            self.dims,
            self.wsize,
            self.rstr,
            self.starts,
            self.ubase,
            self.rbase,
        )

    def is_rows(self):
        """Row scatter: one index component, on the partition axis, windows of one whole
        row there, no batching dims (bucket_rows' case)."""
        a = self.axis
        return (
            self.idx.shape[1] == 1
            and self.kdim[0] == a
            and self.bshape.size == 1
            and self.bdim[0] < 0
            and self.wsize[a] == 1
            and all(self.wsize[d] == self.dims[d] for d in range(self.dims.size) if d != a)
        )

    def runs(self):
        """(runs_r, runs_u, run_len, rstep, ustep): a whole window as runs (the innermost
        window dim, merged outward while both layouts stay contiguous)."""
        box = [d for d in range(len(self.dims)) if self.wsize[d] > 1]
        run_len, rstep, ustep = 1, 1, 1
        if box:
            d = box.pop()
            run_len, rstep, ustep = int(self.wsize[d]), int(self.rstr[d]), int(self.wstr[d])
            while (
                box
                and self.rstr[box[-1]] == run_len * rstep
                and self.wstr[box[-1]] == run_len * ustep
            ):
                run_len *= int(self.wsize[box.pop()])
        runs_r = np.zeros(1, np.int64)
        runs_u = np.zeros(1, np.int64)
        for d in box:
            steps = np.arange(self.wsize[d], dtype=np.int64)
            runs_r = (runs_r[:, None] + steps * self.rstr[d]).reshape(-1)
            runs_u = (runs_u[:, None] + steps * self.wstr[d]).reshape(-1)
        return runs_r, runs_u, run_len, rstep, ustep

    def targets(self):
        """(tgt, src): every update element's flat result offset (-1: out of bounds) and
        flat update offset, in schedule order."""
        n = self.nb * _prod(self.wsize)
        tgt = np.empty(n, np.int64)
        src = np.empty(n, np.int64)
        K.scatter_targets(
            n, self.starts, self.ubase, self.wsize, self.wstr, self.rstr, self.dims, tgt, src
        )
        return tgt, src


class _RowGeometry:
    """A row scatter (plan.rows) for bucket_rows and scatter_rows, straight from the
    shapes: every window is one whole row of dim 0 (the partition axis), one contiguous
    run in the result and in the updates."""

    def __init__(self, shape, si):
        self.idx = _row_indices(si).reshape(-1, 1)
        self.nb = self.idx.shape[0]
        self.dims = _i64(shape)
        self.rstr = _i64(_strides(shape))
        self.wsize = _i64((1,) + tuple(shape[1:]))
        self.ustr_b = self.rstr[:1]
        self.axis = 0

    def is_rows(self):
        return True


def _scatter_impl(xs, si, us, p, dts, out=None):
    """``out``: the result buffer for an update in place (index_add_), else None."""
    if xs[0].size == 0 or us[0].size == 0:
        return [_convert(x, dt) for x, dt in zip(xs, dts)]
    plan = _scatter_fast_plan(xs, p.body, dts)
    if plan is not None:
        if p.rows:
            geo = _RowGeometry(xs[0].shape, si)
        else:
            geo = _Geometry(xs[0].shape, si, us[0].shape, p, fill=False)
        return [_scatter_fast(xs[0], us[0], geo, *plan, out=out)]
    return _scatter_generic(xs, us, _Geometry(xs[0].shape, si, us[0].shape, p), p.body, dts)


def _convert(t, dt):
    if t._dtype is dt:
        return t
    from .conversion import convert

    return convert(t, dt)


_BOOL_CODE = {
    "add": K.MAXIMUM,
    "multiply": K.MINIMUM,
    "maximum": K.MAXIMUM,
    "minimum": K.MINIMUM,
    "overwrite": K.OVERWRITE,
}


def _scatter_fast_plan(xs, body, dts):
    """(kernel dtype, op code) where one input's body runs on a kernel, else None.

    Kernels compute in float32/float64/int64/uint64. Integers wrap back once at the end
    (the same as wrapping every step); i1 add/maximum are OR and multiply/minimum AND
    (max/min on 0/1). Narrow floats take maximum/minimum/overwrite (exact in float32)
    but not add/multiply, which the spec rounds at every step: those, complex types and
    every other body run on the generic path. overwrite moves raw bits (8-byte items as
    uint64, 4-byte items as float32 loads and stores, which LLVM keeps bit-exact, 1-
    and 2-byte items zero-extended into int64)."""
    if len(xs) != 1 or dts[0] is not xs[0]._dtype:
        return None
    name = _scatter_op_name(body)
    if name not in K.OP_CODES:
        return None
    dt = xs[0]._dtype
    if name == "overwrite":
        size = dt.itemsize
        if size == 16:
            return None
        return (
            {8: np.dtype(np.uint64), 4: np.dtype(np.float32)}.get(size, np.dtype(np.int64)),
            K.OVERWRITE,
            "bits",
        )
    if dt.kind == "bool":
        return np.dtype(np.int64), _BOOL_CODE[name], "value"
    if dt.kind == "float":
        if dt.is_narrow and name in ("add", "multiply"):
            return None
        return (
            np.dtype(np.float64) if dt.np == np.float64 else np.dtype(np.float32),
            K.OP_CODES[name],
            "value",
        )
    if dt.kind in ("si", "ui"):
        wide = np.uint64 if dt.kind == "ui" and dt.bits == 64 else np.int64
        return np.dtype(wide), K.OP_CODES[name], "value"
    return None


def _scatter_fast(x, u, geo, kdt, code, mode, out=None):
    """Owner-computes kernel: copy the input, bucket the windows by owner chunk, apply.
    ``out``: a writeable array of kdt holding x's value, updated in place (no copy)."""
    dt = x._dtype
    if mode == "bits":
        ux = np.ascontiguousarray(x._value).view(_UINT_BY_SIZE[dt.itemsize])
        uu = np.ascontiguousarray(u._value).view(_UINT_BY_SIZE[dt.itemsize])
        inp = ux.view(np.float32) if kdt == np.float32 else ux
        upd = uu.view(np.float32) if kdt == np.float32 else uu
    else:
        inp = np.ascontiguousarray(compute(x))
        upd = np.ascontiguousarray(compute(u))
    inp = inp.astype(kdt, copy=False)
    upd = upd.astype(kdt, copy=False)
    copy_input = np.may_share_memory(inp, x._value)
    # the kernel copies the input chunk by chunk, each chunk just before its updates
    # (the result from the buffer pool); an input that had to be converted is already a
    # fresh array, updated in place
    if out is not None:
        inp, copy_input = out, False
    else:
        out = _pool.empty(inp.shape, kdt) if copy_input else inp
    size = max(u.size, x.size)
    extent = int(geo.dims[geo.axis])
    if size >= _config.PARALLEL_THRESHOLD:
        shift = _chunk_shift(extent, out.nbytes, int(geo.wsize[geo.axis]))
    else:  # one chunk: every window, in order
        shift = (extent - 1).bit_length()
    nchunks = ((extent - 1) >> shift) + 1
    # a window overlaps at most this many chunks: the entry list's length bound
    span = ((int(geo.wsize[geo.axis]) + (1 << shift) - 2) >> shift) + 1
    ent = _pool.empty((geo.nb * span, 2), np.int64)
    if geo.is_rows():
        first = K.bucket_rows.serial(
            _ro(geo.idx),
            int(geo.dims[geo.axis]),
            int(geo.rstr[geo.axis]),
            int(geo.ustr_b[0]),
            shift,
            nchunks,
            ent,
        )
    else:
        geo.fill_starts()
        first = K.bucket_windows.serial(
            geo.starts, geo.rbase, geo.ubase, geo.wsize, geo.dims, geo.axis, shift, nchunks, ent
        )
    flat = (_ro(inp.reshape(-1)), out.reshape(-1), _ro(upd.reshape(-1)), first, ent)
    if isinstance(geo, _RowGeometry):
        row, rows = int(geo.rstr[0]), int(geo.dims[0])
        K.scatter_rows(size, *flat, row, rows, shift, code, copy_input)
        return _scatter_result(out.reshape(x.shape), dt, kdt, mode)
    K.scatter_apply(
        size,
        *flat,
        geo.starts,
        geo.ubase,
        geo.wsize,
        geo.wstr,
        geo.rstr,
        geo.dims,
        geo.axis,
        shift,
        code,
        copy_input,
        *geo.runs(),
    )
    return _scatter_result(out.reshape(x.shape), dt, kdt, mode)


def _scatter_result(out, dt, kdt, mode):
    """The kernel's result array (of kdt) as a Tensor of element type ``dt``."""
    if mode == "bits":
        holder = out.view(np.uint32) if kdt == np.float32 else out
        if holder.dtype.itemsize != dt.itemsize:
            holder = holder.astype(_UINT_BY_SIZE[dt.itemsize])
        return _wrap(holder.view(dt.np), dt)
    if dt.kind == "bool":
        return _wrap(out != 0, dt)
    if dt.kind in ("si", "ui"):
        return _wrap(from_compute(wrap_int(out, dt), dt), dt)
    return _wrap(from_compute(out, dt), dt)


_CHUNK_BYTES = 1 << 18  # an owner chunk's slab stays in L2 between its copy and its updates


def _chunk_shift(extent, nbytes, window):
    """log2 of the owner chunks' extent along the partition axis (``extent`` long, the
    result ``nbytes``, windows ``window`` long on it): a power of two (chunk numbers by
    shift); slabs of at most ~_CHUNK_BYTES (copied, then updated while still in cache)
    and at least 16 chunks where the axis is long enough (balance), but chunks of 8
    windows or more where that leaves 8 chunks (a window cut by a chunk edge takes the
    slow path in both chunks). A function of the shapes only: the thread count never
    changes the chunks (the result would not depend on them anyway: every element is
    updated in schedule order)."""
    rows = min(_CHUNK_BYTES * extent // max(nbytes, 1), extent // 16)
    rows = max(rows, min(8 * window, extent // 8), 1)
    return rows.bit_length() - 1


def _stable_order(keys):
    """Stable argsort of non-negative int64 ``keys`` (1-D). Where key and position fit
    in 63 bits together, sort (key << bits | position) with NumPy's fast unstable sort
    (the keys are then unique); else NumPy's stable sort (timsort for int64: slow)."""
    n = keys.size
    shift = max(1, (n - 1).bit_length())
    if n and int(keys.max()) < (1 << (63 - shift)):
        comp = keys.astype(np.int64) << np.int64(shift)
        comp |= np.arange(n, dtype=np.int64)
        comp.sort()
        return comp & np.int64((1 << shift) - 1)
    return np.argsort(keys, kind="stable")


def _rounds(tgt, src):
    """The updates (targets ``tgt``, sources ``src``; at least one) grouped for rounds:
    (tgt, src) sorted stably by target, the positions ``rounds`` of that order sorted
    stably by each update's rank among its target's, and the ``bounds`` of round k in
    ``rounds`` (k-th update of every target, in schedule order)."""
    order = _stable_order(tgt)
    tgt, src = tgt[order], src[order]
    pos = np.arange(tgt.size)
    new = np.empty(tgt.size, bool)
    new[0] = True
    np.not_equal(tgt[1:], tgt[:-1], out=new[1:])
    rank = pos - np.maximum.accumulate(np.where(new, pos, 0))
    rounds = _stable_order(rank)
    return tgt, src, rounds, np.searchsorted(rank[rounds], np.arange(int(rank.max()) + 2))


def _scatter_generic(xs, us, geo, body, dts):
    """Vectorised rounds: group the updates by target, stably (so in schedule order);
    round k applies every target's k-th update with one body call on whole arrays.

    The grouping is per window where windows either coincide or are disjoint (every
    window dim is 1 or the whole result dim, and no window is partly out of bounds:
    e.g. row scatters), per element otherwise."""
    op = "scatter"
    xs = [_convert(x, dt) for x, dt in zip(xs, dts)]
    us = [_convert(u, dt) for u, dt in zip(us, dts)]
    res = [np.array(x._value, order="C").reshape(-1) for x in xs]
    upd = [np.ascontiguousarray(u._value).reshape(-1) for u in us]
    aligned = (
        all(w == 1 or w == n for w, n in zip(geo.wsize, geo.dims)) and not (geo.rbase == -1).any()
    )
    if aligned:  # units are windows; rel_*: a window's element offsets
        live = np.flatnonzero(geo.rbase >= 0)
        tgt, src = geo.rbase[live], geo.ubase[live]
        rel_r, rel_u = np.zeros(1, np.int64), np.zeros(1, np.int64)
        for d in range(len(geo.dims)):
            steps = np.arange(geo.wsize[d], dtype=np.int64)
            rel_r = (rel_r[:, None] + steps * geo.rstr[d]).reshape(-1)
            rel_u = (rel_u[:, None] + steps * geo.wstr[d]).reshape(-1)
    else:  # units are update elements
        tgt, src = geo.targets()
        keep = tgt >= 0
        tgt, src = tgt[keep], src[keep]
    if not tgt.size:
        return [_wrap(a.reshape(xs[0].shape), dt) for a, dt in zip(res, dts)]
    tgt, src, rounds, bounds = _rounds(tgt, src)
    for k in range(len(bounds) - 1):
        sel = rounds[bounds[k] : bounds[k + 1]]
        t, s = tgt[sel], src[sel]
        if aligned:
            t = (t[:, None] + rel_r).reshape(-1)
            s = (s[:, None] + rel_u).reshape(-1)
        args = [_wrap(a[t], dt) for a, dt in zip(res, dts)] + [
            _wrap(a[s], dt) for a, dt in zip(upd, dts)
        ]
        outs = call(op, "C15", "update_computation", body, args, dts, (t.size,))
        for r, v in zip(res, outs):
            r[t] = v
    return [_wrap(a.reshape(xs[0].shape), dt) for a, dt in zip(res, dts)]


@scatter.defvjp
def _scatter_vjp(g, out, inputs, scatter_indices, updates, *attributes):
    """add body: inputs get g; updates get g at their targets (a gather with the mirrored
    dims when every window is in bounds; else an element-wise gather masked to the
    in-bounds elements). overwrite body: inputs get g where nothing was written;
    updates get g at their targets only where they are the last write. maximum / minimum
    of floats: g split evenly among the input element and the updates equal to the
    result at each position (as jax.lax.scatter_max; a NaN result sends nothing back).
    Any other body (multiply, several inputs, a user's function): the vjp of the rounds
    the generic path computes (:func:`_scatter_generic`), re-run on the tape with xops
    ops (exact for multiply with zeros and duplicate indices; higher orders too)."""
    xs, seq, us, useq, si, p = _scatter_args(inputs, scatter_indices, updates, *attributes)
    name = _scatter_op_name(p.body) if len(xs) == 1 else None
    device = any(t.device != "cpu" for t in xs + us + [si])
    if device and name not in ("add", "overwrite"):
        raise SpecError(
            "scatter",
            "grad",
            "xops differentiates scatter on a device only with one input and an add or "
            "overwrite (lambda a, b: b) body",
        )
    minmax = name in ("maximum", "minimum") and xs[0]._dtype.kind == "float"
    if name not in ("add", "overwrite") and not minmax:
        return _scatter_rounds_vjp(g, xs, seq, us, useq, si, p)
    if isinstance(g, tuple):
        g = g[0]
    x, u = xs[0], us[0]

    if u.size == 0 or x.size == 0:
        return _wrap_seq(g, seq), None, _wrap_seq(_zeros_like(u), useq)
    if x.device != "cpu" or si.device != "cpu":  # targets found by ops on the device
        dx, du = _device_grads.scatter_grads(scatter, g, x, u, si, p, name)
        return _wrap_seq(dx, seq), None, _wrap_seq(du, useq)
    geo = _Geometry(x.shape, si, u.shape, p)
    tgt, src = geo.targets()
    if minmax:
        dx, du = _scatter_minmax_vjp(g, out[0] if isinstance(out, tuple) else out, x, u, tgt, src)
        return _wrap_seq(dx, seq), None, _wrap_seq(du, useq)
    if name == "add" and (tgt >= 0).all():
        wsize = [int(v) for v in geo.wsize] if x.ndim else []
        du = _op.gather(
            g,
            si,
            p.uwd,
            p.iwd,
            p.sdod,
            p.ivd,
            wsize,
            operand_batching_dims=p.ibd,
            start_indices_batching_dims=p.sibd,
        )
        return _wrap_seq(g, seq), None, _wrap_seq(du, useq)
    live = tgt >= 0
    if name == "overwrite":  # only the last write to each target survives
        order = np.argsort(tgt, kind="stable")
        t_sorted = tgt[order]
        last = np.ones(tgt.size, bool)
        last[:-1] = t_sorted[1:] != t_sorted[:-1]
        winner = np.zeros(tgt.size, bool)
        winner[order[last]] = True
        live &= winner
    per_update = np.empty(u.size, np.int64)  # update flat offset -> its target
    per_update[src] = np.where(live, tgt, -1)
    mask = _wrap(per_update.reshape(u.shape) >= 0, as_dtype("i1"))
    picked = _pick_flat(g, np.maximum(per_update, 0))
    du = _op.select(mask, _op.reshape(picked, list(u.shape)), _zeros_like(u))
    dx = g
    if name == "overwrite":
        written = np.zeros(x.size, bool)
        written[tgt[live]] = True
        dx = _op.select(_wrap(written.reshape(x.shape), as_dtype("i1")), _zeros_like(x), g)
    return _wrap_seq(dx, seq), None, _wrap_seq(du, useq)


def _wrap_seq(t, seq):
    return [t] if seq else t


def _coefficients(c, like):
    """The float64 array ``c`` as a tensor of ``like``'s float type and shape."""
    dt = like._dtype
    return _wrap(from_compute(c.reshape(like.shape).astype(dt.compute), dt), dt)


def _pick_flat(t, at):
    """Elements ``at`` (flat offsets, an int64 array) of tensor ``t``: a gather."""
    idx = _wrap(np.ascontiguousarray(at, np.int64).reshape(-1, 1), as_dtype("i64"))
    return _op.gather(_op.reshape(t, [t.size]), idx, [], [0], [0], 1, [1])


def _scatter_minmax_vjp(g, out, x, u, tgt, src):
    """(d input, d updates) of a float maximum / minimum scatter: at each position the
    cotangent is split evenly among the input element (where it equals the result) and
    every update equal to the result there (jax.lax.scatter_max's rule); elements that
    do not equal it (a NaN result: none does) get nothing. The shares are piecewise
    constant, so the rule is exact at every order."""
    per = np.full(u.size, -1, np.int64)  # update element -> its target (-1: outside)
    per[src] = tgt
    xv = np.asarray(compute(x)).reshape(-1)
    uv = np.asarray(compute(u)).reshape(-1)
    ov = np.asarray(compute(out)).reshape(-1)
    live = per >= 0
    safe = np.maximum(per, 0)
    hit = live & (uv == ov[safe])
    stays = xv == ov
    share = np.bincount(per[hit], minlength=x.size) + stays  # contenders per position
    inv = 1.0 / np.maximum(share, 1)
    dx = _op.multiply(g, _coefficients(np.where(stays, inv, 0.0), x))
    picked = _op.reshape(_pick_flat(g, safe), list(u.shape))
    du = _op.multiply(picked, _coefficients(np.where(hit, inv[safe], 0.0), u))
    return dx, du


def _scatter_rounds_vjp(g, xs, seq, us, useq, si, p):
    """The vjp of any scatter body: the generic path's rounds (the updates grouped by
    target in schedule order; round k applies every target's k-th update: a gather of
    the current results and the updates, one body call, an overwrite scatter with unique
    targets), re-run with xops ops for :func:`xops.autodiff.local.local_vjp`. One round
    per update a target receives at most (three ops each on the tape)."""
    op = "scatter"
    dts = _scatter_body_types(xs, us, p.body)
    geo = _Geometry(xs[0].shape, si, us[0].shape, p)
    tgt, src = geo.targets()
    keep = tgt >= 0
    tgt, src, rounds, bounds = _rounds(tgt[keep], src[keep]) if keep.any() else (0, 0, 0, [])
    n = len(xs)
    overwrite = Body.overwrite()

    def apply(*ts):
        res = [_op.reshape(_retype(t, dt), [t.size]) for t, dt in zip(ts[:n], dts)]
        upd = [_op.reshape(_retype(t, dt), [t.size]) for t, dt in zip(ts[n:], dts)]
        for k in range(len(bounds) - 1):
            sel = rounds[bounds[k] : bounds[k + 1]]
            t, s = tgt[sel], src[sel]
            args = [_pick_flat(r, t) for r in res] + [_pick_flat(v, s) for v in upd]
            outs = outputs(op, "C15", "update_computation", p.body(*args), n)
            outs = [v if v.ndim else _op.broadcast_in_dim(v, [], [t.size]) for v in outs]
            idx = _wrap(t.reshape(-1, 1), as_dtype("i64"))
            res = [
                _op.scatter(r, idx, v, [], [0], [0], 1, update_computation=overwrite)
                for r, v in zip(res, outs)
            ]
        return [_op.reshape(r, list(ts[0].shape)) for r in res]

    gs = list(g) if isinstance(g, (tuple, list)) else [g]
    cts = local_vjp(op, p.body, apply, xs + us, gs, "update_computation")
    dx = cts[:n] if seq else cts[0]
    du = cts[n:] if useq else cts[n]
    return dx, None, du


def _retype(t, dt):
    """``t`` converted to ``dt`` on the tape (the body's types), or ``t`` itself."""
    return t if t._dtype is dt else _op.convert(t, dt)


def scatter_reference(*args, **kwargs):
    """The spec's formula, one update element at a time, in xops' schedule order (test
    oracle; slow: one body call per element). Takes scatter's arguments."""
    op = "scatter"
    xs, seq, us, useq, si, p = _scatter_args(*bound_arguments(scatter, args, kwargs).values())
    body = p.body
    dts = _scatter_body_types(xs, us, body)
    results = [np.array(_convert(x, dt)._value) for x, dt in zip(xs, dts)]
    upd_v = [_convert(u, dt)._value for u, dt in zip(us, dts)]
    indices = compute(si)
    shape, ushape, ivd = xs[0].shape, us[0].shape, p.ivd
    update_scatter_dims = [d for d in range(len(ushape)) if d not in p.uwd]
    for update_scatter_index in np.ndindex(*[ushape[d] for d in update_scatter_dims]):
        usi = list(update_scatter_index)
        if ivd < si.ndim:
            start_index = [
                int(indices[tuple(usi[:ivd] + [k] + usi[ivd:])]) for k in range(si.shape[ivd])
            ]
        else:
            start_index = [int(indices[tuple(usi)])]
        full_start_index = [0] * len(shape)
        for d_start, d_input in enumerate(p.sdod):
            full_start_index[d_input] = start_index[d_start]
        full_batching_index = [0] * len(shape)
        for d_input, d_start in zip(p.ibd, p.sibd):
            full_batching_index[d_input] = usi[d_start - (0 if d_start < ivd else 1)]
        for update_window_index in np.ndindex(*[ushape[d] for d in p.uwd]):
            update_index = [0] * len(ushape)
            for d, i in zip(update_scatter_dims, usi):
                update_index[d] = i
            for d, i in zip(p.uwd, update_window_index):
                update_index[d] = i
            wi = iter(update_window_index)
            full_window_index = [
                0 if d in p.iwd or d in p.ibd else next(wi) for d in range(len(shape))
            ]
            result_index = tuple(
                a + b + c
                for a, b, c in zip(full_start_index, full_batching_index, full_window_index)
            )
            if not all(0 <= i < n for i, n in zip(result_index, shape)):
                continue
            args = [_wrap(r[result_index], dt) for r, dt in zip(results, dts)] + [
                _wrap(u[tuple(update_index)], dt) for u, dt in zip(upd_v, dts)
            ]
            outs = outputs(op, "C15", "update_computation", body(*args), len(dts))
            for r, o in zip(results, outs):
                r[result_index] = o._value
    res = [_wrap(r, dt) for r, dt in zip(results, dts)]
    return tuple(res) if seq or useq else res[0]


# ---------------------------------------------------------------------------------------
# index_add_: PyTorch's in-place row update
# ---------------------------------------------------------------------------------------


def index_add_(x, dim, index, source):
    """``x.index_add_(dim, index, source)`` as in PyTorch: adds ``source``'s slices along
    ``dim`` into ``x`` at the positions ``index`` (duplicates accumulate, in index order),
    rebinding the Tensor object ``x`` to the result and returning it.

    It is ``xo.scatter(x, index[:, None], source, ..., update_computation=xo.add)``
    along ``dim``, done in place where nothing can observe it: when ``x``'s buffer is
    reachable through ``x`` alone (no other tensor, view, NumPy or DLPack consumer holds
    it) and the update is a row scatter of a float32/float64/int64/uint64 tensor, the
    owner-computes kernel adds into that buffer without copying it; otherwise ``x`` is
    rebound to a new buffer (copy-on-write, as ``t[key] = v``), so no other holder of
    the old value ever sees it change. Either way ``x``'s version advances: a tape node
    that saved ``x`` before makes backward raise (as PyTorch's version check).

    Constraints (``index_add_ (label)``): I1 x a Tensor; I2 index an integer tensor of
    rank <= 1; I3 dim an integer in [-rank, rank); C1 source of x's element type; C2
    source's shape is x's with dim of size len(index); C3 0 <= index < x.shape[dim] (as
    PyTorch: out-of-range indices raise, they are not skipped); grad: not while
    gradients are recorded for x or source (as PyTorch for a leaf that requires grad:
    use ``x.at[index].add(source)``, a new tensor).

    >>> x = xo.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    >>> x.index_add_(0, xo.tensor([2, 0, 2]), xo.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    xo.tensor([[3., 4.],
               [0., 0.],
               [6., 8.]], f32[3,2])
    """
    op = "index_add_"
    check(isinstance(x, Tensor), op, "I1", lambda: f"x must be a Tensor, got {type(x).__name__}")
    si, src = operands(op, index, source, names=["index", "source"])
    _int_tensor_check(op, "I2", "index", si)
    check(si.ndim <= 1, op, "I2", lambda: f"index must have rank <= 1, got {tstr(si)}")
    r = x.ndim
    dim = attr_int(op, "I3", "dim", dim)
    check(-max(r, 1) <= dim < max(r, 1), op, "I3", lambda: f"dim must be in [-{r}, {r}), got {dim}")
    dim %= max(r, 1)
    check(
        src._dtype is x._dtype,
        op,
        "C1",
        lambda: f"source must have x's element type, got {tstr(src)} for {tstr(x)}",
    )
    n = si.size
    want = tuple(n if d == dim else x.shape[d] for d in range(r)) if r else (n,)
    check(
        src.shape == want,
        op,
        "C2",
        lambda: (
            f"source must have shape {list(want)} for {tstr(x)} and {tstr(si)}, got {tstr(src)}"
        ),
    )
    idx = _row_indices(si)
    extent = x.shape[dim] if r else 1
    check(
        n == 0 or (int(idx.min()) >= 0 and int(idx.max()) < extent),
        op,
        "C3",
        lambda: (
            f"index values must be in [0, {extent}) (dim {dim} of {tstr(x)}), got "
            f"[{idx.min()}, {idx.max()}]"
        ),
    )
    check(
        not (is_grad_enabled() and (x.requires_grad or src.requires_grad)),
        op,
        "grad",
        lambda: (
            f"cannot update {tstr(x)} in place while gradients are recorded for it or "
            f"for source; use x.at[index].add(source) (a new tensor), or xo.no_grad()"
        ),
    )
    xs, _, us, _, si, p = _scatter_args(
        x if r else _wrap(x._value.reshape(1), x._dtype),
        _wrap(idx.reshape(-1, 1), si._dtype),
        src,
        [d for d in range(max(r, 1)) if d != dim],
        [dim],
        [dim],
        1,
        False,
        False,
        _op.add,
        (),
        (),
    )
    buf = _sole_buffer(x) if p.rows and x._dtype.np in _IN_PLACE else None
    res = _scatter_impl(xs, si, us, p, [x._dtype], out=buf)[0]
    bump_version(x)
    if buf is None:
        x._value = res._value.reshape(x.shape)
    return x


# element types whose kernel computes in the type itself: the kernel can add in place
_IN_PLACE = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64))


def _sole_buffer(t):
    """A writeable array over ``t``'s buffer if nothing but ``t`` can reach that memory,
    else None. Every holder of NumPy memory keeps a reference to the array that exports it
    (views keep their base; memoryviews, DLPack, ``torch.from_numpy`` and Numba keep the
    array), so the test is on reference counts along the base chain: the holder array
    referenced by ``t`` alone, each base by the array above it alone, ending at memory the
    chain owns (NumPy's, or a buffer-pool lease). Conservative: anything else is shared.
    The counts are compared with those of a probe measured the same way at import (the
    interpreter's own temporary references differ between Python versions)."""
    if _value_refs(t) != _SOLE_VALUE_REFS:  # (before any local refers to the array)
        return None
    v = t._value
    if type(v) is not np.ndarray or not v.flags.c_contiguous or not v.flags.aligned:
        return None
    a = v
    while a.base is not None:
        if _base_refs(a) != _SOLE_BASE_REFS:  # (before the local b refers to the base)
            return None
        b = a.base
        if type(b) is not np.ndarray:
            if type(b) is not _pool._Lease:
                return None
            return _pool.over(b, v)  # (v may start anywhere in the buffer: a slice)
        a = b
    # the owner, reached through v only: a writeable view of v, then v and its chain go
    # back to read-only (the view keeps its own flag)
    chain = [v]
    while chain[-1].base is not None:
        chain.append(chain[-1].base)
    for c in reversed(chain):
        c.flags.writeable = True
    w = v.view()
    for c in chain:
        c.flags.writeable = False
    return w


def _value_refs(t):
    return sys.getrefcount(t._value)


def _base_refs(a):
    return sys.getrefcount(a.base)


_SOLE_VALUE_REFS = _value_refs(_wrap(np.empty(1), None))  # held by one Tensor only
_SOLE_BASE_REFS = _base_refs(np.empty(2)[:1])  # a base held by one array only
