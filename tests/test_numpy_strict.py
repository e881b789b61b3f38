"""Differential test: xops.numpy against array-api-strict (NumPy under the standard's
rules) on random inputs, values and result dtypes. Bounded: a few hypothesis examples
per function, about 30 s in all."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xops.numpy as xnp

strict = pytest.importorskip("array_api_strict")
strict.set_array_api_strict_flags(api_version="2024.12")

_SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("XNP_EXAMPLES", 8)),
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
_FLOATS = ["float32", "float64"]
_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _elements(dtype, special=True, lo=None, hi=None):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        width = 32 if dt == np.float32 else 64
        if lo is not None:
            return st.floats(lo, hi, width=width, allow_nan=False)
        return st.floats(
            width=width,
            allow_nan=special,
            allow_infinity=special,
            allow_subnormal=False,
            min_value=None if special else -1e3,
            max_value=None if special else 1e3,
        )
    if dt.kind == "c":
        part = st.floats(-1e3, 1e3, width=32 if dt == np.complex64 else 64)
        return st.builds(complex, part, part)
    if dt.kind == "b":
        return st.booleans()
    info = np.iinfo(dt)
    return st.integers(
        max(info.min, -100 if lo is None else lo), min(info.max, 100 if hi is None else hi)
    )


def _array(draw, dtype, shape=None, **kw):
    shape = draw(_SHAPES) if shape is None else shape
    return draw(hnp.arrays(np.dtype(dtype), shape, elements=_elements(dtype, **kw)))


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    if hasattr(x, "_array"):
        return np.asarray(x._array)
    return np.asarray(x)


def _same(got, want, rtol):
    """Values and dtypes equal (within rtol for inexact results, NaN where NaN)."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, rtol)
        return
    assert isinstance(got, xnp.asarray(0).__class__), type(got)
    g, w = _np(got), _np(want)
    assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"shape {g.shape} != {w.shape}"
    if w.dtype.kind in "fc":
        finite = np.abs(w[np.isfinite(w)])
        scale = float(finite.max()) if finite.size else 1.0
        np.testing.assert_allclose(
            g, w, rtol=rtol, atol=rtol * 1e-3 * max(scale, 1.0), equal_nan=True
        )
    else:
        np.testing.assert_array_equal(g, w)


def _both(fn_name, args, kwargs, rtol, module=""):
    """Call the function in both namespaces; strict's error means 'not comparable'."""
    smod = getattr(strict, module) if module else strict
    xmod = getattr(xnp, module) if module else xnp
    args = [np.asarray(a) if isinstance(a, np.generic) else a for a in args]
    sargs = [strict.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    xargs = [xnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = getattr(smod, fn_name)(*sargs, **kwargs)
        except (TypeError, ValueError, IndexError, OverflowError, np.linalg.LinAlgError):
            return
    got = getattr(xmod, fn_name)(*xargs, **kwargs)
    _same(got, want, rtol)


def _rtol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


# -- element-wise --------------------------------------------------------------------------

_UNARY_FLOAT = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "reciprocal",
    "signbit",
    "isfinite",
    "isinf",
    "isnan",
]
_UNARY_ANY = [
    "abs",
    "ceil",
    "floor",
    "trunc",
    "round",
    "negative",
    "positive",
    "sign",
    "square",
    "isfinite",
    "isnan",
]
_UNARY_INT = ["bitwise_invert"]


@pytest.mark.parametrize("name", _UNARY_FLOAT)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS))
def test_unary_float(name, data, dtype):
    x = _array(data.draw, dtype)
    _both(name, [x], {}, 4e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("name", _UNARY_ANY)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int8", "int32", "int64", "uint8"]))
def test_unary_numeric(name, data, dtype):
    x = _array(data.draw, dtype, special=False)
    if name == "negative" and dtype.startswith("u"):
        return
    _both(name, [x], {}, _rtol(dtype))


@pytest.mark.parametrize("name", _UNARY_INT + ["logical_not"])
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(["bool", "int8", "int64", "uint16"]))
def test_unary_bitwise(name, data, dtype):
    _both(name, [_array(data.draw, dtype)], {}, 0)


