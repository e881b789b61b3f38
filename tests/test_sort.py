"""sort and top_k: spec/XLA examples, fast comparators vs the generic merge sort vs a
pairwise reference, NaNs under TOTALORDER, stability, passengers, dtypes, parallel vs
serial, JAX cross-checks, gradients, and one negative test per constraint label."""

import functools
import struct

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig

from conftest import assert_tensor, bits, raises_spec
from gradcheck import check_grads


def lt(a, b, *rest):
    return xo.compare(a, b, "LT")


def lt_generic(a, b):
    c = xo.compare(a, b, "LT")  # two statements: not recognised, runs the merge sort
    return c


def gt_generic(a, b):
    c = xo.compare(a, b, "GT")
    return c


def sort_reference(rows, comparator):
    """Python's stable sort of each row, asking the comparator one pair at a time
    (the spec's definition; rows: list of lists of 0-d Tensors per operand)."""

    def cmp(i, j):
        args = [v for col in rows for v in (col[i], col[j])]
        if bool(comparator(*args)):
            return -1
        args = [v for col in rows for v in (col[j], col[i])]
        return 1 if bool(comparator(*args)) else 0

    order = sorted(range(len(rows[0])), key=functools.cmp_to_key(cmp))
    return order


def _ref_sort_1d(arrays, dts, comparator):
    cols = [
        [xo.tensor(np.asarray(a)[i : i + 1], dt).detach() for i in range(len(a))]
        for a, dt in zip(arrays, dts)
    ]
    cols = [[xo.reshape(t, []) for t in col] for col in cols]
    order = sort_reference(cols, comparator)
    return [np.asarray(a)[order] for a in arrays]


# ---------------------------------------------------------------------------------------
# examples
# ---------------------------------------------------------------------------------------


def test_sort_spec_example():
    a = np.array([[1, 2, 3], [3, 2, 1]])
    b = np.array([[3, 2, 1], [1, 2, 3]])
    r0, r1 = xo.sort(
        [a, b], dimension=0, is_stable=True, comparator=lambda x, y, p, q: xo.compare(x, y, "GT")
    )
    assert_tensor(r0, [[3, 2, 3], [1, 2, 1]], "i64")
    assert_tensor(r1, [[1, 2, 1], [3, 2, 3]], "i64")


def test_sort_xla_example_passengers():
    # 001: operand0 = [3, 1], operand1 = [42, 50], operand2 = [-3.0, 1.1], LT on operand0
    r = xo.sort(
        [
            np.array([3, 1], np.int32),
            np.array([42, 50], np.int32),
            np.array([-3.0, 1.1], np.float32),
        ],
        0,
        comparator=lambda a, b, c, d, e, f: xo.compare(a, b, "LT"),
    )
    assert_tensor(r[0], [1, 3])
    assert_tensor(r[1], [50, 42])
    assert_tensor(r[2], np.array([1.1, -3.0], np.float32))


def test_top_k_examples():
    v, i = xo.top_k(xo.tensor([1.0, 5.0, 3.0, 5.0]), 2)
    assert_tensor(v, [5.0, 5.0], "f32")
    assert_tensor(i, [1, 3], "i32")
    v, i = xo.top_k(np.array([[3, 1, 3, 2], [0, 9, 9, 9]], np.int32), 3)
    assert_tensor(v, [[3, 3, 2], [9, 9, 9]])
    assert_tensor(i, [[0, 2, 3], [1, 2, 3]])
    v, i = xo.top_k(np.array([[3, 1, 3, 2], [0, 9, 9, 9]], np.int32), 2, largest=False)
    assert_tensor(v, [[1, 2], [0, 9]])
    assert_tensor(i, [[1, 3], [0, 1]])
    v, i = xo.top_k(np.array([1.0, np.nan, -np.nan, -0.0, 0.0, np.inf], np.float32), 6)
    assert_tensor(i, [1, 5, 0, 4, 3, 2])  # totalOrder: +NaN > inf > 1 > +0 > -0 > -NaN
    v, i = xo.top_k(np.zeros((2, 0), np.float32), 0)
    assert v.shape == (2, 0) and i.shape == (2, 0)


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16", "i8", "i16", "i64", "ui8", "ui64", "i1"])
def test_top_k_vs_stable_argsort(dt):
    rng = np.random.default_rng(11)
    for _trial in range(12):
        rows, n = int(rng.integers(1, 4)), int(rng.integers(1, 400))
        k = int(rng.choice([0, 1, n, min(n, 7), int(rng.integers(0, n + 1))]))
        x = xo.tensor(_keys_with_ties(rng, dt, (rows, n)), dt)
        a = np.asarray(x).astype(np.float64) if x.dtype.kind != "bool" else np.asarray(x)
        for largest in (True, False):
            v, i = xo.top_k(x, k, largest)
            key = -a.astype(np.float64) if largest else a.astype(np.float64)
            want = np.argsort(key, axis=1, kind="stable")[:, :k]
            np.testing.assert_array_equal(np.asarray(i), want)
            np.testing.assert_array_equal(bits(v), bits(np.take_along_axis(np.asarray(x), want, 1)))
    big = np.arange(3000, dtype=np.float32)  # k above the heap size: the sorting path
    v, i = xo.top_k(big, 300)
    assert_tensor(i, np.arange(2999, 2699, -1), "i32")


