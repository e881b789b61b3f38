"""Statistical, searching, sorting, set and utility functions of the array API standard
(2024.12).

Values that carry gradients come from spec ops: sums, products, extrema through
``reduce``; ``sort`` and the values of ``unique_*`` gather x at indices computed on
the host. Index and boolean results (argmax, argsort, nonzero, searchsorted, any/all,
the indices and counts of ``unique_*``) are computed with NumPy: they have no gradient.
"""

import builtins
from collections import namedtuple

import numpy as np

from ..autodiff.tape import primitive
from ..errors import SpecError
from ..ops import elementwise as E
from ..ops import movement as M
from ..ops import reduction as R
from ..ops import windows as W
from ..ops._core import compute, result, tstr
from ..tensor import Tensor
from . import _dtypes as D
from ._base import array, axes, axis1, binary, broadcast_shapes, broadcast_to, from_numpy, to
from ._manipulation import _take, concat, take_along_axis

_INITS = {}  # (dtype, which) -> cached 0-d init tensor (tensors are immutable)


def _init(dt, which, like=None):
    """The 0-d init value of reduction ``which`` in ``dt``, on ``like``'s device."""
    device = None if like is None or type(like._value) is np.ndarray else like.device
    key = (dt, which, device)
    t = _INITS.get(key)
    if t is None:
        if which == "sum":
            v = np.zeros((), dt.compute)
        elif which == "prod":
            v = np.ones((), dt.compute)
        elif which == "max":
            v = np.array(-np.inf if dt.kind == "float" else dt.min, dt.compute)
        else:
            v = np.array(np.inf if dt.kind == "float" else dt.max, dt.compute)
        t = result(v, dt)
        if device is not None:  # (a constant placed once per device)
            t = t.to_device(device)
        _INITS[key] = t
    return t


def _keep(out, x, dims, keepdims):
    if not keepdims:
        return out
    return M.reshape(out, tuple(1 if d in dims else s for d, s in enumerate(x.shape)))


def _accumulator(dt):
    """The standard's result type of sum/prod/cumulative_* without a dtype argument."""
    if dt.kind in ("si", "bool"):
        return D.int64
    if dt.kind == "ui":
        return D.uint64
    return dt


def _numeric(x, op, kinds=("si", "ui", "float", "complex", "bool")):
    x = array(x, op)
    if x._dtype.kind not in kinds:
        raise SpecError(op, "", f"needs a numeric array, got {tstr(x)}")
    return x


def _fold(op, body, x, axis, dtype, keepdims):
    """sum / prod: reduce with ``body`` in the accumulator type (the standard's default:
    the widest type of the kind, unless ``dtype`` is given)."""
    x = _numeric(x, op)
    dt = _accumulator(x._dtype) if dtype is None else D.as_dtype(dtype, op)
    x = to(x, dt)
    dims = axes(op, axis, x.ndim)
    if not dims:
        return x
    return _keep(R.reduce(x, _init(dt, op, x), list(dims), body), x, dims, keepdims)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    return _fold("sum", E.add, x, axis, dtype, keepdims)


_ALL_DIMS = [list(range(n)) for n in range(33)]


def sum_all(x):
    """``x.sum()`` of a float tensor: one reduce call (the method's fast path)."""
    return R.reduce(x, _init(x._dtype, "sum", x), _ALL_DIMS[x._value.ndim], E.add)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    return _fold("prod", E.multiply, x, axis, dtype, keepdims)


def _extreme(x, axis, keepdims, which):
    x = _numeric(x, which, ("si", "ui", "float", "bool"))
    dims = axes(which, axis, x.ndim)
    if 0 in [x.shape[d] for d in dims]:
        raise SpecError(
            which, "", f"zero-size reduction over axis {axis} of {tstr(x)} has no identity"
        )
    if x._dtype.kind == "bool":
        fn = np.any if which == "max" else np.all
        return from_numpy(fn(x._value, axis=dims, keepdims=keepdims), D.bool)
    if not dims:
        return x
    body = E.maximum if which == "max" else E.minimum
    return _keep(R.reduce(x, _init(x._dtype, which, x), list(dims), body), x, dims, keepdims)


def max(x, /, *, axis=None, keepdims=False):
    """Largest element; NaN propagates."""
    return _extreme(x, axis, keepdims, "max")


def min(x, /, *, axis=None, keepdims=False):
    return _extreme(x, axis, keepdims, "min")


