"""Data-movement ops: constant, iota, broadcast_in_dim, reshape, transpose, slice,
dynamic_slice, dynamic_update_slice, pad, concatenate, reverse, get_dimension_size,
and XLA's Broadcast, Collapse and SetDimensionSize.

These ops never compute on element values: they move the holder arrays (``t._value``)
around, so every element type of :func:`xops.all_dtypes` works the same way and no
value is ever converted or rounded (NaN payloads, signed zeros and sub-byte integers
come through bit for bit). Where NumPy can express the result as a view of the operand
(transpose, slice, reverse, reshape, broadcast) the result *is* a read-only view:
tensors are immutable values, so sharing memory is safe. A consequence for kernel
authors: ``t._value`` need not be C-contiguous (it may have negative or zero strides);
call ``np.ascontiguousarray`` before handing it to a kernel that needs contiguity.

Constraint labels are those of the StableHLO spec (shared/seeds/004). "I<n>" labels an
input of the wrong kind where the spec has no C-label for it. The XLA-only ops
(broadcast, collapse, set_dimension_size, reshape's ``dimensions``) have no spec
labels; their docstrings list the labels xops uses.

Gradients: every op here is a tape primitive (:mod:`xops.autodiff`). The rules are the
transposes, written with these same ops (so they record too, and higher orders work):
broadcast_in_dim sums over the added and expanded dims (``reduce`` with ``add``) and
undoes its dim mapping; slice pads the cotangent back; pad slices it (re-padding where
negative edge padding cut elements) and gives padding_value the sum over the padding
positions; dynamic_slice / dynamic_update_slice use the same clamped start indices;
iota and get_dimension_size have no float result and never record; constant of a
tensor is a copy (identity rule).
"""

import builtins

import numpy as np

from ..autodiff.helpers import needs as _needs, sum as _sum, zeros as _zeros
from ..autodiff.tape import keep, primitive
from ..dtypes import as_dtype, from_compute
from ..limits import check_nbytes
from ..registry import op as _op  # ops of the families above this one, by name
from ..tensor import Tensor, _default_dtype, _wrap, typestr
from ._core import SpecError, as_tensor, attr_int, attr_ints, check, operands, tstr

__all__ = [
    "constant",
    "iota",
    "broadcast_in_dim",
    "broadcast",
    "reshape",
    "collapse",
    "transpose",
    "slice",
    "dynamic_slice",
    "dynamic_update_slice",
    "pad",
    "concatenate",
    "reverse",
    "get_dimension_size",
    "set_dimension_size",
]

_S = builtins.slice  # this module defines its own `slice` op


# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------


def _operand(op, x, name="operand"):
    (t,) = operands(op, x, names=[name])
    return t


def _shape_attr(op, label, name, value):
    """A result shape given as an attribute: a list of non-negative Python ints."""
    dims = attr_ints(op, label, name, value)
    check(
        all(d >= 0 for d in dims),
        op,
        label,
        lambda: f"{name} must have non-negative entries, got {dims}",
    )
    return dims


def _index_list(op, label, name, value):
    """An index-list attribute (dimensions, indices) as Python ints."""
    return attr_ints(op, label, name, value)


def _is_permutation(perm, rank):
    return sorted(perm) == list(range(rank))


def _int_value(t):
    """The Python int held by a 0-d integer tensor (exact for every width)."""
    return int(t._value.astype(t._dtype.compute).item())


# -- gradient-rule helpers (rules are written with xops ops, so they record too; _needs,
# _zeros and _sum are xops.autodiff.helpers') --------------------------------------------


def _shape(a):
    return a.shape if isinstance(a, Tensor) else np.shape(a)


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


# ---------------------------------------------------------------------------------------
# constant
# ---------------------------------------------------------------------------------------


