"""Slicing and padding: stablehlo.slice, dynamic_slice, dynamic_update_slice and pad
(the other data-movement ops: :mod:`xops.ops.movement`, which re-exports these).

Like every data-movement op they never compute on element values (see
:mod:`xops.ops.movement`): slice and dynamic_slice return read-only views of the
operand, pad and dynamic_update_slice fresh holder arrays. Constraint labels are the
StableHLO spec's (shared/seeds/004); "I<n>" labels an input of the wrong kind.

Gradients (tape rules written with these same ops, so they record too): slice pads the
cotangent back; pad slices it (re-padding where negative edge padding cut elements) and
gives padding_value the sum over the padding positions; dynamic_slice /
dynamic_update_slice use the same clamped start indices.
"""

import builtins

import numpy as np

from ..autodiff.helpers import needs as _needs, sum as _sum, zeros as _zeros
from ..autodiff.tape import keep, primitive
from ..dtypes import as_dtype
from ..limits import check_nbytes
from ..registry import op as _op  # ops of the families above this one, by name
from ..tensor import Tensor, _wrap
from ._core import SpecError, as_tensor, attr_ints, check, operands, tstr

__all__ = ["slice", "dynamic_slice", "dynamic_update_slice", "pad"]


# ---------------------------------------------------------------------------------------
# Helpers the data-movement ops share (xops.ops.movement imports them from here)
# ---------------------------------------------------------------------------------------

_S = builtins.slice  # this module defines its own `slice` op


def _operand(op, x, name="operand"):
    (t,) = operands(op, x, names=[name])
    return t


def _index_list(op, label, name, value):
    """An index-list attribute (dimensions, indices) as Python ints."""
    return attr_ints(op, label, name, value)


def _is_py_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _int_value(t):
    """The Python int held by a 0-d integer tensor (exact for every width)."""
    return int(t._value.astype(t._dtype.compute).item())


def _shape(a):
    return a.shape if isinstance(a, Tensor) else np.shape(a)


# slice, dynamic_slice, dynamic_update_slice
# ---------------------------------------------------------------------------------------


@primitive("slice", quantized="storage", quantized_params=("operand",))
def slice(operand, start_indices, limit_indices, strides=None):
    """stablehlo.slice: result[i] = operand[start_indices + i * strides] for
    i < ceil((limit_indices - start_indices) / strides) (C5).

    (C2) one start, limit and stride per operand dim; (C3)
    0 <= start_indices <= limit_indices <= shape(operand) (start == limit gives an
    empty dim); (C4) strides > 0, default 1. The result is a read-only view.

    >>> xo.slice(xo.tensor([[0, 0, 1, 0, 0, 1]], "i64"), [0, 2], [1, 6], [1, 3])   # [[1, 1]]
    xo.tensor([[1, 1]], i64[1,2])
    """
    op = "slice"
    x = _operand(op, operand)
    r = x.ndim
    start = _index_list(op, "I2", "start_indices", start_indices)
    limit = _index_list(op, "I3", "limit_indices", limit_indices)
    step = [1] * r if strides is None else _index_list(op, "I4", "strides", strides)
    check(
        len(start) == len(limit) == len(step) == r,
        op,
        "C2",
        lambda: (
            f"start_indices, limit_indices and strides must have rank(operand)={r} "
            f"entries, got {start}, {limit}, {step}"
        ),
    )
    for d in range(r):
        check(
            0 <= start[d] <= limit[d] <= x.shape[d],
            op,
            "C3",
            lambda: (
                f"need 0 <= start_indices <= limit_indices <= shape(operand) in dim {d}, "
                f"got start {start[d]}, limit {limit[d]}, dim {x.shape[d]} "
                f"(operand {tstr(x)})"
            ),
        )
    check(all(s > 0 for s in step), op, "C4", lambda: f"strides must be positive, got {step}")
    keep(op, start_indices=start, limit_indices=limit, strides=step)
    idx = builtins.tuple(_S(a, b, s) for a, b, s in zip(start, limit, step))
    return _wrap(x._value[idx], x._dtype)