def _count(x, dims):
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def mean(x, /, *, axis=None, keepdims=False):
    """Arithmetic mean; integer arrays are averaged in the default float (f32)."""
    x = _numeric(x, "mean", ("si", "ui", "float", "complex"))
    x = to(x, D.float_of(x._dtype))
    dims = axes("mean", axis, x.ndim)
    s = sum(x, axis=dims, keepdims=keepdims)
    n = _count(x, dims)
    with np.errstate(all="ignore"):
        return E.divide(s, float(n)) if n else E.multiply(s, float("nan"))


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    """Variance: sum(|x - mean|**2) / (N - correction)."""
    x = _numeric(x, "var", ("si", "ui", "float", "complex"))
    x = to(x, D.float_of(x._dtype))
    dims = axes("var", axis, x.ndim)
    m = mean(x, axis=dims, keepdims=True)
    d = E.subtract(x, broadcast_to(m, x.shape))
    sq = (
        E.multiply(d, d)
        if x._dtype.kind != "complex"
        else E.add(E.multiply(E.real(d), E.real(d)), E.multiply(E.imag(d), E.imag(d)))
    )
    s = sum(sq, axis=dims, keepdims=keepdims)
    denom = builtins.max(float(_count(x, dims) - correction), 0.0)  # <= 0: inf/nan, as NumPy
    return E.divide(s, denom)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return E.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _np_cumulative(name, fn):
    """A tape primitive ``name(x, axis)`` computed by NumPy's ``fn`` (cumsum, cumprod) in
    x's compute type (integers wrap)."""

    @primitive(name)
    def op(x, axis):
        with np.errstate(all="ignore"):
            return result(fn(compute(x), axis=axis, dtype=x._dtype.compute), x._dtype)

    op.__name__ = name
    return op


_cumsum = _np_cumulative("cumulative_sum", np.cumsum)


@_cumsum.defvjp
def _cumsum_vjp(g, out, x, axis):
    return (M.reverse(_cumsum(M.reverse(g, [axis]), axis), [axis]), None)


_cumprod = _np_cumulative("cumulative_prod", np.cumprod)


@_cumprod.defvjp
def _cumprod_vjp(g, out, x, axis):
    # only recorded for x without zeros (see _cumulative): d out_i / d x_j = out_i / x_j
    # for i >= j, so x̄_j = (reversed cumsum of g * out)_j / x_j
    s = M.reverse(_cumsum(M.reverse(E.multiply(g, out), [axis]), axis), [axis])
    return (E.divide(s, x), None)


def _cumprod_exact(x, ax, dt):
    """cumprod as a reduce_window of multiply (O(n^2) work): its gradient is exact also
    where x has zeros, which the O(n) rule above divides by."""
    n = x.shape[ax]
    pad = [(0, 0)] * x.ndim
    pad[ax] = (n - 1, 0)
    win = [1] * x.ndim
    win[ax] = n
    return W.reduce_window(x, _init(dt, "prod"), win, padding=pad, body=E.multiply)


