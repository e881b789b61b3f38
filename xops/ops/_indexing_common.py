"""Helpers the indexing family shares (gather and scatter in :mod:`xops.ops.indexing`,
sort and top_k in :mod:`xops.ops.sorting`): attribute lists and flags, index arrays and
matrices in 64 bits, raw-bit views, variadic operands and 0-d probes for bodies.
"""

import numpy as np

from ..kernels import pool as _pool
from ..tensor import Tensor, _wrap
from ._core import attr_ints, check, check_kind, compute, operands, tstr


def _dims(op, label, name, value):
    """An index-list attribute as Python ints (an empty sequence is fine)."""
    if isinstance(value, (list, tuple)) and len(value) == 0:
        return []
    return attr_ints(op, label, name, value)


def _unique(xs):
    return len(set(xs)) == len(xs)


def _sorted_unique(xs):
    return all(a < b for a, b in zip(xs, xs[1:]))


def _check_dims(op, labels, name, dims, rank, of, ordered=True):
    """``dims`` unique (and sorted if ``ordered``: labels[0]) and in [0, rank) (labels[1];
    ``of`` names the rank)."""
    check(
        _sorted_unique(dims) if ordered else _unique(dims),
        op,
        labels[0],
        lambda: f"{name} must be unique{' and sorted' if ordered else ''}, got {dims}",
    )
    check(
        all(0 <= d < rank for d in dims),
        op,
        labels[1],
        lambda: f"{name} {dims} must be in [0, {of}={rank})",
    )


def _check_rank(op, label, operand, r, parts):
    """(gather C1, scatter C2) rank(``operand``) ``r`` is the sum of the sizes of the
    dimension lists ``parts``, (name, dims) pairs."""
    check(
        r == sum(len(dims) for _, dims in parts),
        op,
        label,
        lambda: (
            f"rank({operand})={r} must equal "
            + " + ".join(f"size({name})={len(dims)}" for name, dims in parts)
        ),
    )


def _check_disjoint(op, label, first, second):
    """Two dimension-list attributes, each a (name, dims) pair, share no dimension."""
    (name_a, a), (name_b, b) = first, second
    check(not set(a) & set(b), op, label, lambda: f"{name_a} {a} and {name_b} {b} must not overlap")


def _check_batching(op, labels, operand, indices, ivd):
    """gather's / scatter's batching dims: ``operand`` = (name, tensor, its batching dims),
    ``indices`` = (name, index tensor, its batching dims). The index batching dims are
    unique and in range (labels[0], labels[1]), not index_vector_dim (labels[2]), as many
    as the operand's (labels[3]) and of the same sizes (labels[4])."""
    (xname, x, bd), (iname, si, sibd) = operand, indices
    bname = "operand_batching_dims" if xname == "operand" else "input_batching_dims"
    sname = f"{iname}_batching_dims"
    _check_dims(op, labels[:2], sname, sibd, si.ndim, f"rank({iname})", ordered=False)
    check(
        ivd not in sibd,
        op,
        labels[2],
        lambda: f"{sname} {sibd} must not contain index_vector_dim={ivd}",
    )
    check(
        len(bd) == len(sibd),
        op,
        labels[3],
        lambda: f"{bname} {bd} and {sname} {sibd} must have the same size",
    )
    check(
        [x.shape[a] for a in bd] == [si.shape[b] for b in sibd],
        op,
        labels[4],
        lambda: (
            f"{xname} {tstr(x)} dims {bd} and {iname} {tstr(si)} dims {sibd} "
            f"must have the same sizes"
        ),
    )


def _strides(shape):
    """C-order element strides of ``shape``."""
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * max(int(shape[d + 1]), 1)
    return out


def _prod(xs):
    return int(np.prod(xs, dtype=np.int64)) if len(xs) else 1


def _i64(xs):
    return np.asarray(xs, dtype=np.int64).reshape(-1)


def _index_array(t):
    """An integer tensor's values as int64; uint64 values above the int64 range saturate
    to int64 max (out of bounds either way, and clamped alike)."""
    v = compute(t)
    if v.dtype == np.uint64:
        return np.minimum(v, np.uint64(2**63 - 1)).astype(np.int64)
    return v.astype(np.int64, copy=False)


def _index_matrix(t, index_vector_dim):
    """start/scatter indices as an (nb, K) C-contiguous int64 matrix (the index vector dim
    last; an implicit trailing 1 when index_vector_dim == rank), and the batch shape.
    Values as _index_array's; the matrix comes from the buffer pool (a temporary).
    int32 indices stay int32 (a view where the layout allows): the kernels read them as
    they are (one more specialisation each) instead of after a serial conversion pass
    (0.1 ms per 100k indices)."""
    v = compute(t)
    if index_vector_dim == v.ndim:
        v = v[..., None]
    else:
        v = np.moveaxis(v, index_vector_dim, -1)
    batch = v.shape[:-1]
    shape = (_prod(batch), v.shape[-1])
    if v.dtype == np.int32:
        return np.ascontiguousarray(v.reshape(shape)), batch
    out = _pool.empty(shape, np.int64)
    if v.dtype == np.uint64:
        np.minimum(v, np.uint64(2**63 - 1), out=out.reshape(v.shape), casting="unsafe")
    else:
        np.copyto(out.reshape(v.shape), v, casting="unsafe")
    return out, batch


_UINT_BY_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(a):
    """A holder array as unsigned integers of its item size (C-contiguous, a view where
    possible); 16-byte items become pairs of uint64 (a trailing dim of 2)."""
    if not a.flags.c_contiguous:
        a = a.copy()  # (np.ascontiguousarray would make a 0-d array 1-d)
    if a.dtype.itemsize == 16:
        return a.reshape(a.shape + (1,)).view(np.uint64)  # (reshape first: 0-d too)
    return a.view(_UINT_BY_SIZE[a.dtype.itemsize])


def _ro(a):
    """``a`` typed as read-only for Numba: kernel inputs that are sometimes views of a
    tensor's (read-only) data and sometimes fresh arrays always get one type, so each
    kernel compiles once per element type, not twice."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _int_tensor_check(op, label, name, t):
    check_kind(op, label, name, t, ("si", "ui"), "integer")


def _is_array(v):
    return isinstance(v, (Tensor, np.ndarray, np.generic))


def _variadic(op, value, name):
    """(list of Tensors, was_sequence) from one operand or a sequence of operands."""
    if isinstance(value, (list, tuple)) and (not value or all(_is_array(v) for v in value)):
        items = list(value)
        seq = True
    else:
        items = [value]
        seq = False
    ts = operands(op, *items, names=[f"{name}[{i}]" for i in range(len(items))]) if items else []
    return ts, seq


def _zero_d(t):
    """A 0-d tensor of t's element type holding t's first element (0 if t is empty)."""
    if t.size:
        return _wrap(np.ascontiguousarray(t._value.reshape(-1)[:1]).reshape(()), t._dtype)
    return _wrap(np.zeros((), t._dtype.np), t._dtype)