@slice.defvjp
def _slice_vjp(g, out, operand, start_indices, limit_indices, strides):
    # pad g with zeros back to the operand: low = start, interior = stride - 1
    shape = operand.shape
    start, step = start_indices, strides  # (kept parsed by the op: lists of ints)
    high = [
        n - s - k - builtins.max(k - 1, 0) * (st - 1)
        for n, s, k, st in zip(shape, start, g.shape, step)
    ]
    return (pad(g, 0, start, high, [st - 1 for st in step]),)


def _start_indices(op, starts, rank, label_kind, label_count, label_same):
    """The start indices of dynamic_slice / dynamic_update_slice as exact Python ints.

    ``starts`` is a sequence of 0-d integer tensors (Python ints among them take the
    tensors' type, like any weak scalar), or one 1-D integer tensor (XLA's older form).
    """
    if isinstance(starts, (Tensor, np.ndarray)):
        t = as_tensor(starts, op=op, name="start_indices")
        check(
            t.ndim == 1 and t._dtype.kind in ("si", "ui"),
            op,
            label_kind,
            lambda: (
                f"start_indices must be 0-d integer tensors (or one 1-D integer "
                f"tensor), got {tstr(t)}"
            ),
        )
        values = [int(v) for v in t._value.astype(t._dtype.compute).tolist()]
    elif isinstance(starts, (list, builtins.tuple)):
        ts = [
            s if isinstance(s, Tensor) else as_tensor(s, op=op, name=f"start_indices[{i}]")
            for i, s in enumerate(starts)
            if not _is_py_int(s)
        ]
        for t in ts:
            check(
                t.ndim == 0 and t._dtype.kind in ("si", "ui"),
                op,
                label_kind,
                lambda: f"start_indices must be 0-d integer tensors, got {tstr(t)}",
            )
        check(
            len({t._dtype for t in ts}) <= 1,
            op,
            label_same,
            lambda: f"start_indices must all have one type, got {', '.join(tstr(t) for t in ts)}",
        )
        dt = ts[0]._dtype if ts else as_dtype("i64")  # weak Python ints take this type
        tensors = iter(ts)
        values = []
        for i, s in enumerate(starts):
            if _is_py_int(s):
                check(
                    dt.min <= s <= dt.max,
                    op,
                    label_kind,
                    lambda: (
                        f"start_indices[{i}] = {s} is out of range for the index type "
                        f"{dt.name} [{dt.min}, {dt.max}]"
                    ),
                )
                values.append(s)
            else:
                values.append(_int_value(next(tensors)))
    else:
        raise SpecError(
            op,
            label_kind,
            f"start_indices must be a sequence of 0-d integer tensors, got {type(starts).__name__}",
        )
    check(
        len(values) == rank,
        op,
        label_count,
        lambda: f"size(start_indices) must equal rank(operand)={rank}, got {len(values)}",
    )
    return values


def _clamped(starts, dims, sizes):
    """adjusted_start_indices = clamp(0, start_indices, shape(operand) - sizes), exact
    (Python ints: no wraparound for any index type or value)."""
    return [builtins.min(builtins.max(s, 0), d - n) for s, d, n in zip(starts, dims, sizes)]


@primitive("dynamic_slice", quantized="storage", quantized_params=("operand",))
def dynamic_slice(operand, start_indices, slice_sizes):
    """stablehlo.dynamic_slice: the ``slice_sizes`` block starting at ``start_indices``,
    each start clamped to [0, dim - slice_size] (never wraps, never reads out of range).

    ``start_indices``: one 0-d integer tensor (or Python int) per dim (C2), all of one
    type (C3). (C4) 0 <= slice_sizes <= shape(operand). The result is a read-only view.

    >>> x = xo.tensor([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], "i32")
    >>> xo.dynamic_slice(x, [xo.tensor(-1), xo.tensor(3)], [2, 2])   # [[1, 1], [1, 1]]
    xo.tensor([[1, 1],
               [1, 1]], i32[2,2])
    """
    op = "dynamic_slice"
    x = _operand(op, operand)
    sizes = _index_list(op, "I3", "slice_sizes", slice_sizes)
    check(
        len(sizes) == x.ndim,
        op,
        "C2",
        lambda: f"slice_sizes must have rank(operand)={x.ndim} entries, got {sizes}",
    )
    check(
        all(0 <= n <= d for n, d in zip(sizes, x.shape)),
        op,
        "C4",
        lambda: f"need 0 <= slice_sizes <= shape(operand), got {sizes} for {tstr(x)}",
    )
    starts = _start_indices(op, start_indices, x.ndim, "I2", "C2", "C3")
    adj = _clamped(starts, x.shape, sizes)
    idx = builtins.tuple(_S(a, a + n) for a, n in zip(adj, sizes))
    return _wrap(x._value[idx], x._dtype)


