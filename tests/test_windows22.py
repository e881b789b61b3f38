"""2x2 / stride-2 windows (max pooling and its gradient) in SIMD rows
(xops.kernels.windows22) against the naive references: every vector width and its
overlapping last vector (rows of 1 to 35 windows), rows and columns no window covers,
ties, NaNs and signed zeros, each select direction and scatter op, f32, f64 and bf16,
serial and parallel.

Specialisations are kept few (CI compiles them cold): each select direction with
scatter add and each scatter op with GE on f32; GE/add and maximum on f64."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
from xops.ops import windows as R
from conftest import assert_tensor

WIN = [1, 1, 2, 2]
WINDOWS = [1, 2, 3, 4, 5, 7, 8, 9, 14, 15, 16, 17, 33]  # per row: scalar, 4, 8, 16 lanes


def _values(shape, dtype, seed):
    """Small integers (ties) with NaNs, +0 and -0 sprinkled in."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-2, 3, shape).astype(np.float64)
    flat = v.reshape(-1)
    for value, share in ((np.nan, 0.05), (0.0, 0.1), (-0.0, 0.1)):
        flat[rng.random(flat.size) < share] = value
    return xo.tensor(v.astype(np.float32) if dtype == "f32" else v, dtype)


def _same(got, want, dtype):
    g = got.numpy().astype(np.float64)
    w = want.numpy().astype(np.float64)
    assert got.type == want.type
    np.testing.assert_array_equal(g, w)  # (NaN equals NaN here)
    np.testing.assert_array_equal(np.signbit(g[~np.isnan(g)]), np.signbit(w[~np.isnan(w)]))


def _shape(o3, extra):
    """(2, 2, rows, cols) with 3 rows of windows and o3 windows a row; ``extra``: one
    row and one column no window covers."""
    return (2, 2, 6 + extra, 2 * o3 + extra)


@pytest.mark.parametrize("o3", WINDOWS)
@pytest.mark.parametrize("extra", [0, 1])
def test_max_pool_rows(o3, extra):
    x = _values(_shape(o3, extra), "f32", o3 + 7 * extra)
    for init, body in ((float("-inf"), xo.maximum), (float("inf"), xo.minimum), (0.5, xo.maximum)):
        got = xo.reduce_window(x, init, WIN, WIN, body=body)
        _same(got, R.reduce_window_reference(x, init, WIN, WIN, body=body), "f32")


@pytest.mark.parametrize("dtype", ["f64", "bf16"])
@pytest.mark.parametrize("o3", [1, 2, 3, 5, 8, 9, 17])
def test_max_pool_rows_other_types(dtype, o3):
    x = _values(_shape(o3, 1), dtype, o3)
    got = xo.reduce_window(x, float("-inf"), WIN, WIN, body=xo.maximum)
    _same(got, R.reduce_window_reference(x, float("-inf"), WIN, WIN, body=xo.maximum), dtype)


def _select(direction):
    """The recognised select body (a literal direction: a closure's is not read)."""
    return {
        "GE": lambda a, b: xo.compare(a, b, "GE"),
        "GT": lambda a, b: xo.compare(a, b, "GT"),
        "LE": lambda a, b: xo.compare(a, b, "LE"),
        "LT": lambda a, b: xo.compare(a, b, "LT"),
    }[direction]


SELECT_SCATTER = [("GE", xo.add, 0.0), ("GT", xo.add, 0.0), ("LE", xo.add, 0.0)]
SELECT_SCATTER += [("LT", xo.add, 1.0), ("GE", xo.multiply, 2.0)]
SELECT_SCATTER += [("GE", xo.maximum, 0.0), ("GE", xo.minimum, -0.0)]


@pytest.mark.parametrize("o3", WINDOWS)
@pytest.mark.parametrize("extra", [0, 1])
def test_max_pool_gradient_rows(o3, extra):
    shape = _shape(o3, extra)
    x = _values(shape, "f32", o3 + 3 * extra)
    src = _values(shape[:2] + (3, o3), "f32", o3 + 11)
    for direction, scatter, init in SELECT_SCATTER:
        kw = dict(select=_select(direction), scatter=scatter)
        got = xo.select_and_scatter(x, src, init, WIN, WIN, **kw)
        _same(got, R.select_and_scatter_reference(x, src, init, WIN, WIN, **kw), "f32")


