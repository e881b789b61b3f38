"""The float row tree fold (xops.kernels.reduction._fold_tree, issue 15) on its vector
paths: the 16-group shuffles within 128-bit blocks and the scratch passes after them,
bit for bit against the documented tree written with NumPy
(test_reduction._tree_reference), rows of lengths about every block edge, with NaN,
infinities and signed zeros."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
from xops.ops import reduction as R
from test_reduction import _tree_reference

# lengths about the edges: 64 (a first-pass group), 128 (a 16-group call), 512 (a
# second-pass group), 1024, 4096 (a third pass)
_LENGTHS = [
    64,
    127,
    128,
    129,
    511,
    512,
    575,
    1023,
    1024,
    1025,
    1087,
    1088,
    1151,
    1535,
    1536,
    2047,
    2048,
    2111,
    4095,
    4096,
    4159,
    4160,
    5119,
    9000,
    32768,
    40000,
]


@pytest.fixture
def serial_kernels(monkeypatch):
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 << 62)


def _want(vals, op, init, dtype):
    chunk = R._ROW_CHUNK
    out = []
    with np.errstate(invalid="ignore", over="ignore"):  # (inf - inf, overflow: intended)
        for row in vals:
            parts = [_tree_reference(row[i : i + chunk], op) for i in range(0, len(row), chunk)]
            tree = parts[0] if len(parts) == 1 else _tree_reference(np.array(parts, dtype), op)
            out.append(op(dtype(init), tree))
    return np.array(out, dtype)


def _same(got, want):
    """Equal bits where the reference is a number (a zero's sign included), NaN where
    it is NaN."""
    got = np.asarray(got)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


@pytest.mark.parametrize("n", _LENGTHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_at_block_edges(n, dtype, serial_kernels):
    """Sums and products of rows of mixed magnitudes (every rounding counts), bit for
    bit the documented tree."""
    rng = np.random.default_rng(n)
    v = (rng.standard_normal((3, n)) * 10.0 ** rng.integers(-4, 5, (3, n))).astype(dtype)
    p = (1 + rng.standard_normal((2, n)) * 1e-2).astype(dtype)
    for vals, body, op, init in ((v, xo.add, np.add, 0.5), (p, xo.multiply, np.multiply, 2.0)):
        got = xo.reduce(xo.tensor(vals), init, [1], body)
        _same(got, _want(vals, op, init, dtype))


@pytest.mark.parametrize("n", [1024, 1088, 2047, 4096, 4159])
def test_tree_specials(n, serial_kernels):
    """Signed zeros (every group of a row of zeros, and lone -0s), infinities that meet
    (inf - inf: NaN) or do not, a NaN in each 128-element block, a row of NaNs."""
    rng = np.random.default_rng(40 + n)
    rows = []
    rows.append(np.full(n, -0.0))
    z = np.full(n, -0.0)
    z[rng.integers(0, n, 5)] = 0.0
    rows.append(z)
    z = rng.standard_normal(n)
    z[::3] = -0.0
    rows.append(z)
    z = rng.standard_normal(n)
    z[rng.integers(0, n, 3)] = np.inf
    rows.append(z)
    z = rng.standard_normal(n)
    z[7] = np.inf
    z[n - 9] = -np.inf
    rows.append(z)
    for at in range(0, n, 131):
        z = rng.standard_normal(n)
        z[at] = np.nan
        rows.append(z)
    rows.append(np.full(n, np.nan))
    for dtype in (np.float32, np.float64):
        vals = np.array(rows, dtype)
        for body, op, init in ((xo.add, np.add, -0.0), (xo.multiply, np.multiply, 1.0)):
            got = xo.reduce(xo.tensor(vals), init, [1], body)
            _same(got, _want(vals, op, init, dtype))


def test_tree_parallel_rows(monkeypatch):
    """The parallel kernel: rows in groups, each row's documented tree."""
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    rng = np.random.default_rng(9)
    v = rng.standard_normal((67, 3000)) * 10.0 ** rng.integers(-4, 5, (67, 3000))
    v = v.astype(np.float32)
    _same(xo.reduce(xo.tensor(v), 0.0, [1], xo.add), _want(v, np.add, 0.0, np.float32))
