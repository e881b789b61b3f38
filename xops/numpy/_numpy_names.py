"""NumPy's names beyond the array API standard (extras of ``xops.numpy``): the
standard's functions under NumPy's older spellings (``concatenate``, ``transpose``,
``power``, ``arccos``, ...) and NumPy's everyday composites (``cumsum``, ``dot``,
``vstack``, ``split``, ``pad``, ``median``, ``isclose``, ``nansum``, ...), with NumPy's
semantics, built on the standard's functions here, so they promote, broadcast and
differentiate as the rest of the layer (tests/test_numpy_names.py checks each against
NumPy). Integer results (``argwhere``, ``bincount`` counts) carry no gradient.
"""

import builtins
import math

import numpy as np

from ..tensor import Tensor
from . import _creation as C
from . import _dtypes as D
from . import _elementwise as E
from . import _manipulation as M
from . import _reduction as R
from . import linalg as L
from ._extras import astype

_ALIASES = {
    "absolute": E.abs,
    "arccos": E.acos,
    "arcsin": E.asin,
    "arctan": E.atan,
    "arctan2": E.atan2,
    "arccosh": E.acosh,
    "arcsinh": E.asinh,
    "arctanh": E.atanh,
    "power": E.pow,
    "mod": E.remainder,
    "true_divide": E.divide,
    "invert": E.bitwise_invert,
    "left_shift": E.bitwise_left_shift,
    "right_shift": E.bitwise_right_shift,
}


def _t(a):
    return a if isinstance(a, Tensor) else C.asarray(a)


def concatenate(arrays, axis=0, dtype=None):
    """The arrays joined along ``axis`` (flattened first with ``axis=None``)."""
    out = M.concat([_t(a) for a in arrays], axis=axis)
    return out if dtype is None else astype(out, dtype)


def amax(a, axis=None, keepdims=False):
    """The largest elements over ``axis`` (NaN propagates)."""
    return R.max(_t(a), axis=axis, keepdims=keepdims)


def amin(a, axis=None, keepdims=False):
    """The smallest elements over ``axis`` (NaN propagates)."""
    return R.min(_t(a), axis=axis, keepdims=keepdims)


def around(a, decimals=0):
    """Rounded to ``decimals`` places, half to even (NumPy's ``round``)."""
    a = _t(a)
    if not decimals:
        return E.round(a)
    f = 10.0**decimals
    return E.divide(E.round(E.multiply(a, f)), f)


rint = around


def transpose(a, axes=None):
    """The axes permuted (reversed by default)."""
    a = _t(a)
    return M.permute_dims(a, tuple(range(a.ndim))[::-1] if axes is None else tuple(axes))


def swapaxes(a, axis1, axis2):
    """Axes ``axis1`` and ``axis2`` exchanged."""
    a = _t(a)
    perm = list(range(a.ndim))
    i, j = axis1 % a.ndim, axis2 % a.ndim
    perm[i], perm[j] = perm[j], perm[i]
    return M.permute_dims(a, tuple(perm))


def ravel(a):
    """The elements in row-major order, as a vector."""
    return M.reshape(_t(a), (-1,))


def cumsum(a, axis=None, dtype=None):
    """The running sum along ``axis`` (over the flattened array without one)."""
    a = _t(a)
    return R.cumulative_sum(ravel(a) if axis is None else a, axis=0 if axis is None else axis,
                            dtype=dtype)  # fmt: skip


def cumprod(a, axis=None, dtype=None):
    """The running product along ``axis`` (over the flattened array without one)."""
    a = _t(a)
    return R.cumulative_prod(ravel(a) if axis is None else a, axis=0 if axis is None else axis,
                             dtype=dtype)  # fmt: skip


def dot(a, b):
    """NumPy's dot: products of 0-d operands; otherwise the sum over a's last axis and
    b's second-to-last (its only one for a vector)."""
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        return E.multiply(a, b)
    return L.tensordot(a, b, axes=([a.ndim - 1], [builtins.max(b.ndim - 2, 0)]))


def inner(a, b):
    """The sum over the last axes of a and b (products of 0-d operands)."""
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        return E.multiply(a, b)
    return L.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b):
    """The outer product of the flattened a and b."""
    return L.outer(ravel(a), ravel(b))


def vdot(a, b):
    """sum(conj(a) * b) over the flattened arrays."""
    return R.sum(E.multiply(E.conj(ravel(a)), ravel(b)))