@primitive("constant")
def constant(value, dtype=None):
    """stablehlo.constant: a tensor from a literal ``value``.

    ``value`` is a Tensor, a NumPy array or scalar, or a (nested) Python literal;
    ``dtype`` is any name :func:`xops.as_dtype` accepts. (C1) type(value) = type(output):
    a Tensor or NumPy value keeps its own element type and a different ``dtype`` is an
    error (use ``xo.convert``); a Python literal must be representable in ``dtype``
    (integers in range, no floats for integer types, no complex for real types, 0/1 or
    bools for i1), floats round to nearest even as the literal parser does. Without
    ``dtype`` Python literals follow :func:`xops.tensor` (int -> i64, float -> f32,
    bool -> i1, complex -> c64).

    >>> xo.constant([[0.0, 1.0], [2.0, 3.0]], "f32")   # f32[2,2]
    xo.tensor([[0., 1.],
               [2., 3.]], f32[2,2])
    """
    op = "constant"
    want = None
    if dtype is not None:
        try:
            want = as_dtype(dtype)
        except TypeError as e:
            raise SpecError(op, "C1", str(e)) from None
    if isinstance(value, Tensor):
        check(
            want is None or value._dtype == want,
            op,
            "C1",
            lambda: (
                f"value has type {tstr(value)} but the output type asks for "
                f"{want.name}; convert with xo.convert"
            ),
        )
        return _wrap(value._value, value._dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        try:
            have = as_dtype(value.dtype)
        except TypeError as e:
            raise SpecError(op, "I1", str(e)) from None
        check(
            want is None or have is want,
            op,
            "C1",
            lambda: (
                f"value has type {typestr(have, np.shape(value))} but the output type "
                f"asks for {want.name}; use xo.tensor(value, dtype) to convert host data"
            ),
        )
        return _wrap(np.array(value, copy=True), have)
    return _literal(op, value, want)


@constant.defvjp
def _constant_vjp(g, out, value, dtype):
    return (g,)  # constant(t) of a tensor is a copy of it


def _literal(op, value, want):
    """A Python (nested) literal as a tensor of ``want`` (or of its default type)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise SpecError(op, "I1", f"value must be a literal, got {value!r:.60}: {e}") from None
    if arr.dtype == object:
        flat = arr.reshape(-1).tolist()
        if flat and all(_is_py_int(v) for v in flat):  # Python ints beyond 64 bits
            dt = want or as_dtype("i64")
            raise SpecError(
                op,
                "C1",
                f"integer literal {max(flat, key=builtins.abs)} is out of range for {dt.name}",
            )
        raise SpecError(
            op, "I1", f"value must be a rectangular literal of numbers, got {value!r:.60}"
        )
    if arr.dtype.kind not in "biufc":
        raise SpecError(op, "I1", f"value must be a literal of numbers, got {arr.dtype} data")
    dt = want if want is not None else _default_dtype(value)
    if arr.size == 0:  # an empty literal has no values to check: [[]] etc.
        return _wrap(np.empty(arr.shape, dt.np), dt)
    k = arr.dtype.kind
    if dt.kind == "bool":
        ok = k == "b" or (k in "iu" and bool(np.all((arr == 0) | (arr == 1))))
        check(ok, op, "C1", lambda: f"i1 constants take booleans (or 0/1), got {arr.dtype} values")
        return _wrap(arr.astype(np.bool_), dt)
    check(k != "b", op, "C1", lambda: f"a boolean literal cannot be a {dt.name} constant")
    if dt.kind in ("si", "ui"):
        check(
            k in "iu",
            op,
            "C1",
            lambda: f"{dt.name} constants take integer literals, got {arr.dtype} values",
        )
        lo, hi = int(arr.min()), int(arr.max())
        check(
            dt.min <= lo and hi <= dt.max,
            op,
            "C1",
            lambda: (
                f"integer literal {lo if lo < dt.min else hi} is out of range for "
                f"{dt.name} [{dt.min}, {dt.max}]"
            ),
        )
        wide = np.uint64 if k == "u" else np.int64
        return _wrap(arr.astype(wide).astype(dt.np), dt)
    if dt.kind == "float":
        check(k != "c", op, "C1", lambda: f"a complex literal cannot be a {dt.name} constant")
        with np.errstate(over="ignore"):
            return _wrap(from_compute(arr.astype(np.float64), dt).reshape(arr.shape), dt)
    with np.errstate(over="ignore"):
        return _wrap(arr.astype(dt.np).reshape(arr.shape), dt)


# ---------------------------------------------------------------------------------------
# iota
# ---------------------------------------------------------------------------------------


@primitive("iota")
def iota(iota_dimension, shape, dtype="i64"):
    """stablehlo.iota: a tensor of ``shape`` counting 0, 1, 2, ... along
    ``iota_dimension`` (C1: 0 <= iota_dimension < rank).

    The element type is an integer, floating-point or complex type (i1 is not an
    integer type in the spec: I3). For floats the value is convert(integer index), so
    narrow types round to nearest even (a bf16 iota repeats values past 256, an
    f8E4M3FN one is NaN past 464); complex types give index + 0i; quantized types
    quantize(index).

    >>> xo.iota(1, [2, 3], "i32")   # [[0, 1, 2], [0, 1, 2]]
    xo.tensor([[0, 1, 2],
               [0, 1, 2]], i32[2,3])
    """
    op = "iota"
    d = attr_int(op, "I1", "iota_dimension", iota_dimension)
    dims = _shape_attr(op, "I2", "shape", shape)
    try:
        dt = as_dtype(dtype)
    except TypeError as e:
        raise SpecError(op, "I3", str(e)) from None
    if dt.quantized:  # quantize(index) in the quantized type (an op of a family above)
        return _op.uniform_quantize(iota(d, dims, dt.expressed_type), dt)
    check(
        dt.kind in ("si", "ui", "float", "complex"),
        op,
        "I3",
        lambda: (
            f"the output element type must be an integer, floating-point, complex "
            f"or quantized type, got {dt.name}"
        ),
    )
    check(
        0 <= d < len(dims),
        op,
        "C1",
        lambda: f"iota_dimension must be in [0, rank={len(dims)}), got {d}",
    )
    check_nbytes(op, dims, dt)
    n = dims[d]
    if 0 in dims:  # empty: no index line either (it could be 2**62 long)
        return _wrap(np.empty(dims, dt.np), dt)
    if dt.kind in ("si", "ui"):
        check(
            n == 0 or n - 1 <= dt.max,
            op,
            "I2",
            lambda: f"an iota of length {n} does not fit in {dt.name} (max {dt.max})",
        )
        line = np.arange(n, dtype=np.int64 if dt.kind == "si" else np.uint64).astype(dt.np)
    elif dt.kind == "float":
        line = from_compute(np.arange(n, dtype=np.float64), dt)
    else:
        line = np.arange(n, dtype=np.float64).astype(dt.np)
    view = [1] * len(dims)
    view[d] = n
    return _wrap(np.ascontiguousarray(np.broadcast_to(line.reshape(view), dims)), dt)


# ---------------------------------------------------------------------------------------
# broadcast_in_dim, broadcast (XLA)
# ---------------------------------------------------------------------------------------


@primitive("broadcast_in_dim", quantized="storage", quantized_params=("operand",))
def broadcast_in_dim(operand, broadcast_dimensions, shape):
    """stablehlo.broadcast_in_dim: operand dim d becomes result dim
    broadcast_dimensions[d]; the other result dims repeat the data.

    (C2) one entry per operand dim; (C3) entries in [0, rank(result)); (C4) unique —
    not necessarily sorted: [2, 1] also transposes; (C5) each operand dim is 1 or equals
    the result dim it maps to. The result is a read-only stride-0 view (no copy).

    >>> xo.broadcast_in_dim(xo.tensor([[1, 2, 3]], "i32"), [2, 1], [2, 3, 2]).tolist()
    [[[1, 1], [2, 2], [3, 3]], [[1, 1], [2, 2], [3, 3]]]
    """
    op = "broadcast_in_dim"
    x = _operand(op, operand)
    bd = _index_list(op, "I2", "broadcast_dimensions", broadcast_dimensions)
    dims = _shape_attr(op, "I3", "shape", shape)
    r, rr = x.ndim, len(dims)
    check(
        len(bd) == r,
        op,
        "C2",
        lambda: f"broadcast_dimensions must have rank(operand)={r} entries, got {bd}",
    )
    check(
        all(0 <= b < rr for b in bd),
        op,
        "C3",
        lambda: f"broadcast_dimensions must be in [0, rank(result)={rr}), got {bd}",
    )
    check(
        len(set(bd)) == len(bd), op, "C4", lambda: f"broadcast_dimensions must be unique, got {bd}"
    )
    for k, b in enumerate(bd):
        check(
            x.shape[k] in (1, dims[b]),
            op,
            "C5",
            lambda: (
                f"operand dim {k} has size {x.shape[k]}, which must be 1 or equal "
                f"result dim {b} of size {dims[b]} (operand {tstr(x)}, shape {dims})"
            ),
        )
    check_nbytes(op, dims, x._dtype)  # (a stride-0 view, but every consumer allocates)
    keep(op, broadcast_dimensions=bd, shape=dims)
    order = sorted(range(r), key=lambda k: bd[k])  # operand dims in result order
    v = np.transpose(x._value, order)
    view = [1] * rr
    for k in order:
        view[bd[k]] = x.shape[k]
    return _wrap(np.broadcast_to(v.reshape(view), dims), x._dtype)


@broadcast_in_dim.defvjp
def _broadcast_in_dim_vjp(g, out, operand, broadcast_dimensions, shape):
    # sum over the added dims and the size-1 operand dims that were expanded, then
    # undo the (possibly transposing) dim mapping and restore the size-1 dims
    x, bd = operand, broadcast_dimensions  # (kept parsed by the op: a list of ints)
    kept = [k for k in range(x.ndim) if x.shape[k] == out.shape[bd[k]]]
    keep = {bd[k] for k in kept}
    # size-1 result dims need no sum: the reshapes below drop / restore them
    g = _sum(g, [d for d in range(out.ndim) if d not in keep and out.shape[d] != 1])
    order = sorted(kept, key=lambda k: bd[k])  # operand dims in g's dim order
    perm = [order.index(k) for k in kept]
    if perm != sorted(perm):
        squeezed = [x.shape[k] for k in order]
        if g.shape != builtins.tuple(squeezed):
            g = reshape(g, squeezed)
        g = transpose(g, perm)
    if g.shape != x.shape:
        g = reshape(g, x.shape)
    return (g,)


@primitive("broadcast", quantized="storage", quantized_params=("operand",), spec="xla")
def broadcast(operand, broadcast_sizes):
    """XLA Broadcast: prepends dims of ``broadcast_sizes``:
    result[i0..iN, j0..jM] = operand[j0..jM]. A read-only stride-0 view.
    xops label: (C1) broadcast_sizes must be non-negative.

    >>> xo.broadcast(xo.tensor(2.0), [2, 3])   # f32[2,3] of 2.0
    xo.tensor([[2., 2., 2.],
               [2., 2., 2.]], f32[2,3])
    """
    op = "broadcast"
    x = _operand(op, operand)
    sizes = attr_ints(op, "I2", "broadcast_sizes", broadcast_sizes)
    check(
        all(s >= 0 for s in sizes),
        op,
        "C1",
        lambda: f"broadcast_sizes must be non-negative, got {sizes}",
    )
    check_nbytes("broadcast", (*sizes, *x.shape), x._dtype)
    return _wrap(np.broadcast_to(x._value, (*sizes, *x.shape)), x._dtype)


@broadcast.defvjp
def _broadcast_vjp(g, out, operand, broadcast_sizes):
    return (_sum(g, list(range(out.ndim - operand.ndim))),)


# ---------------------------------------------------------------------------------------
# reshape, collapse (XLA), transpose
# ---------------------------------------------------------------------------------------


@primitive("reshape", quantized="storage", quantized_params=("operand",))
def reshape(operand, shape, dimensions=None):
    """stablehlo.reshape: the operand's elements in row-major (lexicographic) order,
    laid out in ``shape``. (C2) size(operand) = size(result); there is no -1 wildcard.

    XLA's ``Reshape(operand, dimensions, new_sizes)`` form: ``dimensions`` (a
    permutation of the operand dims, xops label I3) is the order in which the operand
    dims are visited, i.e. the operand is first ``transpose``d by it.

    >>> xo.reshape(xo.tensor([[1, 2, 3], [4, 5, 6]], "i32"), [3, 2])   # [[1, 2], [3, 4], [5, 6]]
    xo.tensor([[1, 2],
               [3, 4],
               [5, 6]], i32[3,2])
    """
    op = "reshape"
    x = _operand(op, operand)
    dims = attr_ints(op, "I2", "shape", shape)
    check(
        all(d >= 0 for d in dims),
        op,
        "C2",
        lambda: (
            f"shape must have non-negative entries (there is no -1 wildcard; give the "
            f"full result shape), got {dims}"
        ),
    )
    n = 1
    for d in dims:
        n *= d
    check(
        n == x.size,
        op,
        "C2",
        lambda: (
            f"size(operand)={x.size} must equal size(result)={n}: cannot reshape "
            f"{tstr(x)} to {dims}"
        ),
    )
    v = x._value
    if dimensions is not None:
        perm = attr_ints(op, "I3", "dimensions", dimensions)
        check(
            _is_permutation(perm, x.ndim),
            op,
            "I3",
            lambda: f"dimensions must be a permutation of [0, {x.ndim}), got {perm}",
        )
        v = np.transpose(v, perm)
        keep(op, shape=dims, dimensions=perm)
    return _wrap(v.reshape(dims), x._dtype)


@reshape.defvjp
def _reshape_vjp(g, out, operand, shape, dimensions):
    x = operand
    if dimensions is None:
        return (reshape(g, x.shape),)
    perm = dimensions  # (kept parsed by the op: a list of ints)
    g = reshape(g, [x.shape[p] for p in perm])
    return (transpose(g, _inverse(perm)) if perm != sorted(perm) else g,)


@primitive("collapse", quantized="storage", quantized_params=("operand",), spec="xla")
def collapse(operand, dimensions):
    """XLA Collapse: replaces the consecutive, increasing operand dims ``dimensions`` by
    one dim (at their place) whose size is their product — a row-major reshape.
    xops label: (C1) dimensions must be consecutive, increasing and in range ({0, 1} ok,
    {1, 0} and {0, 2} not). An empty ``dimensions`` leaves the operand unchanged.

    >>> xo.collapse(xo.iota(0, [4, 2, 3], "f32"), [0, 1]).shape   # (8, 3)
    (8, 3)
    """
    op = "collapse"
    x = _operand(op, operand)
    dims = attr_ints(op, "I2", "dimensions", dimensions)
    ok = all(0 <= d < x.ndim for d in dims) and all(b == a + 1 for a, b in zip(dims, dims[1:]))
    check(
        ok,
        op,
        "C1",
        lambda: (
            f"dimensions must be consecutive increasing dims of rank-{x.ndim} operand "
            f"{tstr(x)}, got {dims}"
        ),
    )
    if not dims:
        return _wrap(x._value, x._dtype)
    lo, hi = dims[0], dims[-1] + 1
    n = 1
    for d in x.shape[lo:hi]:
        n *= d
    return _wrap(x._value.reshape(x.shape[:lo] + (n,) + x.shape[hi:]), x._dtype)


@collapse.defvjp
def _collapse_vjp(g, out, operand, dimensions):
    return (reshape(g, operand.shape),)


@primitive("transpose", quantized="storage", quantized_params=("operand",))
def transpose(operand, permutation):
    """stablehlo.transpose: result dim d is operand dim permutation[d] (as
    ``np.transpose``; C3). (C2) permutation is a permutation of range(rank(operand)).
    The result is a read-only view.

    >>> xo.transpose(xo.tensor([[1, 2, 3]], "i32"), [1, 0])   # [[1], [2], [3]]
    xo.tensor([[1],
               [2],
               [3]], i32[3,1])
    """
    op = "transpose"
    x = _operand(op, operand)
    perm = _index_list(op, "I2", "permutation", permutation)
    check(
        _is_permutation(perm, x.ndim),
        op,
        "C2",
        lambda: f"permutation must be a permutation of range(rank(operand)={x.ndim}), got {perm}",
    )
    keep(op, permutation=perm)
    return _wrap(np.transpose(x._value, perm), x._dtype)


@transpose.defvjp
def _transpose_vjp(g, out, operand, permutation):
    return (transpose(g, _inverse(permutation)),)  # (kept parsed by the op)


# ---------------------------------------------------------------------------------------
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


def _is_py_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


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
    adj = _clamped(starts, x.shape, u.shape)
    out = x._value.copy()
    out[builtins.tuple(_S(a, a + n) for a, n in zip(adj, u.shape))] = u._value
    return _wrap(out, x._dtype)


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
    op = "pad"
    x, pv = operands(op, operand, padding_value, names=["operand", "padding_value"])
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
    keep(op, edge_padding_low=low, edge_padding_high=high, interior_padding=inner)
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
        mask = pad(_zeros(shape, dt), constant(1, dt), low, high, inner)
        g_value = _sum(_op.multiply(g, mask), list(range(r)))
    return g_operand, g_value


# ---------------------------------------------------------------------------------------
# concatenate, reverse
# ---------------------------------------------------------------------------------------


@primitive("concatenate", quantized="storage", quantized_params=("inputs",))
def concatenate(inputs, dimension):
    """stablehlo.concatenate: ``inputs`` joined along ``dimension`` in order.

    (C1) one element type; (C2) equal shapes except along ``dimension``; (C3) at least
    one input; (C4) 0 <= dimension < rank(inputs[0]) (so no 0-d inputs).

    >>> xo.concatenate([xo.tensor([[1, 2], [3, 4], [5, 6]]), xo.tensor([[7, 8]])], 0)
    ... # [[1, 2], [3, 4], [5, 6], [7, 8]]
    xo.tensor([[1, 2],
               [3, 4],
               [5, 6],
               [7, 8]], i64[4,2])
    """
    op = "concatenate"
    if isinstance(inputs, (Tensor, np.ndarray)) or not isinstance(inputs, (list, builtins.tuple)):
        raise SpecError(
            op,
            "I1",
            f"inputs must be a sequence (list or tuple) of tensors, got {type(inputs).__name__}",
        )
    check(len(inputs) > 0, op, "C3", "inputs must hold at least one tensor, got none")
    xs = operands(op, *inputs, names=[f"inputs[{i}]" for i in range(len(inputs))])
    dim = attr_int(op, "I2", "dimension", dimension)
    x0 = xs[0]
    check(
        all(x._dtype is x0._dtype for x in xs),
        op,
        "C1",
        lambda: f"inputs must have one element type, got {', '.join(tstr(x) for x in xs)}",
    )
    check(
        0 <= dim < x0.ndim,
        op,
        "C4",
        lambda: f"dimension must be in [0, rank(inputs[0])={x0.ndim}), got {dim}",
    )

    def _others(x):
        return x.shape[:dim] + x.shape[dim + 1 :]

    check(
        all(x.ndim == x0.ndim and _others(x) == _others(x0) for x in xs),
        op,
        "C2",
        lambda: (
            f"inputs must have equal shapes except in dimension {dim}, got "
            f"{', '.join(tstr(x) for x in xs)}"
        ),
    )
    keep(op, dimension=dim)
    return _wrap(np.concatenate([x._value for x in xs], axis=dim), x0._dtype)


@concatenate.defvjp
def _concatenate_vjp(g, out, inputs, dimension):
    dim = dimension  # (kept parsed by the op: an int)
    res, off = [], 0
    start, limit = [0] * g.ndim, list(g.shape)
    for x in inputs:
        n = _shape(x)[dim]
        if _needs(x):
            start[dim], limit[dim] = off, off + n
            res.append(slice(g, list(start), list(limit)))  # fresh lists: a node keeps its args
        else:
            res.append(None)
        off += n
    return (res,)


@primitive("reverse", quantized="storage", quantized_params=("operand",))
def reverse(operand, dimensions):
    """stablehlo.reverse: the operand with the order of elements reversed along each
    dim in ``dimensions`` (index i -> dim - 1 - i). (C2) unique; (C3) in range. The
    result is a read-only view.

    >>> xo.reverse(xo.tensor([[1, 2, 3], [4, 5, 6]], "i32"), [1])   # [[3, 2, 1], [6, 5, 4]]
    xo.tensor([[3, 2, 1],
               [6, 5, 4]], i32[2,3])
    """
    op = "reverse"
    x = _operand(op, operand)
    dims = _index_list(op, "I2", "dimensions", dimensions)
    check(len(set(dims)) == len(dims), op, "C2", lambda: f"dimensions must be unique, got {dims}")
    check(
        all(0 <= d < x.ndim for d in dims),
        op,
        "C3",
        lambda: f"dimensions must be in [0, rank={x.ndim}), got {dims}",
    )
    idx = builtins.tuple(_S(None, None, -1) if d in dims else _S(None) for d in range(x.ndim))
    return _wrap(x._value[idx], x._dtype)


@reverse.defvjp
def _reverse_vjp(g, out, operand, dimensions):
    return (reverse(g, dimensions),)


# ---------------------------------------------------------------------------------------
# get_dimension_size, set_dimension_size (XLA)
# ---------------------------------------------------------------------------------------


@primitive("get_dimension_size", quantized="storage", quantized_params=("operand",))
def get_dimension_size(operand, dimension):
    """stablehlo.get_dimension_size: dim(operand, dimension) as a 0-d i32 tensor.
    (C1) 0 <= dimension < rank(operand).

    >>> xo.get_dimension_size(xo.tensor([[1, 2, 3], [4, 5, 6]]), 1)   # 3 (i32)
    xo.tensor(3, i32[])
    """
    op = "get_dimension_size"
    x = _operand(op, operand)
    d = attr_int(op, "I2", "dimension", dimension)
    check(
        0 <= d < x.ndim,
        op,
        "C1",
        lambda: f"dimension must be in [0, rank(operand)={x.ndim}), got {d}",
    )
    return _wrap(np.array(x.shape[d], np.int32), as_dtype("i32"))


@primitive("set_dimension_size", spec="xla")
def set_dimension_size(operand, size, dimension):
    """XLA SetDimensionSize: marks dim ``dimension`` as holding only its first ``size``
    elements (XLA: a runtime size under the static bound, which downstream reductions
    respect). xops shapes are static, so the result here is the operand cut to its
    first ``size`` elements along ``dimension`` — a later reduction then sees exactly
    those elements, as in XLA's example (the sum of the first 5 of 10).

    ``size`` is a 0-d integer tensor (XLA: s32) or a Python int (I2). xops labels:
    (C1) 0 <= dimension < rank(operand); (C2) 0 <= size <= dim(operand, dimension).

    >>> xo.set_dimension_size(xo.tensor([1., 2., 3., 4., 5., 6., 7., 8., 9., 10.]), 5, 0)
    ... # [1, 2, 3, 4, 5]
    xo.tensor([1., 2., 3., 4., 5.], f32[5])
    """
    op = "set_dimension_size"
    x = _operand(op, operand)
    d = attr_int(op, "I3", "dimension", dimension)
    check(
        0 <= d < x.ndim,
        op,
        "C1",
        lambda: f"dimension must be in [0, rank(operand)={x.ndim}), got {d}",
    )
    if _is_py_int(size):
        n = size
    else:
        if isinstance(size, (bool, builtins.float, builtins.complex)):
            raise SpecError(op, "I2", f"size must be a 0-d integer tensor, got {size!r}")
        s = as_tensor(size, op=op, name="size")
        check(
            s.ndim == 0 and s._dtype.kind in ("si", "ui"),
            op,
            "I2",
            lambda: f"size must be a 0-d integer tensor, got {tstr(s)}",
        )
        n = _int_value(s)
    check(
        0 <= n <= x.shape[d],
        op,
        "C2",
        lambda: f"size must be in [0, dim(operand, {d})={x.shape[d]}], got {n}",
    )
    keep(op, dimension=d)
    idx = builtins.tuple(_S(0, n) if k == d else _S(None) for k in range(x.ndim))
    return _wrap(x._value[idx], x._dtype)


@set_dimension_size.defvjp
def _set_dimension_size_vjp(g, out, operand, size, dimension):
    d = dimension  # (kept parsed by the op: an int)
    r = operand.ndim
    high = [0] * r
    high[d] = operand.shape[d] - g.shape[d]
    return (pad(g, 0, [0] * r, high, [0] * r),)