@pytest.mark.parametrize(
    "name",
    [
        "real",
        "imag",
        "conj",
        "abs",
        "exp",
        "log",
        "sqrt",
        "sin",
        "cos",
        "tanh",
        "isfinite",
        "sign",
        "round",
        "square",
    ],
)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(["complex64", "complex128"]))
def test_unary_complex(name, data, dtype):
    x = _array(data.draw, dtype)
    _both(name, [x], {}, 1e-4 if dtype == "complex64" else 1e-10)


_BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "pow",
    "maximum",
    "minimum",
    "atan2",
    "hypot",
    "copysign",
    "logaddexp",
    "nextafter",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
]
_BINARY_INT = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_and",
    "logical_or",
    "logical_xor",
]


@st.composite
def _pair(draw, dtypes, special=True, positive=False):
    shape = draw(_SHAPES)
    s2 = tuple(1 if draw(st.booleans()) else d for d in shape[draw(st.integers(0, len(shape))) :])
    d1, d2 = draw(st.sampled_from(dtypes)), draw(st.sampled_from(dtypes))
    kw = {"lo": 0, "hi": 8} if positive else {"special": special}
    return _array(draw, d1, shape, **kw), _array(draw, d2, s2, **kw)


@pytest.mark.parametrize("name", _BINARY)
@_SETTINGS
@given(data=st.data())
def test_binary(name, data):
    dts = _FLOATS + ["int8", "int16", "int64", "uint8", "uint32"]
    if name in ("atan2", "hypot", "copysign", "logaddexp", "nextafter"):
        dts = _FLOATS
    # floor_divide with infinities follows the standard, not NumPy (test_numpy_api)
    a, b = data.draw(
        _pair(dts, special=name not in ("pow", "floor_divide"), positive=name == "pow")
    )
    if name in ("floor_divide", "remainder") and b.dtype.kind in "iu" and (b == 0).any():
        return  # integer division by zero is unspecified
    if name == "divide" and a.dtype.kind in "iu":
        return  # integer true division: implementation-defined result type
    rtol = max(_rtol(a.dtype), _rtol(b.dtype))
    _both(name, [a, b], {}, rtol)
    if a.ndim:  # a Python scalar operand (2024.12)
        scalar = b.reshape(-1)[0].item() if b.size else 1
        if name in ("floor_divide", "remainder") and scalar == 0:
            return
        _both(name, [a, scalar], {}, rtol)


@pytest.mark.parametrize("name", _BINARY_INT)
@_SETTINGS
@given(data=st.data())
def test_binary_bitwise(name, data):
    dts = ["bool"] if name.startswith("logical") else ["int8", "int32", "int64", "uint8"]
    a, b = data.draw(_pair(dts, positive=name.endswith("shift")))
    _both(name, [a, b], {}, 0)


@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int16", "int64"]))
def test_clip(data, dtype):
    x = _array(data.draw, dtype, special=False)
    lo = data.draw(st.one_of(st.none(), st.integers(-50, 0)))
    hi = data.draw(st.one_of(st.none(), st.integers(0, 50)))
    _both("clip", [x], {"min": lo, "max": hi}, 0)


# -- reductions and statistics --------------------------------------------------------------


@st.composite
def _axis(draw, ndim):
    if ndim == 0 or draw(st.booleans()):
        return None
    k = draw(st.integers(1, ndim))
    return tuple(sorted(draw(st.permutations(range(ndim)))[:k]))


@pytest.mark.parametrize(
    "name", ["sum", "prod", "max", "min", "mean", "std", "var", "all", "any", "count_nonzero"]
)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int32", "int64"]))
def test_reductions(name, data, dtype):
    x = _array(
        data.draw,
        dtype,
        special=False,
        lo=-3 if dtype in _INTS else None,
        hi=3 if dtype in _INTS else None,
    )
    if x.dtype.kind == "f":
        x = np.clip(x, -3, 3).astype(dtype)
    if name in ("max", "min") and x.size == 0:
        return
    kw = {"axis": data.draw(_axis(x.ndim)), "keepdims": data.draw(st.booleans())}
    if name in ("std", "var"):
        kw["correction"] = data.draw(st.sampled_from([0, 1, 0.5]))
    _both(name, [x], kw, 1e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int16"]))
def test_arg_reductions(name, data, dtype):
    x = _array(data.draw, dtype, special=False)
    if x.size == 0:
        return
    axis = (
        None if x.ndim == 0 or data.draw(st.booleans()) else data.draw(st.integers(0, x.ndim - 1))
    )
    if axis is not None and x.shape[axis] == 0:
        return
    _both(name, [x], {"axis": axis, "keepdims": data.draw(st.booleans())}, 0)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int32"]))
def test_cumulative(name, data, dtype):
    x = _array(
        data.draw,
        dtype,
        shape=data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)),
        special=False,
        lo=-2 if dtype in _INTS else None,
        hi=2 if dtype in _INTS else None,
    )
    if x.dtype.kind == "f":
        x = np.clip(x, -2, 2).astype(dtype)
    axis = data.draw(st.integers(0, x.ndim - 1)) if x.ndim > 1 else None
    _both(
        name,
        [x],
        {"axis": axis, "include_initial": data.draw(st.booleans())},
        1e-5 if dtype == "float32" else 1e-12,
    )