def _cumulative(x, axis, dtype, include_initial, op):
    x = _numeric(x, op)
    if axis is None:
        if x.ndim > 1:
            raise SpecError(op, "", f"axis is required for an array of rank {x.ndim} > 1")
        axis = 0
    if x.ndim == 0:
        raise SpecError(op, "", "needs an array of rank >= 1")
    ax = axis1(op, axis, x.ndim)
    dt = _accumulator(x._dtype) if dtype is None else D.as_dtype(dtype, op)
    x = to(x, dt)
    n = x.shape[ax]
    if n == 0:
        out = x
    elif op == "cumulative_sum":
        out = _cumsum(x, ax)
    elif x.requires_grad and x._dtype.kind in ("float", "complex") and not np.all(compute(x)):
        out = _cumprod_exact(x, ax, dt)  # zeros: the exact (slower) differentiable form
    else:
        out = _cumprod(x, ax)
    if include_initial:
        shape = list(x.shape)
        shape[ax] = 1
        first = broadcast_to(_init(dt, "sum" if op == "cumulative_sum" else "prod"), tuple(shape))
        out = concat([first, out], axis=ax)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(x, axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(x, axis, dtype, include_initial, "cumulative_prod")


def _host_reduce(fn, x, axis, keepdims, op, out_dt):
    x = array(x, op)
    dims = axes(op, axis, x.ndim)
    with np.errstate(all="ignore"):
        r = fn(compute(x), axis=dims, keepdims=keepdims)
    return from_numpy(r, out_dt)


def all(x, /, *, axis=None, keepdims=False):
    return _host_reduce(np.all, x, axis, keepdims, "all", D.bool)


def any(x, /, *, axis=None, keepdims=False):
    return _host_reduce(np.any, x, axis, keepdims, "any", D.bool)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    x = array(x, "count_nonzero")
    dims = axes("count_nonzero", axis, x.ndim)
    r = np.count_nonzero(compute(x), axis=dims, keepdims=keepdims)
    return from_numpy(r, D.int64)


def _arg(x, axis, keepdims, op, fn):
    x = _numeric(x, op, ("si", "ui", "float", "bool"))
    if axis is None:
        if x.size == 0:
            raise SpecError(op, "", f"{op} of an empty array")
        r = fn(compute(x).reshape(-1))
        if keepdims:
            return from_numpy(np.full((1,) * x.ndim, r), D.int64)
        return from_numpy(r, D.int64)
    ax = axis1(op, axis, x.ndim)
    if x.shape[ax] == 0:
        raise SpecError(op, "", f"{op} over the empty axis {ax} of {tstr(x)}")
    return from_numpy(fn(compute(x), axis=ax, keepdims=keepdims), D.int64)


def argmax(x, /, *, axis=None, keepdims=False):
    """Index of the first largest element (of the first NaN, if any)."""
    return _arg(x, axis, keepdims, "argmax", np.argmax)


def argmin(x, /, *, axis=None, keepdims=False):
    return _arg(x, axis, keepdims, "argmin", np.argmin)


def nonzero(x, /):
    x = array(x, "nonzero")
    if x.ndim == 0:
        raise SpecError("nonzero", "", "needs an array of rank >= 1 (0-d is not allowed)")
    return tuple(from_numpy(i, D.int64) for i in np.nonzero(compute(x)))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    x1, x2v = array(x1, "searchsorted"), x2
    if x1.ndim != 1:
        raise SpecError("searchsorted", "", f"x1 must be 1-D, got {tstr(x1)}")
    if side not in ("left", "right"):
        raise SpecError("searchsorted", "", f"side must be 'left' or 'right', got {side!r}")
    x2 = array(x2v, "searchsorted") if not isinstance(x2v, (int, float)) else x2v
    dt = D.result_type(x1, x2)
    a = compute(to(x1, dt))
    b = compute(to(x2, dt)) if isinstance(x2, Tensor) else x2
    s = None if sorter is None else np.asarray(array(sorter)._value)
    return from_numpy(np.searchsorted(a, b, side=side, sorter=s), D.int64)


def where(condition, x1, x2, /):
    c = array(condition, "where")
    a, b = binary(x1, x2, "where")
    shape = broadcast_shapes("where", c, a, b)
    return E.select(
        broadcast_to(to(c, D.bool), shape), broadcast_to(a, shape), broadcast_to(b, shape)
    )


def _argsort_host(v, axis, descending, stable):
    kind = "stable" if stable else None
    if not descending:
        return np.argsort(v, axis=axis, kind=kind)
    n = v.shape[axis]
    # stable descending: sort the reversed axis ascending, reverse back, renumber
    idx = np.flip(np.argsort(np.flip(v, axis), axis=axis, kind="stable"), axis)
    return n - 1 - idx


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    x = _numeric(x, "argsort", ("si", "ui", "float", "bool"))
    if x.ndim == 0:
        return from_numpy(np.zeros((), np.int64), D.int64)
    ax = axis1("argsort", axis, x.ndim)
    return from_numpy(_argsort_host(compute(x), ax, descending, stable), D.int64)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """Sorted values (NaNs last ascending, first descending): x gathered at its
    argsort, so gradients flow back to the elements' original places."""
    x = _numeric(x, "sort", ("si", "ui", "float", "bool"))
    if x.ndim == 0:
        return x
    ax = axis1("sort", axis, x.ndim)
    idx = _argsort_host(compute(x), ax, descending, stable)
    if x._dtype.kind != "float" or not x.requires_grad:
        return from_numpy(np.take_along_axis(x._value, idx, ax), x._dtype)
    return take_along_axis(x, idx, axis=ax)


UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


def _unique(x, op):
    x = array(x, op)
    flat = compute(x).reshape(-1)
    _, index, inverse, counts = np.unique(
        flat, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    if x._dtype.kind in ("float", "complex") and x.requires_grad and index.size:
        values = _take(M.reshape(x, (x.size,)), index.astype(np.int64), 0)
    else:
        values = from_numpy(x._value.reshape(-1)[index], x._dtype)
    return (
        values,
        from_numpy(index, D.int64),
        from_numpy(inverse.reshape(x.shape), D.int64),
        from_numpy(counts, D.int64),
    )


def unique_all(x, /):
    """Distinct values (sorted; every NaN is distinct), first indices, inverse, counts."""
    return UniqueAllResult(*_unique(x, "unique_all"))


def unique_counts(x, /):
    v, _, _, c = _unique(x, "unique_counts")
    return UniqueCountsResult(v, c)


def unique_inverse(x, /):
    v, _, inv, _ = _unique(x, "unique_inverse")
    return UniqueInverseResult(v, inv)


def unique_values(x, /):
    return _unique(x, "unique_values")[0]


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    x = array(x, "diff")
    if x.ndim == 0:
        raise SpecError("diff", "", "needs an array of rank >= 1")
    ax = axis1("diff", axis, x.ndim)
    if not isinstance(n, int) or n < 0:
        raise SpecError("diff", "", f"n must be a non-negative integer, got {n!r}")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat([array(p, "diff") if p is not x else p for p in parts], axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        lo = [0] * x.ndim
        hi = list(x.shape)
        hi[ax] = m - 1
        lo1 = list(lo)
        lo1[ax] = 1
        a, b = M.slice(x, lo1, list(x.shape)), M.slice(x, lo, hi)
        x = E.xor(a, b) if x._dtype.kind == "bool" else E.subtract(a, b)
    return x


__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "max",
    "mean",
    "min",
    "nonzero",
    "prod",
    "searchsorted",
    "sort",
    "std",
    "sum",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "var",
    "where",
]
