"""NumPy's names beyond the array API standard (xops/numpy/_numpy_names.py): each against
NumPy on the same values, gradients against finite differences."""

import numpy as np
import pytest

import xops.numpy as xnp
from gradcheck import check_grads

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
V = RNG.standard_normal(5)
C3 = RNG.standard_normal((2, 3, 4))
N = A.copy()
N[0, 1] = N[2, 3] = np.nan
IV = RNG.integers(0, 5, 8)

CASES = [
    ("absolute", (A,), {}), ("arccos", (A / 3,), {}), ("arctan2", (A, B), {}),
    ("power", (np.abs(A), B), {}), ("mod", (A, B), {}), ("true_divide", (A, B), {}),
    ("invert", (IV,), {}), ("left_shift", (IV, 2), {}), ("concatenate", ([A, B],), {}),
    ("concatenate", ([A, B], 1), {}), ("concatenate", ([A, B], None), {}), ("amax", (A, 1), {}),
    ("around", (A * 10,), {}), ("around", (A, 2), {}), ("rint", (A * 3,), {}),
    ("transpose", (C3,), {}), ("transpose", (C3, (1, 0, 2)), {}), ("swapaxes", (C3, 0, 2), {}),
    ("ravel", (C3,), {}), ("cumsum", (A,), {}), ("cumsum", (A, 1), {}), ("cumprod", (A, 0), {}),
    ("dot", (A, B.T), {}), ("dot", (V, V), {}), ("dot", (C3, RNG.standard_normal((4, 2))), {}),
    ("dot", (C3, RNG.standard_normal((2, 4, 3))), {}), ("dot", (A, 2.0), {}),
    ("inner", (A, B), {}), ("outer", (A, V), {}), ("vdot", (A, B), {}),
    ("atleast_1d", (np.float64(2.0),), {}), ("atleast_2d", (V,), {}), ("atleast_3d", (A,), {}),
    ("atleast_3d", (V,), {}), ("vstack", ([V, V],), {}), ("hstack", ([A, B],), {}),
    ("hstack", ([V, V],), {}), ("dstack", ([A, B],), {}), ("column_stack", ([V, V],), {}),
    ("split", (np.arange(12.0), 3), {}), ("split", (A, [1, 3], 1), {}),
    ("array_split", (np.arange(10.0), 3), {}), ("array_split", (A, [-1, 9]), {}),
    ("fliplr", (A,), {}), ("flipud", (A,), {}), ("rot90", (A,), {}), ("rot90", (C3, 2), {}),
    ("rot90", (C3, 3, (2, 0)), {}), ("rot90", (C3, -1, (1, 2)), {}),
    ("diagonal", (C3,), {}), ("diagonal", (C3, 1, 2, 1), {}), ("trace", (A, -1), {}),
    ("diag", (V,), {}), ("diag", (V, -2), {}), ("diag", (A, 1), {}),
    ("isclose", (A, A + 1e-9), {}),
    ("isclose", (np.array([np.inf, np.nan, 1.0]), np.array([np.inf, np.nan, 1.1])),
     dict(equal_nan=True)),
    ("allclose", (A, A + 1e-6), {}), ("allclose", (A, A + 1e-3), {}), ("array_equal", (A, A), {}),
    ("array_equal", (N, N), dict(equal_nan=True)), ("array_equal", (A, A[:2]), {}),
    ("nan_to_num", (np.array([np.nan, np.inf, -np.inf, 1.0]),), {}),
    ("nan_to_num", (np.array([np.nan, np.inf, -np.inf]),), dict(nan=5.0, posinf=7.0)),
    ("nansum", (N,), {}), ("nansum", (N, 1), {}), ("nanmean", (N, 0), {}), ("nanmax", (N, 1), {}),
    ("nanmin", (N,), {}), ("nanprod", (N, 1), {}), ("ptp", (A, 1), {}),
    ("average", (A,), {}), ("average", (A, 1, np.array([1.0, 2.0, 3.0, 4.0])), {}),
    ("average", (A, None, B ** 2), {}),
    ("median", (A,), {}), ("median", (A, 1), {}), ("median", (N, 1), {}),
    ("quantile", (A, 0.3), {}), ("quantile", (A, [0.0, 0.25, 0.9, 1.0], 1), {}),
    ("quantile", (A, 0.7, 0), dict(keepdims=True)), ("percentile", (V, [10, 50, 95]), {}),
    ("median", (IV,), {}), ("deg2rad", (A,), {}), ("rad2deg", (A,), {}), ("exp2", (A,), {}),
    ("cbrt", (A,), {}), ("fmax", (N, B), {}), ("fmin", (B, N), {}), ("fmod", (A * 5, B), {}),
    ("copy", (A,), {}),
    ("pad", (A, 2), {}), ("pad", (A, ((1, 0), (2, 3))), dict(constant_values=-1.0)),
    ("pad", (A, ((2, 5), (1, 7))), dict(mode="edge")),
    ("pad", (A, ((2, 5), (1, 7))), dict(mode="reflect")),
    ("pad", (A, ((2, 5), (1, 7))), dict(mode="symmetric")),
    ("pad", (A, ((2, 5), (1, 9))), dict(mode="wrap")),
    ("argwhere", (A > 0,), {}), ("flatnonzero", (A > 0,), {}), ("bincount", (IV,), {}),
    ("bincount", (IV,), dict(minlength=9, weights=np.arange(8.0))), ("identity", (3,), {}),
    ("logspace", (0, 2, 5), dict(dtype=np.float64)), ("append", (A, V), {}),
    ("append", (A, B, 0), {}),
    ("delete", (A, [0, 2], 1), {}), ("delete", (V, 1), {}),
    ("cov", (A,), {}), ("cov", (A,), dict(rowvar=False)), ("cov", (A, B), {}),
    ("corrcoef", (A,), {}), ("cov", (V,), {}),
    ("unique", (IV,), dict(return_index=True, return_inverse=True, return_counts=True)),
]  # fmt: skip