@dynamic_slice.defvjp
def _dynamic_slice_vjp(g, out, operand, start_indices, slice_sizes):
    # the same (clamped) start indices: g goes back where the slice came from
    return (dynamic_update_slice(_zeros(operand.shape, g._dtype), g, start_indices),)


@primitive("dynamic_update_slice", quantized="storage", quantized_params=("operand", "update"))
def dynamic_update_slice(operand, update, start_indices):
    """stablehlo.dynamic_update_slice: the operand with the block at ``start_indices``
    replaced by ``update``; each start clamped to [0, dim - update_dim].

    (C2) update has the operand's element type; (C3) and its rank; (C4) one start per
    dim; (C5) starts of one type; (C6) 0 <= shape(update) <= shape(operand).

    >>> x = xo.tensor([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]], "i32")
    >>> xo.dynamic_update_slice(x, xo.tensor([[1, 1], [1, 1]], "i32"), [-1, 3])   # all ones
    xo.tensor([[1, 1, 1, 1],
               [1, 1, 1, 1],
               [1, 1, 1, 1],
               [1, 1, 1, 1]], i32[4,4])
    """
    x, u, starts = dynamic_update_slice_checks(operand, update, start_indices)
    adj = _clamped(starts, x.shape, u.shape)
    out = x._value.copy()
    out[builtins.tuple(_S(a, a + n) for a, n in zip(adj, u.shape))] = u._value
    return _wrap(out, x._dtype)


def dynamic_update_slice_checks(operand, update, start_indices):
    """dynamic_update_slice's constraints (C2-C6), reading only types, shapes and the
    start indices (host values): ``(operand, update, starts)``, starts as Python ints
    before clamping."""
    op = "dynamic_update_slice"
    x, u = operands(op, operand, update, names=["operand", "update"])
    check(
        u._dtype is x._dtype,
        op,
        "C2",
        lambda: (
            f"update must have the operand's element type, got operand {tstr(x)} and "
            f"update {tstr(u)}"
        ),
    )
    check(
        u.ndim == x.ndim,
        op,
        "C3",
        lambda: (
            f"rank(update) must equal rank(operand), got operand {tstr(x)} and update {tstr(u)}"
        ),
    )
    starts = _start_indices(op, start_indices, x.ndim, "I3", "C4", "C5")
    check(
        all(n <= d for n, d in zip(u.shape, x.shape)),
        op,
        "C6",
        lambda: f"need shape(update) <= shape(operand), got update {tstr(u)} for operand {tstr(x)}",
    )
    return x, u, starts


@dynamic_update_slice.defvjp
def _dynamic_update_slice_vjp(g, out, operand, update, start_indices):
    g_operand = g_update = None
    if _needs(operand):  # the updated window was overwritten: no gradient there
        g_operand = dynamic_update_slice(g, _zeros(_shape(update), g._dtype), start_indices)
    if _needs(update):
        g_update = dynamic_slice(g, start_indices, list(update.shape))
    return g_operand, g_update


# ---------------------------------------------------------------------------------------
# pad
# ---------------------------------------------------------------------------------------


