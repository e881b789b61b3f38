"""Gradient rules of scatter and sort for tensors on a device (CUDA), built from ops only.

The CPU rules (:func:`xops.ops.scatter._scatter_vjp`, :func:`xops.ops.sorting._sort_vjp`)
find the scatter targets and the sort permutation on the host with NumPy. For tensors on
a device that would be a hidden round trip, so these rules compute the same cotangents
with ops that run where the tensors live (iota, broadcast_in_dim, add, multiply,
compare, and, select, gather, scatter, sort); every index tensor stays on the device.
"""

from ..autodiff import helpers as _H
from ..device import default_device
from ..dtypes import as_dtype
from ..registry import op as _op

__all__ = ["scatter_targets", "scatter_grads", "sort_grads", "unpermute"]

_I64 = as_dtype("i64")


def _iota(dimension, shape, ref):
    """iota (i64) along ``dimension`` of ``shape``, on ``ref``'s device."""
    with default_device(ref.device):
        return _op.iota(dimension, list(shape), "i64")


def _full(value, shape, ref):
    """An i64 tensor of ``shape`` filled with ``value``, on ``ref``'s device."""
    return _op.broadcast_in_dim(_H._on(_op.constant(value, _I64), ref), [], list(shape))


def _and(a, b):
    return getattr(_op, "and")(a, b)


def scatter_targets(shape, si, ushape, p):
    """The flat (row-major) operand position each update element of a scatter writes, -1
    where it falls outside the operand (the spec's formula, elementwise): an i64 tensor
    of the updates' shape on ``si``'s device. ``p``: scatter's checked plan."""
    usd = [d for d in range(len(ushape)) if d not in p.uwd]
    s = si if si.dtype == _I64 else _op.convert(si, _I64)
    if p.ivd < si.ndim:  # the index vector dim last
        perm = [d for d in range(si.ndim) if d != p.ivd] + [p.ivd]
        s = s if perm == list(range(si.ndim)) else _op.transpose(s, perm)
    else:
        s = _op.reshape(s, list(si.shape) + [1])
    lead = list(s.shape[:-1])
    wdims = [d for d in range(len(shape)) if d not in p.iwd and d not in p.ibd]
    flat = ok = None
    stride = 1
    for o in reversed(range(len(shape))):
        parts = []
        if o in p.sdod:  # the start index's component for dim o
            k = p.sdod.index(o)
            col = _op.slice(s, [0] * len(lead) + [k], lead + [k + 1], [1] * s.ndim)
            parts.append(_op.broadcast_in_dim(_op.reshape(col, lead), usd, list(ushape)))
        if o in p.ibd:  # a batching dim: the index along its scatter dim
            c = p.sibd[p.ibd.index(o)]
            parts.append(_iota(usd[c - (0 if c < p.ivd else 1)], ushape, si))
        if o in wdims:  # a window dim: the index along its update window dim
            parts.append(_iota(p.uwd[wdims.index(o)], ushape, si))
        if parts:
            idx = parts[0]
            for q in parts[1:]:
                idx = _op.add(idx, q)
            inside = _and(_op.compare(idx, 0, "GE"), _op.compare(idx, shape[o], "LT"))
            ok = inside if ok is None else _and(ok, inside)
            term = idx if stride == 1 else _op.multiply(idx, stride)
            flat = term if flat is None else _op.add(flat, term)
        stride *= shape[o]
    if flat is None:  # (every index component is 0: always inside)
        return _full(0, ushape, si)
    return _op.select(ok, flat, _full(-1, ushape, si))


def _second(a, b):
    return b


def _pick(t, positions):
    """``t`` (1-D) at the 1-D i64 ``positions`` (in range): a gather of single elements."""
    n = positions.shape[0]
    return _op.gather(t, _op.reshape(positions, [n, 1]), [], [0], [0], 1, [1])