# ---------------------------------------------------------------------------------------
# fast path vs generic merge sort vs the pairwise reference
# ---------------------------------------------------------------------------------------


def _keys_with_ties(rng, dt, shape):
    dt = xo.as_dtype(dt)
    if dt.kind == "bool":
        return rng.random(shape) < 0.5
    if dt.kind in ("si", "ui"):
        return xo.tensor(rng.integers(max(dt.min, -5), min(dt.max, 5) + 1, shape), dt).numpy()
    v = rng.integers(-4, 5, shape).astype(np.float32) / 2
    return v.astype(dt.np)


SORT_DTYPES = [
    "f32",
    "f64",
    "bf16",
    "f16",
    "f8E4M3FN",
    "f8E5M2FNUZ",
    "i8",
    "i32",
    "i64",
    "ui8",
    "ui32",
    "ui64",
    "i4",
    "i1",
]


@pytest.mark.parametrize("dt", SORT_DTYPES)
def test_fast_generic_reference_agree(dt):
    rng = np.random.default_rng(0)
    keys = _keys_with_ties(rng, dt, (3, 17))
    pay = np.arange(51, dtype=np.int32).reshape(3, 17)
    k = xo.tensor(keys, dt)
    for direction, gen in (("LT", lt_generic), ("GT", gt_generic)):
        fast = xo.sort([k, pay], -1, comparator=lambda a, b, c, d: xo.compare(a, b, direction))
        slow = xo.sort([k, pay], 1, comparator=lambda a, b, c, d: gen(a, b))
        for f, s in zip(fast, slow):
            np.testing.assert_array_equal(bits(f), bits(s))
        for row in range(3):
            want = _ref_sort_1d(
                [np.asarray(k)[row], pay[row]], [k.dtype, xo.int32], lambda a, b, c, d: gen(a, b)
            )
            np.testing.assert_array_equal(bits(fast[0])[row], bits(want[0]))
            np.testing.assert_array_equal(np.asarray(fast[1])[row], want[1])
        alone = xo.sort(k, comparator=lambda a, b: xo.compare(a, b, direction))
        np.testing.assert_array_equal(bits(alone), bits(fast[0]))


def _total_order_key(x):
    """IEEE totalOrder key of float32 values, written independently of xops."""
    out = []
    for v in np.asarray(x, np.float32).reshape(-1):
        (u,) = struct.unpack("<i", struct.pack("<f", v))
        out.append(u if u >= 0 else -(u & 0x7FFFFFFF) - 1)
    return np.array(out)