@primitive("pad", quantized="storage", quantized_params=("operand", "padding_value"))
def pad(operand, padding_value, edge_padding_low, edge_padding_high, interior_padding):
    """stablehlo.pad: result[edge_padding_low + i * (interior_padding + 1)] = operand[i],
    padding_value everywhere else; interior padding comes first, then edge padding, so
    negative edge padding removes elements (and interior padding) at that end.

    ``padding_value`` is a 0-d tensor of the operand's element type (I2, C1); (C2) one
    entry per operand dim in each padding list; (C3) interior_padding >= 0; (C4) result
    dim = low + dim + max(dim - 1, 0) * interior + high, which must not be negative.

    >>> xo.pad(xo.tensor([[1, 2, 3], [4, 5, 6]], "i32"), 0, [0, 1], [2, 1], [1, 2]).shape
    ... # (5, 9)
    (5, 9)
    """
    x, pv = operands("pad", operand, padding_value, names=["operand", "padding_value"])
    low, high, inner, dims = pad_checks(
        x, pv, edge_padding_low, edge_padding_high, interior_padding
    )
    keep("pad", edge_padding_low=low, edge_padding_high=high, interior_padding=inner)
    out = np.empty(dims, x._dtype.np)
    out[...] = pv._value
    dst, src = [], []
    for n, lo, it, size in zip(x.shape, low, inner, dims):
        s = it + 1
        first = builtins.max(0, -(lo // s))  # smallest i with lo + i*s >= 0
        last = builtins.min(n - 1, (size - 1 - lo) // s)  # largest i with lo + i*s < size
        if first > last:
            break
        dst.append(_S(lo + first * s, lo + last * s + 1, s))
        src.append(_S(first, last + 1))
    else:
        out[builtins.tuple(dst)] = x._value[builtins.tuple(src)]
    return _wrap(out, x._dtype)


def pad_checks(x, pv, edge_padding_low, edge_padding_high, interior_padding):
    """pad's constraints (I2-I5, C1-C4) on tensors ``x``, ``pv`` (any device: only types
    and shapes are read); returns the parsed low, high and interior paddings and the
    result's shape."""
    op = "pad"
    check(pv.ndim == 0, op, "I2", lambda: f"padding_value must be a 0-d tensor, got {tstr(pv)}")
    check(
        pv._dtype is x._dtype,
        op,
        "C1",
        lambda: (
            f"padding_value must have the operand's element type, got {tstr(pv)} for "
            f"operand {tstr(x)}"
        ),
    )
    r = x.ndim
    low = _index_list(op, "I3", "edge_padding_low", edge_padding_low)
    high = _index_list(op, "I4", "edge_padding_high", edge_padding_high)
    inner = _index_list(op, "I5", "interior_padding", interior_padding)
    check(
        len(low) == len(high) == len(inner) == r,
        op,
        "C2",
        lambda: (
            f"edge_padding_low, edge_padding_high and interior_padding must have "
            f"rank(operand)={r} entries, got {low}, {high}, {inner}"
        ),
    )
    check(
        all(i >= 0 for i in inner),
        op,
        "C3",
        lambda: f"interior_padding must be non-negative, got {inner}",
    )
    dims = [
        lo + n + builtins.max(n - 1, 0) * it + hi
        for n, lo, hi, it in zip(x.shape, low, high, inner)
    ]
    for d in range(r):
        check(
            dims[d] >= 0,
            op,
            "C4",
            lambda: (
                f"result dim {d} = low + dim + max(dim - 1, 0) * interior + high = "
                f"{low[d]} + {x.shape[d]} + {builtins.max(x.shape[d] - 1, 0)} * "
                f"{inner[d]} + {high[d]} = {dims[d]} is negative"
            ),
        )
    check_nbytes(op, dims, x._dtype)
    return low, high, inner, dims


@pad.defvjp
def _pad_vjp(g, out, operand, padding_value, edge_padding_low, edge_padding_high, interior_padding):
    low, high, inner = edge_padding_low, edge_padding_high, interior_padding  # kept parsed
    shape = _shape(operand)
    r = len(shape)
    g_operand = g_value = None
    if _needs(operand):
        # re-pad with zeros where negative edge padding cut operand elements away, then
        # take every (interior + 1)-th element from the first operand position
        cut_lo = [builtins.max(-lo, 0) for lo in low]
        cut_hi = [builtins.max(-hi, 0) for hi in high]
        gx = g
        if any(cut_lo) or any(cut_hi):
            gx = pad(g, 0, cut_lo, cut_hi, [0] * r)
        start = [builtins.max(lo, 0) for lo in low]
        limit = [s + (n - 1) * (it + 1) + 1 if n else s for s, n, it in zip(start, shape, inner)]
        if any(start) or list(limit) != list(gx.shape) or any(inner):
            gx = slice(gx, start, limit, [it + 1 for it in inner])
        g_operand = gx
    if _needs(padding_value):
        # the sum of g over the padding positions (a 0/1 mask: no cancellation)
        dt = g._dtype
        mask = pad(_zeros(shape, dt), 1, low, high, inner)  # (1: a weak scalar of type dt)
        g_value = _sum(_op.multiply(g, mask), list(range(r)))
    return g_operand, g_value


# ---------------------------------------------------------------------------------------
