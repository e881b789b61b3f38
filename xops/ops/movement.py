"""Data-movement ops: constant, iota, broadcast_in_dim, reshape, transpose,
concatenate, reverse, get_dimension_size, and XLA's Broadcast, Collapse and
SetDimensionSize; slice, dynamic_slice, dynamic_update_slice and pad live in
:mod:`xops.ops.slicing` and are re-exported here.

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

from ..autodiff.helpers import needs as _needs, sum as _sum
from ..autodiff.tape import keep, primitive
from ..dtypes import as_dtype, from_compute
from ..limits import check_nbytes, config as _config
from ..registry import op as _op  # ops of the families above this one, by name
from ..tensor import Tensor, _default_dtype, _wrap, typestr
from ._core import (
    SpecError,
    as_tensor,
    attr_int,
    attr_ints,
    broadcast_view,
    check,
    fast_grad_of,
    operands,
    tstr,
)
from .slicing import (  # re-exported: the data-movement ops are all reachable here
    _S,
    _index_list,
    _int_value,
    _is_py_int,
    _operand,
    _shape,
    dynamic_slice,
    dynamic_update_slice,
    pad,
    slice,
)

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


# ---------------------------------------------------------------------------------------
# Shared helpers (and those of xops.ops.slicing, imported above)
# ---------------------------------------------------------------------------------------


def _shape_attr(op, label, name, value, label_sign=None):
    """A shape-like attribute: a list of non-negative Python ints (``label`` for a value
    that is no list of integers, ``label_sign`` for a negative entry; default
    ``label``)."""
    dims = attr_ints(op, label, name, value)
    check(
        all(d >= 0 for d in dims),
        op,
        label_sign or label,
        lambda: f"{name} must have non-negative entries, got {dims}",
    )
    return dims


def _permutation(op, label_in, label, name, value, rank):
    """A permutation of range(rank) given as attribute ``name`` (``label_in``: no list of
    integers; ``label``: no permutation)."""
    perm = attr_ints(op, label_in, name, value)
    check(
        sorted(perm) == list(range(rank)),
        op,
        label,
        lambda: f"{name} must be a permutation of range(rank(operand)={rank}), got {perm}",
    )
    return perm


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


@primitive("iota", creation=True)
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
    d, dims, dt = iota_checks(iota_dimension, shape, dtype)
    if dt.quantized:  # quantize(index) in the quantized type (an op of a family above)
        return _op.uniform_quantize(iota(d, dims, dt.expressed_type), dt)
    n = dims[d]
    if 0 in dims:  # empty: no index line either (it could be 2**62 long)
        return _wrap(np.empty(dims, dt.np), dt)
    if dt.kind in ("si", "ui"):
        line = np.arange(n, dtype=np.int64 if dt.kind == "si" else np.uint64).astype(dt.np)
    elif dt.kind == "float":
        line = from_compute(np.arange(n, dtype=np.float64), dt)
    else:
        line = np.arange(n, dtype=np.float64).astype(dt.np)
    view = [1] * len(dims)
    view[d] = n
    return _wrap(np.ascontiguousarray(np.broadcast_to(line.reshape(view), dims)), dt)


def iota_checks(iota_dimension, shape, dtype):
    """iota's constraint checks, a pure function of its attributes (the CUDA kernel runs
    them too): (iota_dimension, shape, element type), parsed. A quantized type is
    checked as the iota of its expressed type."""
    op = "iota"
    d = attr_int(op, "I1", "iota_dimension", iota_dimension)
    dims = _shape_attr(op, "I2", "shape", shape)
    try:
        dt = as_dtype(dtype)
    except TypeError as e:
        raise SpecError(op, "I3", str(e)) from None
    if dt.quantized:
        iota_checks(d, dims, dt.expressed_type)
        return d, dims, dt
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
    if dt.kind in ("si", "ui") and 0 not in dims:  # (empty: no index line to fit)
        check(
            n - 1 <= dt.max,
            op,
            "I2",
            lambda: f"an iota of length {n} does not fit in {dt.name} (max {dt.max})",
        )
    return d, dims, dt


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
    return _wrap(broadcast_view(v.reshape(view), dims), x._dtype)


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


# broadcast_in_dim's dispatch fast path (xops.autodiff.tape.primitive): signatures that
# passed the checks once -> how the view is made. A signature is what the checks read:
# the operand's shape and element type, broadcast_dimensions, shape and the size limit.
_SIGNATURES = {}
_SIGNATURES_MAX = 4096


def _fast_broadcast_in_dim(args, grad=False):
    """``broadcast_in_dim(x, dims, shape)`` for a CPU Tensor x of a type that is not
    quantized (no gradient unless ``grad``), lists or tuples of Python ints, and a
    validated signature: the body's stride-0 view without re-checking; None for anything
    else (the full path runs every check). A new signature is checked by the op's body
    itself (its errors unchanged) before it is remembered."""
    if len(args) != 3:
        return None
    x, bd, shape = args
    if type(x) is not Tensor or (x.requires_grad and not grad):
        return None
    if type(bd) not in (list, tuple) or type(shape) not in (list, tuple):
        return None
    dt, v = x._dtype, x._value
    if dt.quantized or type(v) is not np.ndarray:
        return None
    for d in bd:  # (True == 1: the key alone would not tell them apart)
        if type(d) is not int:
            return None
    for d in shape:
        if type(d) is not int:
            return None
    key = (id(dt), v.shape, tuple(bd), tuple(shape), _config._max_bytes)
    plan = _SIGNATURES.get(key)
    if plan is None:
        broadcast_in_dim.__wrapped__(x, bd, shape)  # (raises as the full path would)
        order = sorted(range(v.ndim), key=lambda k: bd[k])
        view = [1] * len(shape)
        for k in order:
            view[bd[k]] = v.shape[k]
        same = order == list(range(v.ndim))
        plan = (None if same else order, tuple(view), tuple(shape))
        if len(_SIGNATURES) >= _SIGNATURES_MAX:
            _SIGNATURES.clear()
        _SIGNATURES[key] = plan
    order, view, dims = plan
    if order is not None:
        v = v.transpose(order)
    return _wrap(broadcast_view(v.reshape(view), dims), dt)


def _kept_attributes(args):
    """The attributes broadcast_in_dim's body keeps for its rule (lists of ints)."""
    return {"broadcast_dimensions": list(args[1]), "shape": list(args[2])}


