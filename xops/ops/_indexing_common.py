"""Helpers the indexing family shares (gather and scatter in :mod:`xops.ops.indexing`,
sort and top_k in :mod:`xops.ops.sorting`): attribute lists and flags, index arrays and
matrices in 64 bits, raw-bit views, variadic operands and 0-d probes for bodies.
"""

import functools
import inspect

import numpy as np

from ..kernels import pool as _pool
from ..tensor import Tensor, _wrap
from ._core import attr_bool, attr_int, attr_ints, check, check_kind, compute, operands, tstr


def _dims(op, label, name, value):
    """An index-list attribute as Python ints (an empty sequence is fine)."""
    if isinstance(value, (list, tuple)) and len(value) == 0:
        return []
    return attr_ints(op, label, name, value)


# How gather's and scatter's attributes are read, by parameter name: the others are
# dimension lists; None keeps the value as given (a body, checked with the plan)
_READERS = {
    "index_vector_dim": attr_int,
    "indices_are_sorted": attr_bool,
    "unique_indices": attr_bool,
    "update_computation": None,
}


@functools.cache
def _parameter_names(fn):
    return tuple(inspect.signature(fn).parameters)


def _read_attributes(op, fn, values):
    """The attributes ``values`` of op ``fn`` (gather, scatter: its last parameters, in
    signature order), checked and canonical (see ``_READERS``). An error names the
    attribute's input label: ``I<k>`` for the k-th parameter of ``fn``."""
    names = _parameter_names(fn)
    first = len(names) - len(values)
    out = []
    for k, (name, v) in enumerate(zip(names[first:], values), first + 1):
        read = _READERS.get(name, _dims)
        out.append(v if read is None else read(op, f"I{k}", name, v))
    return out


def _attr_key(value):
    """A hashable stand-in for an attribute value in a plan cache key: ints and bools as
    (type, value), sequences of Python ints as a tuple, callables (bodies) by identity (a
    cached plan keeps its body alive, so the id cannot be reused meanwhile); None for
    anything else (the call then is not cached)."""
    t = type(value)
    if t is int or t is bool:
        return t, value
    if t is list or t is tuple:
        return tuple(value) if all(type(v) is int for v in value) else None
    if callable(value):
        return "body", id(value)
    return None


_PLANS_MAX = 256  # plans cached per op (the cache is emptied when it is full)


def _cached_plan(cache, tensors, attributes, make):
    """``make()``, the checked plan of an op, cached on the shapes and element types of
    ``tensors`` and the ``attributes`` (a plan is a pure function of them): a repeated
    call skips the checks. Calls with an attribute that has no key are not cached."""
    key = [(t.shape, t._dtype) for t in tensors]
    for a in attributes:
        k = _attr_key(a)
        if k is None:
            return make()
        key.append(k)
    key = tuple(key)
    plan = cache.get(key)
    if plan is None:
        plan = make()
        if len(cache) >= _PLANS_MAX:
            cache.clear()
        cache[key] = plan
    return plan


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


def _check_index_vector(op, labels, indices, ivd, index_map):
    """gather's / scatter's index vector: ``indices`` = (name, index tensor), ``index_map``
    = (name, dims) of the start index map. 0 <= index_vector_dim <= rank(indices)
    (labels[0]) and the map has one entry per component of the index vector (labels[1])."""
    (iname, si), (mname, dims) = indices, index_map
    ri = si.ndim
    check(
        0 <= ivd <= ri,
        op,
        labels[0],
        lambda: f"index_vector_dim must be in [0, rank({iname})={ri}], got {ivd}",
    )
    nidx = si.shape[ivd] if ivd < ri else 1
    check(
        len(dims) == nidx,
        op,
        labels[1],
        lambda: (
            f"{mname} must have {nidx} entries (the index vector size of {iname} "
            f"{tstr(si)} at index_vector_dim={ivd}), got {dims}"
        ),
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


def _check_batching(op, labels, operand, indices, ivd, inserted, index_map):
    """gather's / scatter's batching dims: ``operand`` = (name, tensor, its batching dims),
    ``indices`` = (name, index tensor, its batching dims), ``inserted`` / ``index_map`` =
    (name, dims) of the collapsed (inserted) dims and of the index map. The operand's
    batching dims are sorted, unique (labels[0]) and in range (labels[1]) and share no
    dim with ``inserted`` (labels[2]); the index batching dims are unique and in range
    (labels[3], labels[4]), not index_vector_dim (labels[5]), as many as the operand's
    (labels[6]) and of the same sizes (labels[7]); ``index_map`` shares no dim with the
    operand's batching dims (labels[8])."""
    xname, x, bd = operand
    bname = "operand_batching_dims" if xname == "operand" else "input_batching_dims"
    rank = "rank(operand)" if xname == "operand" else "rank(inputs[0])"
    _check_dims(op, labels[:2], bname, bd, x.ndim, rank)
    _check_disjoint(op, labels[2], inserted, (bname, bd))
    _check_batched_indices(op, labels[3:8], operand, indices, ivd, bname)
    _check_disjoint(op, labels[8], index_map, (bname, bd))


def _check_batched_indices(op, labels, operand, indices, ivd, bname):
    """The index side of _check_batching (its labels[3:8])."""
    (xname, x, bd), (iname, si, sibd) = operand, indices
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
    return _as_i64(compute(t))


def _as_i64(v):
    if v.dtype == np.uint64:
        return np.minimum(v, np.uint64(2**63 - 1)).astype(np.int64)
    return v.astype(np.int64, copy=False)


def _row_indices(t):
    """The index values of a one-component index tensor (index vector of size 1, or
    implicit) as a flat array in row-major batch order, for the row kernels: int32 and
    int64 as they are (a view: no conversion pass, one kernel specialisation each),
    other integer types as _index_array's int64."""
    v = compute(t)
    if v.dtype != np.int32 and v.dtype != np.int64:
        v = _as_i64(v)
    return v.reshape(-1)


def _row_words(*arrays):
    """The widest unsigned word (8, 4, 2 or 1 bytes) that divides a row of each array
    (C-contiguous, a leading dim of rows) and its start address: rows then move as whole
    words (16 f32 = 8 uint64). Returns each array as a flat array of those words."""
    size = 8
    for a in arrays:
        row = a.nbytes // a.shape[0] if a.shape[0] else 0
        while size > 1 and (row % size or a.ctypes.data % size):
            size //= 2
    word = _UINT_BY_SIZE[size]
    return [a.reshape(-1).view(np.uint8).view(word) for a in arrays]


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
