"""Indexing: stablehlo.gather, and stablehlo.scatter re-exported from :mod:`xops.ops.scatter`
(sort and top_k: :mod:`xops.ops.sorting`).

Semantic decisions (seed 004 = the StableHLO spec; "current spec" = its newer revision
with batching dims, which the conformance suite uses; scatter's: :mod:`xops.ops.scatter`):

* **gather clamps** every start component: ``clamp(start_index[d_start], 0,
  dim(operand, d_operand) - slice_sizes[d_operand])`` (004 "gather", full_start_index),
  in 64 bits with uint64 values saturated, so no index value can read out of bounds.
  A collapsed or batching dim with slice size 0 leaves the spec's operand_index
  pointing at no element; xops fills such (non-empty) results with zero bits (+0;
  2**-127 for f8E8M0FNU, which has no zero).

**Batching dims.** The current spec lists ``operand_batching_dims`` /
``start_indices_batching_dims`` (and scatter's ``input_batching_dims`` /
``scatter_indices_batching_dims``) between the collapsed/inserted dims and the index
map (its inputs I5/I6). Seed 004 has no such inputs, so positional calls written
against 004's order must keep working: xops takes them as trailing keyword arguments
(defaults empty). Their constraints have no 004 label; xops labels them B1, B2, ...
(listed in each op's docstring with the current spec's label).

**Fast path.** gather always runs a Numba kernel (on the raw bits: any element
type, NaN payloads kept; rows of 8-byte multiples move as uint64 words), its result
and index temporaries from the buffer pool (:mod:`xops.kernels.pool`).
"""

import numpy as np

from ..autodiff import helpers as _H
from ..autodiff.tape import primitive
from ..dtypes import as_dtype
from ..kernels import indexing as K
from ..kernels import pool as _pool
from ..tensor import _wrap
from ..limits import check_nbytes
from ..registry import op as _op
from ._core import bound_arguments, check, compute, operands, tstr
from ._indexing_common import (
    _bits,
    _cached_plan,
    _check_batching,
    _check_index_vector,
    _check_rank,
    _check_dims,
    _i64,
    _index_array,
    _index_matrix,
    _int_tensor_check,
    _read_attributes,
    _ro,
    _row_indices,
    _row_words,
    _sorted_unique,
    _strides,
)
from .scatter import scatter, scatter_reference  # noqa: F401  (re-exported: tests, numpy layer)

__all__ = ["gather", "scatter"]  # (scatter: re-exported, see xops.ops.scatter)


# ---------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------


@primitive("gather", quantized="storage", quantized_params=("operand",))
def gather(
    operand,
    start_indices,
    offset_dims,
    collapsed_slice_dims,
    start_index_map,
    index_vector_dim,
    slice_sizes,
    indices_are_sorted=False,
    operand_batching_dims=(),
    start_indices_batching_dims=(),
):
    """stablehlo.gather: slices of ``operand`` at the offsets in ``start_indices``.

    ``result[result_index] = operand[full_start_index + full_batching_index +
    full_offset_index]``; every start component is clamped to
    [0, dim(operand, d) - slice_sizes[d]] (004 "gather"). The result's dims are the
    batch dims (those of start_indices without index_vector_dim, at the result dims not
    in offset_dims) and the slice dims that are neither collapsed nor batching dims (at
    offset_dims). ``index_vector_dim == rank(start_indices)`` means an implicit
    trailing 1. ``indices_are_sorted`` is a promise xops does not rely on.

    Constraint labels: 004's C1-C12 (C1 counts the batching dims too); batching
    constraints from the current spec: B1 collapsed and operand batching dims disjoint
    (current C6), B2 operand_batching_dims sorted and unique (C10), B3 in range (C11),
    B4 their slice sizes <= 1 (C12), B5 start_indices_batching_dims unique (C13), B6 in
    range (C14), B7 not index_vector_dim (C15), B8 as many as operand_batching_dims
    (C16), B9 same sizes (C17), B10 start_index_map disjoint from
    operand_batching_dims (C18).

    >>> x = xo.tensor([[1, 2], [3, 4], [5, 6]])
    >>> xo.gather(x, xo.tensor([2, 0, 7]), [1], [0], [0], 1, [1, 2])   # [[5,6],[1,2],[5,6]]
    xo.tensor([[5, 6],
               [1, 2],
               [5, 6]], i64[3,2])
    """
    x, si, plan = _gather_args(*locals().values())  # (the parameters, in signature order)
    check_nbytes("gather", plan.result_shape, x._dtype)
    return _wrap(_gather_impl(x, si, plan), x._dtype)