def test_totalorder_nans_signed_zeros():
    pats = np.array(
        [
            0x7FC00000,
            0xFFC00000,
            0x7FC00001,
            0xFF800000,
            0x7F800000,
            0x80000000,
            0x00000000,
            0x3F800000,
            0xBF800000,
            0x7FC00000,
            0x00000001,
        ],
        np.uint32,
    )
    x = pats.view(np.float32)
    for direction in ("LT", "GT"):
        got = xo.sort(x, comparator=lambda a, b: xo.compare(a, b, direction, "TOTALORDER"))
        order = np.argsort(_total_order_key(x) * (1 if direction == "LT" else -1), kind="stable")
        np.testing.assert_array_equal(bits(got), pats[order])
        gen = xo.sort(
            x, comparator=lambda a, b: xo.not_(xo.not_(xo.compare(a, b, direction, "TOTALORDER")))
        )
        np.testing.assert_array_equal(bits(gen), pats[order])
    default = xo.sort(x)  # the default comparator is ascending totalOrder
    np.testing.assert_array_equal(
        bits(default), pats[np.argsort(_total_order_key(x), kind="stable")]
    )


def test_float_compare_stability_and_nans():
    # FLOAT: -0 == +0, so a stable sort keeps them in input order; passengers follow
    x = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -1.0], np.float32)
    p = np.arange(6, dtype=np.int32)
    s, q = xo.sort([x, p], is_stable=True, comparator=lambda a, b, c, d: xo.compare(a, b, "LT"))
    assert_tensor(q, [5, 0, 1, 3, 4, 2])
    assert_tensor(s, x[[5, 0, 1, 3, 4, 2]])
    alone = xo.sort(x, is_stable=True, comparator=lambda a, b: xo.compare(a, b, "LT"))
    assert_tensor(alone, x[[5, 0, 1, 3, 4, 2]])
    # NaN under FLOAT is unordered; xops puts NaNs after +inf, in input order
    y = np.array([np.nan, 1.0, -np.inf, np.nan, 0.5], np.float32)
    s, q = xo.sort([y, p[:5]], comparator=lambda a, b, c, d: xo.compare(a, b, "LT"))
    assert_tensor(q, [2, 4, 1, 0, 3])
    s, q = xo.sort([y, p[:5]], comparator=lambda a, b, c, d: xo.compare(a, b, "GT"))
    assert_tensor(q, [0, 3, 1, 4, 2])


def test_stable_and_unstable_equal_keys():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 3, 200).astype(np.float32)
    pay = np.arange(200, dtype=np.int32)
    for stable in (True, False):
        _, q = xo.sort([keys, pay], 0, stable, lambda a, b, c, d: xo.compare(a, b, "LT"))
        np.testing.assert_array_equal(np.asarray(q), np.argsort(keys, kind="stable"))
        _, q = xo.sort([keys, pay], 0, stable, lambda a, b, c, d: xo.compare(a, b, "GT"))
        np.testing.assert_array_equal(np.asarray(q), np.argsort(-keys, kind="stable"))


def test_lexicographic_generic_comparator_and_dims():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, (4, 9, 2)).astype(np.int32)
    b = rng.standard_normal((4, 9, 2)).astype(np.float32)

    def lex(a0, a1, b0, b1):  # by a, then by b descending
        return xo.or_(
            xo.compare(a0, a1, "LT"), xo.and_(xo.compare(a0, a1, "EQ"), xo.compare(b0, b1, "GT"))
        )

    ra, rb = xo.sort([a, b], dimension=-2, comparator=lex)
    for i in range(4):
        for j in range(2):
            order = np.lexsort((-b[i, :, j], a[i, :, j]))
            np.testing.assert_array_equal(np.asarray(ra)[i, :, j], a[i, order, j])
            np.testing.assert_array_equal(np.asarray(rb)[i, :, j], b[i, order, j])