# -- sorting, searching, sets ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sort", "argsort"])
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int8", "uint16"]))
def test_sorting(name, data, dtype):
    x = _array(
        data.draw,
        dtype,
        shape=data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)),
        special=False,
    )
    x = np.round(x) if x.dtype.kind == "f" else x % 4  # ties
    kw = {
        "axis": data.draw(st.integers(-x.ndim, x.ndim - 1)),
        "descending": data.draw(st.booleans()),
        "stable": True,
    }
    _both(name, [x.astype(dtype)], kw, 0)


@pytest.mark.parametrize(
    "name", ["unique_values", "unique_counts", "unique_inverse", "unique_all", "nonzero"]
)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int32"]))
def test_sets_and_nonzero(name, data, dtype):
    x = _array(data.draw, dtype, special=False)
    x = (np.round(x) % 3).astype(dtype)
    if name == "nonzero" and x.ndim == 0:
        return
    _both(name, [x], {}, 0)


@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS + ["int64"]))
def test_searchsorted_where_take(data, dtype):
    x1 = np.sort(_array(data.draw, dtype, shape=(data.draw(st.integers(0, 6)),), special=False))
    x2 = _array(data.draw, dtype, special=False)
    side = data.draw(st.sampled_from(["left", "right"]))
    _both("searchsorted", [x1, x2], {"side": side}, 0)
    cond = x2 > 0
    _both("where", [cond, x2, np.zeros_like(x2)], {}, 0)
    if x1.size:
        idx = np.array(data.draw(st.lists(st.integers(0, x1.size - 1), max_size=5)), np.int64)
        _both("take", [x1, idx], {"axis": 0}, 0)


# -- manipulation ------------------------------------------------------------------------------


@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(["float32", "int64", "bool"]))
def test_manipulation(data, dtype):
    x = _array(
        data.draw, dtype, shape=data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    )
    r = x.ndim
    ax = data.draw(st.integers(-r, r - 1))
    _both("flip", [x], {"axis": data.draw(_axis(r))}, 0)
    _both(
        "roll",
        [x],
        {
            "shift": data.draw(st.integers(-4, 4)),
            "axis": data.draw(st.one_of(st.none(), st.integers(-r, r - 1))),
        },
        0,
    )
    _both("permute_dims", [x], {"axes": tuple(data.draw(st.permutations(range(r))))}, 0)
    _both("moveaxis", [x, ax, data.draw(st.integers(-r, r - 1))], {}, 0)
    _both("expand_dims", [x], {"axis": data.draw(st.integers(-r - 1, r))}, 0)
    _both("reshape", [x, (-1,)], {}, 0)
    _both("concat", [[x, x]], {"axis": ax}, 0)
    _both("concat", [[x, x]], {"axis": None}, 0)
    _both("stack", [[x, x]], {"axis": data.draw(st.integers(-r - 1, r))}, 0)
    _both("unstack", [x], {"axis": ax}, 0)
    _both("tile", [x, tuple(data.draw(st.lists(st.integers(0, 2), max_size=3)))], {}, 0)
    _both(
        "repeat",
        [x, data.draw(st.integers(0, 3))],
        {"axis": data.draw(st.one_of(st.none(), st.integers(-r, r - 1)))},
        0,
    )
    _both("broadcast_to", [x, (2,) + x.shape], {}, 0)
    _both("squeeze", [x[:1]], {"axis": 0}, 0)
    if dtype != "bool":
        _both("diff", [x], {"axis": ax, "n": data.draw(st.integers(0, 2))}, 0)
    idx = np.asarray(
        data.draw(hnp.arrays(np.int64, x.shape, elements=st.integers(0, x.shape[ax] - 1)))
        if x.shape[ax]
        else np.zeros(x.shape, np.int64)
    )
    if x.shape[ax]:
        _both("take_along_axis", [x, idx], {"axis": ax}, 0)


