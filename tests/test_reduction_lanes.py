"""The row lane fold of maximum/minimum/and/or (xops.kernels.reduction._fold_row,
issue 15): plain compare-selects per vector with NaNs noted apart, so every place a NaN
can sit (each of a step's four lane blocks, the first step, the tail) and every zero
tie is checked against NumPy, for f32, f64 and the integer kernels."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
from xops.kernels import reduction as KR

L, STEP = KR._LANES, KR._STEP


@pytest.fixture
def serial_kernels(monkeypatch):
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 << 62)


def _ieee_zero(v, want, dims, maximum):
    """NumPy's result with IEEE 754-2019's zero where it is a zero (NumPy may return
    either): -0 < +0, so maximum gives +0 if the elements hold one, minimum -0."""
    zeros = v == 0
    plus = np.any(zeros & ~np.signbit(v), axis=dims)
    minus = np.any(zeros & np.signbit(v), axis=dims)
    signed = np.where(plus, 0.0, -0.0) if maximum else np.where(minus, -0.0, 0.0)
    return np.where(want == 0, signed.astype(v.dtype), want)


def _check_minmax(v, dims=(1,)):
    """xops maximum/minimum over ``dims`` of v against NumPy: NaN where NumPy has one,
    the same values elsewhere, and IEEE's zero (:func:`_ieee_zero`)."""
    for body, init, ref in ((xo.maximum, -np.inf, np.max), (xo.minimum, np.inf, np.min)):
        got = np.asarray(xo.reduce(xo.tensor(v), init, list(dims), body))
        want = _ieee_zero(v, ref(v, axis=tuple(dims)), tuple(dims), body is xo.maximum)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(got[keep], want[keep])
        np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))


# a NaN in the first step, in each lane block of a later step, in the last lane, in the
# tail after the last whole step, twice, beside infinities, and a row of NaNs alone
_NAN_AT = [0, L - 1, L + 3, 2 * L + 5, 3 * L + 7, STEP + 1, 2 * STEP + L + 30]


@pytest.mark.parametrize("n", [2 * STEP, 2 * STEP + 1, 5 * STEP + 77, 4099])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_anywhere_in_a_row(n, dtype, serial_kernels):
    rng = np.random.default_rng(31)
    rows = len(_NAN_AT) + 5
    v = rng.standard_normal((rows, n)).astype(dtype)
    for i, k in enumerate(_NAN_AT):
        v[i, min(k, n - 1 - i)] = np.nan
    v[len(_NAN_AT), n - 1] = np.nan  # the tail (or the last step's last lane)
    v[len(_NAN_AT) + 1, [3, n - 2]] = np.nan
    v[len(_NAN_AT) + 2, :] = np.inf
    v[len(_NAN_AT) + 2, n // 2] = np.nan
    v[len(_NAN_AT) + 3, :] = np.nan
    v[len(_NAN_AT) + 4, ::7] = -np.inf  # no NaN: infinities alone
    _check_minmax(v)


@pytest.mark.parametrize("n", [2 * STEP, 3 * STEP + 5, 1000])
def test_signed_zero_ties(n, serial_kernels):
    """Rows whose result is a zero: +0 wins maximum and -0 minimum wherever the zeros
    sit (a lane, another lane block, the tail), or the one zero there is."""
    v = np.full((6, n), -0.0, np.float32)
    v[1, L + 2] = 0.0
    v[2, n - 1] = 0.0
    v[3] = np.where(np.arange(n) % 3, -0.0, 0.0)
    v[4] = -1.0
    v[4, 2 * L] = -0.0
    v[5] = 0.0
    _check_minmax(v)
    _check_minmax(-v)


def test_nan_and_zeros_in_columns_of_a_transposed_input(serial_kernels):
    """A non-contiguous input reduced over its last axis (copied to rows first)."""
    rng = np.random.default_rng(32)
    v = rng.standard_normal((700, 9)).astype(np.float32)
    v[400, 2] = np.nan
    v[:, 5] = -0.0
    v[3, 5] = 0.0
    _check_minmax(v.T)
    _check_minmax(v[::2].T)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint32, np.uint64])
def test_integer_lanes(dtype, serial_kernels):
    """Integers on the lane fold: maximum, minimum, and, or equal NumPy's (init values
    the identities, and one that wins)."""
    rng = np.random.default_rng(33)
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, (5, 3 * STEP + 11), dtype=dtype, endpoint=True)
    x = xo.tensor(v)
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, info.min, [1], xo.maximum)), v.max(1))
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, info.max, [1], xo.minimum)), v.min(1))
    big = dtype(info.max)
    np.testing.assert_array_equal(
        np.asarray(xo.reduce(x, xo.tensor(big), [1], xo.maximum)), np.full(5, big)
    )
    ones = dtype(info.max) if info.min == 0 else dtype(-1)
    want_and = np.bitwise_and.reduce(v, axis=1)
    want_or = np.bitwise_or.reduce(v, axis=1)
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, xo.tensor(ones), [1], xo.and_)), want_and)
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, dtype(0), [1], xo.or_)), want_or)


def test_parallel_equals_serial_and_numpy(monkeypatch):
    """The parallel variant (groups of rows per iteration) gives the serial results."""
    rng = np.random.default_rng(34)
    v = rng.standard_normal((530, 1000)).astype(np.float32)
    v[17, 400] = np.nan
    v[300] = -0.0
    v[300, 999] = 0.0
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 << 62)
    serial = [np.asarray(xo.reduce(xo.tensor(v), i, [1], b)) for b, i in _BODIES]
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    for (body, init), want in zip(_BODIES, serial):
        got = np.asarray(xo.reduce(xo.tensor(v), init, [1], body))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    _check_minmax(v)


_BODIES = [(xo.maximum, -np.inf), (xo.minimum, np.inf), (xo.add, 0.0)]


def test_single_row_and_short_rows(serial_kernels):
    """One row, a row just long enough for the lanes, and rows too short for them."""
    rng = np.random.default_rng(35)
    for n in (1, 2, 2 * STEP - 1, 2 * STEP):
        v = rng.standard_normal((2, n)).astype(np.float32)
        v[1, n - 1] = np.nan
        _check_minmax(v)
    empty = np.asarray(xo.reduce(xo.tensor(np.zeros((3, 0), np.float32)), -np.inf, [1], xo.maximum))
    np.testing.assert_array_equal(empty, np.full(3, -np.inf, np.float32))