def _gather_args(operand, start_indices, *attributes):
    """gather's operands as Tensors and its checked plan (``attributes``: gather's, in
    signature order): (operand, start_indices, plan). The op, its gradient rule and its
    reference all parse here."""
    x, si = operands("gather", operand, start_indices, names=["operand", "start_indices"])
    return (
        x,
        si,
        _cached_plan(_PLANS, (x, si), attributes, lambda: _gather_plan(x, si, *attributes)),
    )


_PLANS = {}  # gather's checked plans (_cached_plan)


class _GatherPlan:
    __slots__ = (
        "offset_dims",
        "collapsed",
        "start_index_map",
        "ivd",
        "slice_sizes",
        "obd",
        "sibd",
        "result_shape",
        "rows",
    )


def _gather_plan(x, si, *attributes):
    """Check gather's constraints (pure function of shapes and attributes)."""
    op = "gather"
    _int_tensor_check(op, "I2", "start_indices", si)
    od, cd, sim, ivd, ss, _, obd, sibd = _read_attributes(op, gather, attributes)
    r = x.ndim
    _check_index_vector(op, ("C2", "C3"), ("start_indices", si), ivd, ("start_index_map", sim))
    check(_sorted_unique(od), op, "C4", lambda: f"offset_dims must be unique and sorted, got {od}")
    _check_dims(op, ("C6", "C7"), "collapsed_slice_dims", cd, r, "rank(operand)")
    _check_dims(op, ("C9", "C10"), "start_index_map", sim, r, "rank(operand)", ordered=False)
    check(
        len(ss) == r,
        op,
        "C11",
        lambda: f"slice_sizes must have rank(operand)={r} entries for {tstr(x)}, got {ss}",
    )
    check(
        all(ss[d] <= 1 for d in cd),
        op,
        "C8",
        lambda: f"slice_sizes at collapsed_slice_dims {cd} must be <= 1, got {ss}",
    )
    check(
        all(0 <= s <= n for s, n in zip(ss, x.shape)),
        op,
        "C12",
        lambda: f"slice_sizes {ss} must be in [0, shape(operand)] = {list(x.shape)}",
    )
    maps = ("collapsed_slice_dims", cd), ("start_index_map", sim)
    sides = ("operand", x, obd), ("start_indices", si, sibd)
    _check_batching(op, "B2 B3 B1 B5 B6 B7 B8 B9 B10".split(), *sides, ivd, *maps)
    check(
        all(ss[d] <= 1 for d in obd),
        op,
        "B4",
        lambda: f"slice_sizes at operand_batching_dims {obd} must be <= 1, got {ss}",
    )
    batching = ("operand_batching_dims", obd)
    _check_rank(
        op, "C1", "operand", r, [("offset_dims", od), ("collapsed_slice_dims", cd), batching]
    )
    batch_sizes = [n for d, n in enumerate(si.shape) if d != ivd]
    rank = len(batch_sizes) + len(od)
    check(
        all(0 <= d < rank for d in od),
        op,
        "C5",
        lambda: f"offset_dims {od} must be in [0, rank(result)={rank})",
    )
    offset_sizes = [ss[d] for d in range(r) if d not in cd and d not in obd]
    shape = [0] * rank
    it_b, it_o = iter(batch_sizes), iter(offset_sizes)
    for d in range(rank):
        shape[d] = next(it_o) if d in od else next(it_b)
    p = _GatherPlan()
    p.offset_dims, p.collapsed, p.start_index_map, p.ivd = od, cd, sim, ivd
    p.slice_sizes, p.obd, p.sibd, p.result_shape = ss, obd, sibd, tuple(shape)
    # a row gather (x[idx] along dim 0): whole rows of dim 0, at the trailing result dims
    p.rows = (
        cd == [0]
        and sim == [0]
        and not obd
        and ss[0] == 1
        and ss[1:] == list(x.shape[1:])
        and od == list(range(rank - r + 1, rank))
    )
    return p