def _np(v):
    if isinstance(v, list):
        return [_np(u) for u in v]
    if isinstance(v, tuple):
        return tuple(_np(u) for u in v)
    return np.asarray(v) if hasattr(v, "__array__") and not isinstance(v, np.ndarray) else v


def _x(v):
    if isinstance(v, list):
        return [_x(u) for u in v]
    return xnp.asarray(v) if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize(
    "case", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_against_numpy(case):
    name, args, kw = CASES[case]
    want = getattr(np, name)(*args, **kw)
    got = getattr(xnp, name)(*[_x(a) for a in args], **kw)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = _np(g), np.asarray(w)
        if isinstance(g, bool):
            assert g == w
            continue
        assert g.shape == w.shape, (name, g.shape, w.shape)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_errors_as_numpy():
    with pytest.raises(ValueError, match="equal division"):
        xnp.split(xnp.asarray(np.arange(10.0)), 3)
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        xnp.quantile(xnp.asarray(A), 1.5)
    with pytest.raises(ValueError, match="negative"):
        xnp.pad(xnp.asarray(A), -1)
    with pytest.raises(ValueError, match="negative elements"):
        xnp.bincount(xnp.asarray(np.array([1, -1])))


def test_gradients():
    w = np.array([1.0, 2.0, 3.0, 4.0])
    for f in (
        lambda t: xnp.cumsum(t, 1),
        lambda t: xnp.pad(t, ((2, 5), (1, 7)), mode="reflect"),
        lambda t: xnp.median(t, 1),
        lambda t: xnp.quantile(t, [0.2, 0.7], 0),
        lambda t: xnp.nansum(t * t, 0),
        lambda t: xnp.average(t, 1, xnp.asarray(w)),
        lambda t: xnp.dot(t, xnp.asarray(B.T)),
        lambda t: xnp.rot90(t, 3),
        lambda t: xnp.cov(t),
        lambda t: xnp.fmax(t, xnp.asarray(B)),
    ):
        check_grads(f, [A])


def test_numpy_functions_on_tensors_route_here():
    import xops as xo

    t = xnp.asarray(A)
    for f in (
        lambda m, x: m.median(x, axis=1),
        lambda m, x: m.pad(x, ((1, 2), (0, 1)), mode="edge"),
        lambda m, x: m.vstack([x, x]),
        lambda m, x: m.percentile(x, [10, 90], axis=0),
        lambda m, x: m.fmax(x, m.flipud(x)),
        lambda m, x: m.deg2rad(x),
        lambda m, x: m.cov(x),
    ):
        got = f(np, t)
        assert isinstance(got, xo.Tensor)
        np.testing.assert_allclose(np.asarray(got), f(np, A), rtol=1e-12)