broadcast_in_dim._fast = _fast_broadcast_in_dim
broadcast_in_dim._fast_grad = fast_grad_of(_fast_broadcast_in_dim, _kept_attributes)


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
    sizes = _shape_attr(op, "I2", "broadcast_sizes", broadcast_sizes, "C1")
    check_nbytes("broadcast", (*sizes, *x.shape), x._dtype)
    v = x._value[(None,) * len(sizes)]  # (leading dims of 1)
    return _wrap(broadcast_view(v, (*sizes, *x.shape)), x._dtype)


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
    check_nbytes(op, dims, 0)  # (a view: only the rank limit can fail)
    v = x._value
    if dimensions is not None:
        perm = _permutation(op, "I3", "I3", "dimensions", dimensions, x.ndim)
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
    perm = _permutation(op, "I2", "C2", "permutation", permutation, x.ndim)
    keep(op, permutation=perm)
    return _wrap(np.transpose(x._value, perm), x._dtype)


@transpose.defvjp
def _transpose_vjp(g, out, operand, permutation):
    return (transpose(g, _inverse(permutation)),)  # (kept parsed by the op)


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
    xs, dim = concatenate_checks(inputs, dimension)
    keep("concatenate", dimension=dim)
    return _wrap(np.concatenate([x._value for x in xs], axis=dim), xs[0]._dtype)


def concatenate_checks(inputs, dimension):
    """concatenate's constraints (I1, I2, C1-C4), reading only types and shapes: the
    inputs as tensors and the parsed dimension, ``(xs, dim)``."""
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
    return xs, dim


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


def _operand_dimension(op, operand, label, dimension):
    """(operand, dimension) of get/set_dimension_size: (C1) 0 <= dimension <
    rank(operand); ``label`` for a dimension that is no integer."""
    x = _operand(op, operand)
    d = attr_int(op, label, "dimension", dimension)
    check(
        0 <= d < x.ndim,
        op,
        "C1",
        lambda: f"dimension must be in [0, rank(operand)={x.ndim}), got {d}",
    )
    return x, d


@primitive("get_dimension_size", quantized="storage", quantized_params=("operand",))
def get_dimension_size(operand, dimension):
    """stablehlo.get_dimension_size: dim(operand, dimension) as a 0-d i32 tensor.
    (C1) 0 <= dimension < rank(operand).

    >>> xo.get_dimension_size(xo.tensor([[1, 2, 3], [4, 5, 6]]), 1)   # 3 (i32)
    xo.tensor(3, i32[])
    """
    x, d = _operand_dimension("get_dimension_size", operand, "I2", dimension)
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
    x, d = _operand_dimension(op, operand, "I3", dimension)
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
