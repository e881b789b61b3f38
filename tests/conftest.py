"""Shared test helpers: exact comparison of tensors against NumPy references."""

import numpy as np
import pytest

import xops as xo


def bits(a):
    """The raw bit patterns of an array (NaN payloads and signed zeros included)."""
    a = np.asarray(a)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}[a.dtype.itemsize]
    return np.ascontiguousarray(a).view(width)


def assert_tensor(t, expected, dtype=None, exact=True, rtol=0, atol=0, signed_zeros=True):
    """Assert that Tensor ``t`` has ``dtype`` (if given), ``expected``'s shape and values.

    exact=True: integers/bools equal; floats equal value by value, NaN where NaN, and the
    sign of zero checked (signed_zeros). exact=False: np.testing.assert_allclose.
    """
    assert isinstance(t, xo.Tensor), f"expected a Tensor, got {type(t).__name__}"
    if dtype is not None:
        assert t.dtype == xo.as_dtype(dtype), f"dtype {t.dtype} != {xo.as_dtype(dtype)}"
    got = np.asarray(t)
    want = np.asarray(expected)
    if t.dtype.is_narrow:
        got = got.astype(t.dtype.compute)
        if want.dtype == t.dtype.np:
            want = want.astype(t.dtype.compute)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    if not exact:
        np.testing.assert_allclose(
            got, want.astype(got.dtype), rtol=rtol, atol=atol, equal_nan=True
        )
        return
    if got.dtype.kind in "fc":
        want = want.astype(got.dtype)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        m = ~np.isnan(got)
        np.testing.assert_array_equal(got[m], want[m])
        if signed_zeros and got.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(got[m]), np.signbit(want[m]))
    else:
        np.testing.assert_array_equal(got, want)


def raises_spec(op, label):
    """``with raises_spec("pad", "C2"):`` expects a SpecError for that op and label."""
    return pytest.raises(xo.SpecError, match=rf"^{op} \({label}\)")


# The shape zoo every elementwise op runs over: scalars, size-1 and size-0 dims.
SHAPES = [(), (1,), (5,), (2, 3), (0,), (3, 0, 2), (1, 1, 4)]


@pytest.fixture(autouse=True)
def _empty_host_queues():
    """Each test starts with empty infeed/outfeed queues (process state, like a device's):
    an entry one test queued and never took must not reach the next test's infeed."""
    from xops.distributed.context import current

    ctx = current()
    ctx.infeed.clear()
    ctx.outfeed.clear()