# -- creation ------------------------------------------------------------------------------------


@_SETTINGS
@given(
    n=st.integers(0, 5),
    m=st.one_of(st.none(), st.integers(0, 5)),
    k=st.integers(-3, 3),
    dtype=st.sampled_from(["float32", "float64", "int32", "bool"]),
)
def test_creation(n, m, k, dtype):
    sd = None if dtype is None else getattr(strict, dtype)
    xd = None if dtype is None else getattr(xnp, dtype)
    _same(xnp.eye(n, m, k=k, dtype=xd), strict.eye(n, m, k=k, dtype=sd), 0)
    for name in ("zeros", "ones", "empty"):
        got = getattr(xnp, name)((n, 2), dtype=xd)
        want = getattr(strict, name)((n, 2), dtype=sd)
        if name != "empty":
            _same(got, want, 0)
        assert got.shape == want.shape and got.dtype == xd if dtype else True
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    _both("tril", [x], {"k": k}, 0)
    _both("triu", [x], {"k": k}, 0)
    assert xnp.full((2,), 7).tolist() == [7, 7] and xnp.full((2,), 7).dtype == xnp.int64
    assert xnp.eye(2).dtype == xnp.zeros(1).dtype == xnp.float32  # the default float
    _same(xnp.arange(n, 2 * n + 3, 2), strict.arange(n, 2 * n + 3, 2), 0)
    _same(
        xnp.linspace(0.0, 1.0, n, dtype=xnp.float64),
        strict.linspace(0.0, 1.0, n, dtype=strict.float64),
        1e-12,
    )
    a, b = np.arange(n, dtype=np.float32), np.arange(3, dtype=np.float32)
    for indexing in ("xy", "ij"):
        _same(
            xnp.meshgrid(xnp.asarray(a), xnp.asarray(b), indexing=indexing),
            strict.meshgrid(strict.asarray(a), strict.asarray(b), indexing=indexing),
            0,
        )


# -- linear algebra and FFT ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "det",
        "inv",
        "slogdet",
        "cholesky",
        "eigvalsh",
        "svdvals",
        "matrix_rank",
        "pinv",
        "trace",
        "diagonal",
        "matrix_norm",
        "vector_norm",
        "matrix_power",
        "qr",
        "solve",
        "eigh",
        "svd",
        "cross",
        "outer",
        "tensordot",
        "vecdot",
        "matmul",
    ],
)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(_FLOATS))
def test_linalg(name, data, dtype):
    n = data.draw(st.integers(1, 4))
    batch = tuple(data.draw(st.lists(st.integers(1, 2), max_size=1)))
    a = data.draw(hnp.arrays(np.dtype(dtype), batch + (n, n), elements=st.floats(-2, 2, width=32)))
    spd = (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)
    tol = 1e-3 if dtype == "float32" else 1e-8
    if name in ("det", "inv", "slogdet", "cholesky", "eigvalsh", "matrix_power"):
        _both(
            name,
            [spd] + ([data.draw(st.integers(-2, 3))] if name == "matrix_power" else []),
            {},
            tol,
            "linalg",
        )
    elif name in ("svdvals", "matrix_rank", "trace", "diagonal", "matrix_norm", "pinv"):
        kw = (
            {"ord": data.draw(st.sampled_from(["fro", "nuc", 1, 2, -2, np.inf]))}
            if name == "matrix_norm"
            else {}
        )
        if name in ("trace", "diagonal"):
            kw = {"offset": data.draw(st.integers(-2, 2))}
        _both(name, [spd if name == "pinv" else a], kw, tol, "linalg")
    elif name == "vector_norm":
        _both(
            name,
            [a],
            {
                "ord": data.draw(st.sampled_from([1, 2, np.inf, -np.inf, 0, 3])),
                "axis": data.draw(_axis(a.ndim)),
            },
            tol,
            "linalg",
        )
    elif name == "solve":
        b = data.draw(hnp.arrays(np.dtype(dtype), batch + (n, 2), elements=st.floats(-2, 2)))
        _both(name, [spd, b], {}, tol, "linalg")
    elif name in ("qr", "eigh", "svd"):  # factors are unique only up to signs: reconstruct
        x = xnp.asarray(spd)
        if name == "qr":
            q, r = xnp.linalg.qr(x)
            back = q @ r
        elif name == "eigh":
            w, v = xnp.linalg.eigh(x)
            back = (v * w[..., None, :]) @ v.mT
        else:
            u, s, vh = xnp.linalg.svd(x, full_matrices=False)
            back = (u * s[..., None, :]) @ vh
        np.testing.assert_allclose(np.asarray(back), spd, rtol=tol, atol=tol)
    elif name == "cross":
        b = a[..., :1, :] if False else None
        v1 = data.draw(hnp.arrays(np.dtype(dtype), (2, 3), elements=st.floats(-2, 2)))
        v2 = data.draw(hnp.arrays(np.dtype(dtype), (3,), elements=st.floats(-2, 2)))
        _both(name, [v1, v2], {}, tol, "linalg")
    elif name == "outer":
        _both(name, [a.reshape(-1), a.reshape(-1)[:3]], {}, tol, "linalg")
    elif name == "tensordot":
        _both(name, [a, spd], {"axes": data.draw(st.integers(0, 2))}, tol)
    elif name == "vecdot":
        _both(name, [a, spd], {"axis": -1}, tol)
    else:
        _both(name, [a, spd], {}, tol)
        _both(name, [a[..., 0, :], spd], {}, tol)