def scatter_grads(scatter, g, x, u, si, p, body):
    """(d input, d updates) of a one-input scatter with an ``add`` or ``overwrite``
    ``body`` for tensors on a device, as the CPU rule gives them: updates get g at their
    targets (0 outside the operand; overwrite: only the last write to a target); the
    input gets g (overwrite: 0 where something was written). ``scatter``: the op."""
    tgt = _op.reshape(scatter_targets(x.shape, si, u.shape, p), [u.size])
    inside = _op.compare(tgt, 0, "GE")
    safe = _op.maximum(tgt, 0)
    picked = _pick(_op.reshape(g, [x.size]), safe)
    keep = inside
    dx = g
    if body == "overwrite":  # the winner of each target: the last update element there
        ids = _iota(0, [u.size], si)
        idx = _op.reshape(tgt, [u.size, 1])
        won = scatter(
            _full(-1, [x.size], si), idx, ids, [], [0], [0], 1, update_computation=_second
        )
        keep = _and(inside, _op.compare(_pick(won, safe), ids, "EQ"))
        written = _op.reshape(_op.compare(won, 0, "GE"), list(x.shape))
        dx = _op.select(written, _H.zeros_like(x), g)
    du = _op.select(keep, picked, _H.zeros_like(picked))
    return dx, _op.reshape(du, list(u.shape))


_COMPARATORS = {}


def _comparator(direction, compare_type):
    """``compare(lhs_0, rhs_0, direction, compare_type)`` over two operands (four
    parameters), written out so that sort recognises it (a closure would not be read)."""
    key = (direction, compare_type)
    fn = _COMPARATORS.get(key)
    if fn is None:
        src = f"def cmp(a, b, c, d):\n    return compare(a, b, {direction!r}, {compare_type!r})\n"
        scope = {"compare": _op.compare}
        exec(compile(src, "<xops sort comparator>", "exec"), scope)
        fn = _COMPARATORS[key] = scope["cmp"]
    return fn


def sort_grads(sort, xs, gs, dim, plan):
    """The cotangents of sort's inputs (None for non-float ones or where ``gs`` has
    None) for tensors on a device: each g un-permuted, a batched gather at the inverse
    of the sort permutation. The permutation is an iota sorted stably along ``dim`` with
    the first input as key (``plan``: the comparator's (direction, compare type) as the
    sort kernels read it); its inverse, the iota sorted by it. ``sort``: the op."""
    x0 = xs[0]
    it = _iota(dim, x0.shape, x0)
    cmp = None if plan[1] == "DEFAULT_TOTAL" else _comparator(*plan)
    perm = sort([x0, it], dim, True, cmp)[1]
    inv = sort([perm, it], dim, True)[1]
    return unpermute(xs, gs, _op.reshape(inv, list(x0.shape) + [1]), dim)


def sort_grads_generic(sort, xs, gs, dim, cmp):
    """:func:`sort_grads` for any comparator ``cmp``: the permutation is an iota sorted
    stably along ``dim`` as the last passenger of every input (the comparator reads the
    inputs only), as the CPU rule finds it."""
    x0 = xs[0]
    it = _iota(dim, x0.shape, x0)

    def with_iota(*args):
        return cmp(*args[:-2])

    perm = sort(list(xs) + [it], dim, True, with_iota)[-1]
    inv = sort([perm, it], dim, True)[1]
    return unpermute(xs, gs, _op.reshape(inv, list(x0.shape) + [1]), dim)


def unpermute(xs, gs, idx, dim):
    """Sort's cotangents (the CPU rule's too): each float input's g gathered along
    ``dim`` at ``idx`` (the inverse permutation with a trailing dim of 1), batched over
    the other dims; None for other inputs and a None g."""
    r = xs[0].ndim
    others = [d for d in range(r) if d != dim]
    grads = []
    for x, gi in zip(xs, gs):
        if gi is None or x._dtype.kind not in ("float", "complex"):
            grads.append(None)
            continue
        grads.append(
            _op.gather(
                gi,
                idx,
                [],
                [dim],
                [dim],
                r,
                [1] * r,
                operand_batching_dims=others,
                start_indices_batching_dims=others,
            )
        )
    return grads