def test_complex_and_shapes():
    z = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 2j], np.complex64)
    r = xo.sort(z, comparator=lambda a, b: xo.compare(a, b, "LT"))
    assert_tensor(r, np.sort(z))
    for shape in [(0,), (1,), (3, 0), (0, 4), (2, 1, 3)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        for d in range(-len(shape), len(shape)):
            assert_tensor(xo.sort(x, d, comparator=lt), np.sort(x, axis=d))
            assert_tensor(xo.sort(x, d, comparator=lt_generic), np.sort(x, axis=d))


def test_generic_sort_longer_rows():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 50, (3, 300)).astype(np.int64)
    p = np.arange(900, dtype=np.int64).reshape(3, 300)
    r = xo.sort([x, p], comparator=lambda a, b, c, d: lt_generic(a, b))
    order = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(np.asarray(r[0]), np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(np.asarray(r[1]), np.take_along_axis(p, order, 1))


# ---------------------------------------------------------------------------------------
# parallel vs serial, thread counts
# ---------------------------------------------------------------------------------------


def _sort_all(x, p):
    out = [
        xo.sort(x, comparator=lt),
        xo.sort(x, comparator=lambda a, b: xo.compare(a, b, "GT", "TOTALORDER")),
        *xo.sort([x, p], comparator=lambda a, b, c, d: xo.compare(a, b, "LT")),
        *xo.top_k(x, 5),
    ]
    return [np.asarray(o).copy() for o in out]


def test_parallel_equals_serial(monkeypatch):
    import numba

    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 300)).astype(np.float32)
    x[0, :5] = [np.nan, -0.0, 0.0, -np.nan, np.inf]
    p = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    serial = _sort_all(x, p)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    before = numba.get_num_threads()
    try:
        for n in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(n)
            for a, b in zip(serial, _sort_all(x, p)):
                np.testing.assert_array_equal(bits(a), bits(b))
    finally:
        numba.set_num_threads(before)


# ---------------------------------------------------------------------------------------
# JAX cross-checks
# ---------------------------------------------------------------------------------------


def test_sort_top_k_vs_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_platforms", "cpu")
    from jax import lax

    rng = np.random.default_rng(7)
    x = rng.integers(-5, 5, (6, 40)).astype(np.float32)
    p = np.arange(240, dtype=np.int32).reshape(6, 40)
    want = lax.sort((x, p), dimension=1, is_stable=True, num_keys=1)
    got = xo.sort([x, p], 1, True, lambda a, b, c, d: xo.compare(a, b, "LT"))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    want = lax.sort(x, dimension=0)
    assert_tensor(xo.sort(x, 0), np.asarray(want))
    for k in (1, 7, 40):
        wv, wi = lax.top_k(x, k)
        gv, gi = xo.top_k(x, k)
        assert_tensor(gv, np.asarray(wv))
        assert_tensor(gi, np.asarray(wi), "i32")


# ---------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------


def test_sort_grad():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5))
    check_grads(lambda t: xo.sort(t, 1, comparator=lt), [x], order=2)
    y = rng.standard_normal((3, 5))
    check_grads(
        lambda a, b: xo.sort([a, b], 0, comparator=lambda p, q, r, s: xo.compare(p, q, "GT")),
        [x, y],
    )
    check_grads(lambda t: xo.sort(t, 1, comparator=lt_generic), [x])


def test_top_k_grad():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 6))
    check_grads(lambda t: xo.top_k(t, 3)[0], [x], order=2)


# ---------------------------------------------------------------------------------------
# constraints
# ---------------------------------------------------------------------------------------

X = np.zeros((2, 3), np.float32)

SORT_BAD = [
    ("C1", ([], -1, False, None)),
    ("C3", ([X, X[:1]], 0, False, lambda a, b, c, d: xo.compare(a, b, "LT"))),
    ("C4", (X, 2, False, lt)),
    ("C4", (X, -3, False, lt)),
    ("C5", (X, 0, False, lambda a, b: xo.add(a, b))),
    ("C5", (X, 0, False, lambda a, b, c, d: xo.compare(a, b, "LT"))),
    ("I2", (X, 0.5, False, lt)),
    ("I3", (X, 0, "no", lt)),
]


@pytest.mark.parametrize(
    "label,case", SORT_BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(SORT_BAD)]
)
def test_sort_constraint(label, case):
    inputs, dim, stable, cmp = case
    with raises_spec("sort", label):
        xo.sort(inputs, dim, stable, cmp)


@pytest.mark.parametrize(
    "label,args",
    [
        ("I1", (np.float32(1.0), 1)),
        ("I2", (X, 4)),
        ("I2", (X, -1)),
        ("I3", (X, 1, "yes")),
        ("I1", (X.astype(np.complex64), 1)),
    ],
)
def test_top_k_constraint(label, args):
    with raises_spec("top_k", label):
        xo.top_k(*args)