def _atleast(a, n):
    a = _t(a)
    if a.ndim >= n:
        return a
    if n == 3 and a.ndim == 2:
        return M.expand_dims(a, axis=2)
    if n == 3 and a.ndim == 1:
        return M.reshape(a, (1, a.shape[0], 1))
    return M.reshape(a, (1,) * (n - a.ndim) + a.shape)


def _each(arys, n):
    out = [_atleast(a, n) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each array with at least one dim (0-d: shape (1,))."""
    return _each(arys, 1)


def atleast_2d(*arys):
    """Each array with at least two dims (a vector (N,) becomes (1, N))."""
    return _each(arys, 2)


def atleast_3d(*arys):
    """Each array with at least three dims ((N,) -> (1, N, 1), (M, N) -> (M, N, 1))."""
    return _each(arys, 3)


def vstack(tup):
    """Stacked along the first axis (vectors as rows)."""
    return M.concat([_atleast(a, 2) for a in tup], axis=0)


def hstack(tup):
    """Stacked along the second axis (vectors: concatenated)."""
    arrs = [_atleast(a, 1) for a in tup]
    return M.concat(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1)


def dstack(tup):
    """Stacked along the third axis."""
    return M.concat([_atleast(a, 3) for a in tup], axis=2)


def column_stack(tup):
    """Vectors as columns (and 2-D arrays as they are), side by side."""
    cols = [M.reshape(_t(a), (-1, 1)) if _t(a).ndim < 2 else _t(a) for a in tup]
    return M.concat(cols, axis=1)


def _pieces(a, bounds, axis):
    key = [slice(None)] * a.ndim
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key[axis] = slice(lo, hi)
        out.append(a[tuple(key)])
    return out


def array_split(ary, indices_or_sections, axis=0):
    """Pieces along ``axis``: ``n`` sections (the first n % len one element longer), or
    cut at the listed indices."""
    a = _t(ary)
    axis = axis % builtins.max(a.ndim, 1)
    length = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(length, n)
        sizes = [each + 1] * extra + [each] * (n - extra)
        bounds = [0] + list(np.cumsum(sizes))
    else:
        cuts = [builtins.min(builtins.max(int(i) + (length if i < 0 else 0), 0), length)
                for i in indices_or_sections]  # fmt: skip
        bounds = [0] + cuts + [length]
        bounds = [bounds[0]] + [builtins.max(b, 0) for b in bounds[1:]]
    return _pieces(a, [int(b) for b in bounds], axis)


def split(ary, indices_or_sections, axis=0):
    """:func:`array_split`, but ``n`` sections must divide the axis equally."""
    a = _t(ary)
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n <= 0 or a.shape[axis % builtins.max(a.ndim, 1)] % n:
            raise ValueError("array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


def fliplr(m):
    """Reversed along axis 1."""
    m = _t(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return M.flip(m, axis=1)


def flipud(m):
    """Reversed along axis 0."""
    m = _t(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return M.flip(m, axis=0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotated by 90 degrees ``k`` times in the plane of ``axes`` (first towards second)."""
    m = _t(m)
    a0, a1 = axes[0] % m.ndim, axes[1] % m.ndim
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return M.reshape(m, m.shape)
    if k == 2:
        return M.flip(M.flip(m, axis=a0), axis=a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return M.permute_dims(M.flip(m, axis=a1), tuple(perm))
    return M.flip(M.permute_dims(m, tuple(perm)), axis=a1)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of axes ``axis1`` and ``axis2`` (NumPy's defaults: 0 and 1), last."""
    a = _t(a)
    return L.diagonal(M.moveaxis(a, (axis1, axis2), (-2, -1)), offset=offset)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum of :func:`diagonal`."""
    return R.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag(v, k=0):
    """A vector: the square matrix with it on diagonal ``k``; a matrix: that diagonal."""
    v = _t(v)
    if v.ndim == 2:
        return L.diagonal(v, offset=k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    rows = np.arange(v.shape[0]) + builtins.max(-k, 0)
    cols = np.arange(v.shape[0]) + builtins.max(k, 0)
    return C.zeros((n, n), dtype=v.dtype).at[rows, cols].set(v)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol |b| elementwise; equal infinities are close, NaN only with
    ``equal_nan``."""
    a, b = _t(a), _t(b)
    fin = E.logical_and(E.isfinite(a), E.isfinite(b))
    with np.errstate(invalid="ignore"):
        near = E.less_equal(E.abs(E.subtract(a, b)), E.add(atol, E.multiply(rtol, E.abs(b))))
    out = E.logical_or(E.logical_and(fin, near), E.equal(a, b))
    if equal_nan:
        out = E.logical_or(out, E.logical_and(E.isnan(a), E.isnan(b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether :func:`isclose` holds everywhere (a Python bool)."""
    return builtins.bool(R.all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    """Whether the shapes and every element are equal (a Python bool)."""
    a, b = _t(a1), _t(a2)
    if a.shape != b.shape:
        return False
    same = E.equal(a, b)
    if equal_nan:
        same = E.logical_or(same, E.logical_and(E.isnan(a), E.isnan(b)))
    return builtins.bool(R.all(same))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan``, infinities by ``posinf`` / ``neginf`` (the type's largest
    finite values by default); other types unchanged."""
    x = _t(x)
    if x.dtype.kind not in ("float", "complex"):
        return M.reshape(x, x.shape)
    if x.dtype.kind == "complex":
        fix = lambda p: nan_to_num(p, copy, nan, posinf, neginf)  # noqa: E731
        re, im = fix(E.real(x)), fix(E.imag(x))
        return E.add(astype(re, x.dtype), E.multiply(astype(im, x.dtype), 1j))
    big = float(D.finfo(x.dtype).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    out = R.where(E.isnan(x), C.asarray(nan, dtype=x.dtype), x)
    out = R.where(E.equal(out, math.inf), C.asarray(hi, dtype=x.dtype), out)
    return R.where(E.equal(out, -math.inf), C.asarray(lo, dtype=x.dtype), out)


def _nan_fill(a, fill):
    a = _t(a)
    if a.dtype.kind not in ("float", "complex"):
        return a
    return R.where(E.isnan(a), C.asarray(fill, dtype=a.dtype), a)


def nansum(a, axis=None, dtype=None, keepdims=False):
    """The sum with NaNs read as 0."""
    return R.sum(_nan_fill(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, keepdims=False):
    """The product with NaNs read as 1."""
    return R.prod(_nan_fill(a, 1), axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(a, axis=None, keepdims=False):
    """The mean of the elements that are not NaN (NaN where none is)."""
    a = _t(a)
    count = R.sum(astype(E.logical_not(E.isnan(a)), a.dtype), axis=axis, keepdims=keepdims)
    with np.errstate(invalid="ignore", divide="ignore"):
        return E.divide(nansum(a, axis=axis, keepdims=keepdims), count)


def _nan_extreme(a, axis, keepdims, fn, fill):
    a = _t(a)
    if a.dtype.kind != "float":
        return fn(a, axis=axis, keepdims=keepdims)
    nan = E.isnan(a)
    out = fn(R.where(nan, C.asarray(fill, dtype=a.dtype), a), axis=axis, keepdims=keepdims)
    every = R.all(nan, axis=axis, keepdims=keepdims)
    return R.where(every, C.asarray(math.nan, dtype=a.dtype), out)


def nanmax(a, axis=None, keepdims=False):
    """The largest element that is not NaN (NaN where all are)."""
    return _nan_extreme(a, axis, keepdims, R.max, -math.inf)


def nanmin(a, axis=None, keepdims=False):
    """The smallest element that is not NaN (NaN where all are)."""
    return _nan_extreme(a, axis, keepdims, R.min, math.inf)


def ptp(a, axis=None, keepdims=False):
    """max - min."""
    return E.subtract(
        R.max(a, axis=axis, keepdims=keepdims), R.min(a, axis=axis, keepdims=keepdims)
    )


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The mean, or sum(a w) / sum(w) with ``weights`` (broadcast along ``axis``)."""
    a = _t(a)
    if weights is None:
        avg = R.mean(a, axis=axis, keepdims=keepdims)
        n = a.size if axis is None else math.prod(a.shape[i] for i in np.atleast_1d(axis))
        return (avg, C.full_like(avg, n)) if returned else avg
    w = _t(weights)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise ValueError("weights must have the shape of a, or be 1-D along axis")
        shape = [1] * a.ndim
        shape[axis % a.ndim] = w.shape[0]
        w = M.reshape(w, tuple(shape))
    total = R.sum(E.multiply(a, w), axis=axis, keepdims=keepdims)
    scale = R.sum(M.broadcast_to(w, a.shape) if w.shape != a.shape else w, axis=axis,
                  keepdims=keepdims)  # fmt: skip
    avg = E.divide(total, scale)
    return (avg, M.broadcast_to(scale, avg.shape)) if returned else avg


def quantile(a, q, axis=None, keepdims=False, method="linear"):
    """NumPy's quantile with its default ("linear") method: the sorted values at q (n -
    1), interpolated as NumPy does (from the upper neighbour for t >= 0.5); NaN where a
    slice holds one. ``q`` a number or a vector (then the first dim of the result)."""
    if method != "linear":
        raise ValueError(f"quantile: only method='linear' is supported, got {method!r}")
    a = _t(a)
    qs = np.asarray(q, dtype=np.float64)
    if qs.ndim > 1 or np.any((qs < 0) | (qs > 1)) or np.any(np.isnan(qs)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    x, ax = (ravel(a), 0) if axis is None else (a, axis % a.ndim)
    x = M.moveaxis(x, ax, -1)
    if a.dtype.kind != "float":
        x = astype(x, D.float64)
    n = x.shape[-1]
    s = R.sort(x, axis=-1)
    pos = np.atleast_1d(qs) * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    below = M.take(s, C.asarray(lo), axis=-1)  # (..., len(q))
    above = M.take(s, C.asarray(hi), axis=-1)
    t = C.asarray(pos - lo, dtype=s.dtype)
    d = E.subtract(above, below)
    up = E.subtract(above, E.multiply(d, E.subtract(1, t)))
    lerp = R.where(E.greater_equal(t, 0.5), up, E.add(below, E.multiply(d, t)))
    has_nan = R.any(E.isnan(x), axis=-1, keepdims=True)
    out = M.moveaxis(R.where(has_nan, C.asarray(math.nan, dtype=s.dtype), lerp), -1, 0)
    if keepdims:
        kept = (
            [1] * a.ndim if axis is None else [1 if i == ax else d for i, d in enumerate(a.shape)]
        )
        out = M.reshape(out, (out.shape[0], *kept))
    return out[0] if qs.ndim == 0 else out


def percentile(a, q, axis=None, keepdims=False, method="linear"):
    """:func:`quantile` of q / 100."""
    return quantile(a, np.asarray(q, dtype=np.float64) / 100.0, axis, keepdims, method)


def median(a, axis=None, keepdims=False):
    """The 0.5 quantile."""
    return quantile(a, 0.5, axis, keepdims)


def deg2rad(x):
    """x * (pi / 180)."""
    return E.multiply(x, math.pi / 180.0)


def rad2deg(x):
    """x * (180 / pi)."""
    return E.multiply(x, 180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def exp2(x):
    """2 ** x."""
    return E.pow(2.0, x)


def cbrt(x):
    """The real cube root (``xo.cbrt``)."""
    from ..ops.elementwise import cbrt as _cbrt

    x = _t(x)
    return _cbrt(x if x.dtype.kind in ("float", "complex") else astype(x, D.float64))


def fmax(x1, x2):
    """The larger of each pair, a NaN losing to a number."""
    a, b = M.broadcast_arrays(_t(x1), _t(x2))
    return R.where(E.isnan(a), b, R.where(E.isnan(b), a, E.maximum(a, b)))


def fmin(x1, x2):
    """The smaller of each pair, a NaN losing to a number."""
    a, b = M.broadcast_arrays(_t(x1), _t(x2))
    return R.where(E.isnan(a), b, R.where(E.isnan(b), a, E.minimum(a, b)))


def fmod(x1, x2):
    """The remainder with the dividend's sign (C's fmod)."""
    from ..registry import op as _op

    a, b = M.broadcast_arrays(_t(x1), _t(x2))
    dt = D.result_type(a, b)
    return _op.remainder(astype(a, dt), astype(b, dt))


def copy(a):
    """A copy (its own buffer)."""
    return C.asarray(a, copy=True)


def pad(array, pad_width, mode="constant", constant_values=0):
    """NumPy's pad with mode "constant" (``constant_values``), "edge", "reflect",
    "symmetric" or "wrap"; ``pad_width`` an int, a (before, after) pair or one pair per
    axis."""
    a = _t(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2))
    if np.any(widths < 0):
        raise ValueError("index can't contain negative values")
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise ValueError(f"pad: mode {mode!r} is not supported")
    out = a
    for axis, (before, after) in enumerate(widths.tolist()):
        if not before and not after:
            continue
        n = out.shape[axis]
        idx = np.arange(-before, n + after)
        if mode == "constant":
            fill = C.asarray(constant_values, dtype=a.dtype)
            shape = list(out.shape)
            parts = []
            if before:
                shape[axis] = before
                parts.append(M.broadcast_to(fill, tuple(shape)))
            parts.append(out)
            if after:
                shape[axis] = after
                parts.append(M.broadcast_to(fill, tuple(shape)))
            out = M.concat(parts, axis=axis)
            continue
        if n == 0:
            raise ValueError(f"can't extend an empty axis {axis} using modes other than 'constant'")
        if mode == "edge":
            src = np.clip(idx, 0, n - 1)
        elif mode == "wrap":
            src = idx % n
        elif mode == "reflect":
            period = 2 * n - 2
            src = np.zeros_like(idx) if n == 1 else idx % period
            src = np.where(src >= n, period - src, src)
        else:  # symmetric
            src = idx % (2 * n)
            src = np.where(src >= n, 2 * n - 1 - src, src)
        out = M.take(out, C.asarray(src), axis=axis)
    return out if out is not a else M.reshape(a, a.shape)


def argwhere(a):
    """The indices of the nonzero elements, one row each ((n, ndim) int64)."""
    a = _t(a)
    if a.ndim == 0:
        return C.asarray(np.argwhere(np.asarray(a)))
    return M.stack(R.nonzero(a), axis=1)


def flatnonzero(a):
    """The flat indices of the nonzero elements."""
    return R.nonzero(ravel(a))[0]


def bincount(x, weights=None, minlength=0):
    """Occurrences of each value 0..max(x) (int64), or the sums of ``weights`` there."""
    x = _t(x)
    v = np.asarray(x)
    if x.ndim != 1 or x.dtype.kind not in ("si", "ui"):
        raise ValueError(f"bincount takes a 1-D array of non-negative integers, got {x.type}")
    if v.size and v.min() < 0:
        raise ValueError("'list' argument must have no negative elements")
    n = builtins.max(int(v.max()) + 1 if v.size else 0, int(minlength))
    if weights is None:
        return C.asarray(np.bincount(v, minlength=n))
    w = astype(_t(weights), D.float64)
    return C.zeros((n,), dtype=D.float64).at[v].add(w)


def identity(n, dtype=None):
    """The n x n identity."""
    return C.eye(n, dtype=dtype)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None):
    """base ** linspace(start, stop, num)."""
    return E.pow(base, C.linspace(start, stop, num, dtype=dtype, endpoint=endpoint))


def append(arr, values, axis=None):
    """values appended to arr (both flattened without an axis)."""
    if axis is None:
        return M.concat([ravel(arr), ravel(values)], axis=0)
    return M.concat([_t(arr), _t(values)], axis=axis)


def delete(arr, obj, axis=None):
    """arr without the entries ``obj`` (indices) along ``axis`` (flattened without one)."""
    a = ravel(arr) if axis is None else _t(arr)
    ax = 0 if axis is None else axis % a.ndim
    keep = np.ones(a.shape[ax], bool)
    keep[np.asarray(obj)] = False
    return M.take(a, C.asarray(np.flatnonzero(keep)), axis=ax)


def cov(m, y=None, rowvar=True, bias=False, ddof=None):
    """The covariance matrix of the variables (rows; columns with ``rowvar=False``),
    ``y`` adding more (NumPy's)."""
    x = _atleast(m, 2)
    if not rowvar and x.shape[0] != 1:
        x = M.permute_dims(x, (1, 0))
    if y is not None:
        yy = _atleast(y, 2)
        if not rowvar and yy.shape[0] != 1:
            yy = M.permute_dims(yy, (1, 0))
        x = M.concat([x, yy], axis=0)
    x = x if x.dtype.kind in ("float", "complex") else astype(x, D.float64)
    n = x.shape[1]
    dd = (0 if bias else 1) if ddof is None else ddof
    xc = E.subtract(x, R.mean(x, axis=1, keepdims=True))
    c = E.divide(L.matmul(xc, M.permute_dims(E.conj(xc), (1, 0))), float(n - dd))
    return M.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    """The correlation coefficients: cov / sqrt(diag(cov) outer diag(cov)), clipped to
    [-1, 1] (real)."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return E.divide(c, c)
    d = E.sqrt(L.diagonal(c))
    r = E.divide(E.divide(c, M.reshape(d, (-1, 1))), M.reshape(d, (1, -1)))
    return r if r.dtype.kind == "complex" else E.clip(r, -1.0, 1.0)


def unique(ar, return_index=False, return_inverse=False, return_counts=False):
    """The sorted distinct values of the flattened ``ar`` (and the first index of each,
    the inverse indices, the counts)."""
    u = R.unique_all(ravel(ar))
    out = (u.values,)
    if return_index:
        out += (u.indices,)
    if return_inverse:
        out += (u.inverse_indices,)
    if return_counts:
        out += (u.counts,)
    return out[0] if len(out) == 1 else out


__all__ = sorted(
    list(_ALIASES)
    + [
        name
        for name, obj in list(globals().items())
        if callable(obj)
        and not name.startswith("_")
        and getattr(obj, "__module__", None) == __name__
    ]
)
globals().update(_ALIASES)