@pytest.mark.parametrize("dtype", ["f64", "bf16"])
@pytest.mark.parametrize("o3", [1, 2, 3, 5, 8, 9, 17])
def test_max_pool_gradient_rows_other_types(dtype, o3):
    shape = _shape(o3, 1)
    x, src = _values(shape, dtype, o3), _values(shape[:2] + (3, o3), dtype, o3 + 1)
    kw = dict(select=_select("GE"), scatter=xo.add)
    got = xo.select_and_scatter(x, src, 0.0, WIN, WIN, **kw)
    _same(got, R.select_and_scatter_reference(x, src, 0.0, WIN, WIN, **kw), dtype)


@pytest.mark.parametrize("parallel", [False, True])
def test_max_pool_and_gradient_numpy_shapes(monkeypatch, parallel):
    """Training shapes (28 x 28 and 14 x 14 maps, odd sizes), serial and parallel,
    against NumPy: the forward maximum of each window, the gradient at each window's
    first maximum."""
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 if parallel else 1 << 62)
    rng = np.random.default_rng(5)
    for shape in [(3, 4, 28, 28), (5, 8, 14, 14), (2, 3, 15, 13)]:
        v = rng.standard_normal(shape).astype(np.float32)
        o2, o3 = shape[2] // 2, shape[3] // 2
        win = (
            v[:, :, : 2 * o2, : 2 * o3]
            .reshape(*shape[:2], o2, 2, o3, 2)
            .transpose(0, 1, 2, 4, 3, 5)
            .reshape(*shape[:2], o2, o3, 4)
        )
        got = xo.reduce_window(xo.tensor(v), float("-inf"), WIN, WIN, body=xo.maximum)
        assert_tensor(got, win.max(axis=-1))
        g = rng.standard_normal((*shape[:2], o2, o3)).astype(np.float32)
        got = xo.select_and_scatter(
            xo.tensor(v), xo.tensor(g), 0.0, WIN, WIN, select=_select("GE"), scatter=xo.add
        )
        pick = np.eye(4, dtype=bool)[win.argmax(axis=-1)]  # the first maximum
        want = np.zeros_like(v)
        want[:, :, : 2 * o2, : 2 * o3] = (
            np.where(pick, g[..., None], 0)
            .reshape(*shape[:2], o2, o3, 2, 2)
            .transpose(0, 1, 2, 4, 3, 5)
            .reshape(*shape[:2], 2 * o2, 2 * o3)
        )
        assert_tensor(got, want)


@pytest.mark.parametrize("cols", [6, 40])  # one-lane steps, and vectors
@pytest.mark.parametrize("body", ["maximum", "minimum"])
def test_max_pool_nan_payloads_and_zeros(body, cols):
    """The SIMD rows' rule, bit for bit: a window holding a NaN gives its first NaN
    (row-major window order) quieted; a zero result is +0 for maximum if the window
    holds a +0 (else -0), -0 for minimum if it holds a -0."""
    rng = np.random.default_rng(4)
    x = rng.integers(-2, 3, (3, 4, 8, cols)).astype(np.float32)
    bits = x.view(np.uint32)
    nans = np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF812345, 0x80000000], np.uint32)
    hit = rng.random(x.shape) < 0.3
    bits[hit] = rng.choice(nans, hit.sum())  # quiet and signalling NaNs, and -0
    inf = float("-inf") if body == "maximum" else float("inf")
    got = xo.reduce_window(xo.tensor(x), inf, WIN, WIN, body=getattr(xo, body)).numpy()
    w = x.reshape(3, 4, 4, 2, cols // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(3, 4, 4, -1, 4)
    want = (np.fmax if body == "maximum" else np.fmin).reduce(w, axis=-1)
    zero = w == 0
    keep = (zero & ~np.signbit(w)).any(-1) if body == "maximum" else ~(zero & np.signbit(w)).any(-1)
    want = np.where(want == 0, np.where(keep, np.float32(0), np.float32(-0.0)), want)
    nan = np.isnan(w)
    first = np.take_along_axis(w.view(np.uint32), np.argmax(nan, -1)[..., None], -1)[..., 0]
    want_bits = np.where(nan.any(-1), first | np.uint32(1 << 22), want.view(np.uint32))
    np.testing.assert_array_equal(got.view(np.uint32), want_bits)