def _gather_rows(x, si, p):
    """A row gather: the output-parallel row-copy kernel on the raw bits, rows as whole
    words."""
    out = _pool.empty(p.result_shape, x._dtype.np)
    if out.size == 0:
        return out
    idx = _row_indices(si)
    src, dst = _row_words(np.ascontiguousarray(x._value), out.reshape(idx.size, -1))
    K.gather_rows(out.size, _ro(src), _ro(idx), dst, dst.size // idx.size)
    return out


def _gather_impl(x, si, p):
    """Describe the gather with flat strides and run the output-parallel kernel on the
    raw bits of the holder array."""
    if p.rows:
        return _gather_rows(x, si, p)
    shape_out = p.result_shape
    out = _pool.empty(shape_out, x._dtype.np)
    if out.size == 0:
        return out
    if any(p.slice_sizes[d] == 0 for d in p.collapsed + p.obd):
        out.reshape(-1).view(np.uint8)[...] = 0  # no element to read (module docstring):
        return out  # zero bits, +0 of every type (f8E8M0FNU, without a zero: 2**-127)
    src = _bits(x._value)
    dst = (
        out.view(src.dtype)
        if out.dtype.itemsize != 16
        else out.reshape(shape_out + (1,)).view(np.uint64)
    )  # (reshape first: 0-d results too)
    sshape, oshape = list(src.shape), list(dst.shape)
    slice_sizes = list(p.slice_sizes)
    odims = [d for d in range(x.ndim) if d not in p.collapsed and d not in p.obd]
    out_of = dict(zip(odims, p.offset_dims))
    if src.ndim > x.ndim:  # 16-byte items: the word pair is one more offset dim
        slice_sizes.append(2)
        odims.append(x.ndim)
        out_of[x.ndim] = len(shape_out)
    sstr, ostr = _strides(sshape), _strides(oshape)
    idx, _ = _index_matrix(si, p.ivd)
    his = _i64([x.shape[d] - p.slice_sizes[d] for d in p.start_index_map])
    sidx = _i64([sstr[d] for d in p.start_index_map])
    batch_out = [d for d in range(len(shape_out)) if d not in p.offset_dims]
    si_dims = [d for d in range(si.ndim) if d != p.ivd]
    bsrc = [0] * len(si_dims)
    for a, b in zip(p.obd, p.sibd):
        bsrc[si_dims.index(b)] = sstr[a]
    # the slice box: the offset dims of size > 1; the innermost one (merged outward
    # while both layouts stay contiguous) is the kernel's run
    box = [d for d in odims if slice_sizes[d] > 1]
    run_len, istep, ostep = 1, 1, 1
    if box:
        d = box.pop()
        run_len, istep, ostep = slice_sizes[d], sstr[d], ostr[out_of[d]]
        while box and sstr[box[-1]] == run_len * istep and ostr[out_of[box[-1]]] == run_len * ostep:
            d = box.pop()
            run_len *= slice_sizes[d]
    runs_src = np.zeros(1, np.int64)
    runs_out = np.zeros(1, np.int64)
    for d in box:
        steps = np.arange(slice_sizes[d], dtype=np.int64)
        runs_src = (runs_src[:, None] + steps * sstr[d]).reshape(-1)
        runs_out = (runs_out[:, None] + steps * ostr[out_of[d]]).reshape(-1)
    bshape, rstr, bsrc = _collapse(
        [shape_out[d] for d in batch_out], [ostr[d] for d in batch_out], bsrc
    )
    src, dst = src.reshape(-1), dst.reshape(-1)
    # copy 8-byte words where every run and offset allows it (rows of 16 f32 = 8 words)
    f = 8 // src.itemsize
    if (
        f > 1
        and istep == 1
        and ostep == 1
        and run_len % f == 0
        and src.size % f == 0
        and dst.size % f == 0
        and src.ctypes.data % 8 == 0
        and dst.ctypes.data % 8 == 0
        and not any((arr % f).any() for arr in (sidx, rstr, bsrc, runs_src, runs_out))
    ):
        src, dst = src.view(np.uint64), dst.view(np.uint64)
        sidx, rstr, bsrc = sidx // f, rstr // f, bsrc // f
        runs_src, runs_out, run_len = runs_src // f, runs_out // f, run_len // f
    K.gather(
        out.size,
        _ro(src),
        _ro(idx),
        his,
        sidx,
        bshape,
        rstr,
        bsrc,
        runs_src,
        runs_out,
        run_len,
        istep,
        ostep,
        dst,
    )
    return out


@gather.defvjp
def _gather_vjp(g, out, operand, start_indices, *attributes):
    """Transpose of gather: scatter-add g into zeros with the mirrored dimension numbers,
    the start indices pre-clamped (gather clamps, scatter would skip)."""
    x, si, p = _gather_args(operand, start_indices, *attributes)
    zeros = _H.zeros_like(x)
    if any(p.slice_sizes[d] == 0 for d in p.collapsed + p.obd):
        return zeros, None
    his = np.array([x.shape[d] - p.slice_sizes[d] for d in p.start_index_map], np.int64)
    if si.device != "cpu":  # clamped where the indices live (by the device's kernels)
        clamped = _clamped_starts(si, his, p.ivd)
    elif p.ivd == si.ndim:
        idx = _index_array(si)
        clamped = _wrap(np.clip(idx, 0, his[0] if len(his) else 0), as_dtype("i64"))
    else:
        idx = _index_array(si)
        shape = [1] * idx.ndim
        shape[p.ivd] = len(his)
        clamped = _wrap(np.clip(idx, 0, his.reshape(shape)), as_dtype("i64"))
    from .elementwise import add

    return scatter(
        zeros,
        clamped,
        g,
        p.offset_dims,
        p.collapsed,
        p.start_index_map,
        p.ivd,
        update_computation=add,
        input_batching_dims=p.obd,
        scatter_indices_batching_dims=p.sibd,
    ), None


def _clamped_starts(si, his, ivd):
    """Start indices ``si`` (on a device) with component k clamped to [0, his[k]] by xops
    ops, in si's own type (a bound past the type's range is the type's maximum)."""
    dt = si._dtype
    hi = np.array([min(int(h), dt.max) for h in his], dt.np)
    hi = _wrap(hi if ivd < si.ndim else hi.reshape(()), dt).to(si.device)  # (K values)
    hi = _op.broadcast_in_dim(hi, [ivd] if ivd < si.ndim else [], list(si.shape))
    return _op.clamp(_H.zeros_like(si), si, hi)


def _collapse(shape, *strides):
    """Merge adjacent dims whose strides (in every stride list) are row-major consistent,
    so that most batch shapes reach the kernels as one dim; int64 arrays out."""
    shape, strides = list(shape), [list(s) for s in strides]
    j = len(shape) - 2
    while j >= 0:
        if all(s[j] == s[j + 1] * shape[j + 1] for s in strides):
            shape[j] *= shape[j + 1]
            for s in strides:
                s[j] = s[j + 1]
                del s[j + 1]
            del shape[j + 1]
        j -= 1
    return (_i64(shape), *[_i64(s) for s in strides])


def gather_reference(*args, **kwargs):
    """The spec's formula, one result element at a time (test oracle; slow). Takes
    gather's arguments."""
    x, si, p = _gather_args(*bound_arguments(gather, args, kwargs).values())
    operand_v, indices = x._value, compute(si)
    result = np.zeros(p.result_shape, x._dtype.np)
    if any(p.slice_sizes[d] == 0 for d in p.collapsed + p.obd):
        return _wrap(result, x._dtype)  # operand_index names no element: zeros, as gather
    batch_dims = [d for d in range(len(p.result_shape)) if d not in p.offset_dims]
    ivd = p.ivd
    for result_index in np.ndindex(*p.result_shape):
        batch_index = [result_index[d] for d in batch_dims]
        if ivd < si.ndim:
            start_index = [
                int(indices[tuple(batch_index[:ivd] + [k] + batch_index[ivd:])])
                for k in range(si.shape[ivd])
            ]
        else:
            start_index = [int(indices[tuple(batch_index)])]
        full_start_index = [0] * x.ndim
        for d_start, d_operand in enumerate(p.start_index_map):
            full_start_index[d_operand] = min(
                max(start_index[d_start], 0), x.shape[d_operand] - p.slice_sizes[d_operand]
            )
        full_batching_index = [0] * x.ndim
        for d_operand, d_start in zip(p.obd, p.sibd):
            full_batching_index[d_operand] = batch_index[d_start - (0 if d_start < ivd else 1)]
        offset_index = iter(result_index[d] for d in p.offset_dims)
        full_offset_index = [
            0 if d in p.collapsed or d in p.obd else next(offset_index) for d in range(x.ndim)
        ]
        operand_index = tuple(
            a + b + c for a, b, c in zip(full_start_index, full_batching_index, full_offset_index)
        )
        if all(0 <= i < n for i, n in zip(operand_index, x.shape)):
            result[result_index] = operand_v[operand_index]
    return _wrap(result, x._dtype)