@pytest.mark.parametrize(
    "name",
    [
        "fft",
        "ifft",
        "rfft",
        "irfft",
        "hfft",
        "ihfft",
        "fftn",
        "ifftn",
        "rfftn",
        "irfftn",
        "fftshift",
        "ifftshift",
    ],
)
@_SETTINGS
@given(data=st.data(), dtype=st.sampled_from(["float32", "float64", "complex64", "complex128"]))
def test_fft(name, data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    x = _array(data.draw, dtype, shape=shape, special=False)
    real_in = name in ("rfft", "ihfft", "rfftn")
    cplx_in = name in ("ifft", "fft", "irfft", "hfft", "fftn", "ifftn", "irfftn")
    if real_in and x.dtype.kind == "c" or cplx_in and x.dtype.kind != "c":
        return
    kw = {}
    if name in ("fftshift", "ifftshift"):
        kw = {"axes": data.draw(st.one_of(st.none(), st.integers(0, x.ndim - 1)))}
    elif name.endswith("n"):
        kw = {"norm": data.draw(st.sampled_from(["backward", "ortho", "forward"]))}
    else:
        kw = {
            "norm": data.draw(st.sampled_from(["backward", "ortho", "forward"])),
            "n": data.draw(st.one_of(st.none(), st.integers(2, 6))),
            "axis": data.draw(st.integers(-x.ndim, x.ndim - 1)),
        }
    tol = 1e-3 if dtype in ("float32", "complex64") else 1e-9
    _both(name, [x], kw, tol, "fft")
    if name in ("fft", "ifft"):
        got = getattr(xnp.fft, name)(xnp.asarray(x), **kw)
        assert math.isfinite(float(np.abs(np.asarray(got)).sum()))


def test_namespace_is_complete():
    names = [
        n
        for n in dir(strict)
        if not n.startswith("_")
        and n
        not in (
            "ArrayAPIStrictFlags",
            "Device",
            "ModuleType",
            "get_array_api_strict_flags",
            "reset_array_api_strict_flags",
            "set_array_api_strict_flags",
        )
    ]
    assert [n for n in names if not hasattr(xnp, n)] == []
    for ext in ("linalg", "fft"):
        mod = getattr(strict, ext)
        names = [
            n
            for n in dir(mod)
            if not n.startswith("_")
            and callable(getattr(mod, n))
            and getattr(getattr(mod, n), "__module__", "").endswith(ext)
        ]
        assert [n for n in names if not hasattr(getattr(xnp, ext), n)] == []
    assert xnp.__array_api_version__ == "2024.12"
