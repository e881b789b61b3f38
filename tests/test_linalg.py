"""dot_general and dot against the spec's example, np.einsum references and every
constraint label."""

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec


def test_spec_example():
    lhs = xo.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], "i64")
    rhs = xo.tensor([[[1, 0], [0, 1]], [[1, 0], [0, 1]]], "i64")
    out = xo.dot_general(
        lhs,
        rhs,
        lhs_batching_dimensions=[0],
        rhs_batching_dimensions=[0],
        lhs_contracting_dimensions=[2],
        rhs_contracting_dimensions=[1],
        precision_config=["DEFAULT", "DEFAULT"],
    )
    assert_tensor(out, [[[1, 2], [3, 4]], [[5, 6], [7, 8]]], "i64")


def _einsum_spec(ra, rb, lb, rbd, lc, rc):
    letters = iter("abcdefghijklmnop")
    la, lr = [None] * ra, [None] * rb
    for i, j in zip(lb, rbd):
        la[i] = lr[j] = next(letters)
    for i, j in zip(lc, rc):
        la[i] = lr[j] = next(letters)
    for v in (la, lr):
        for i in range(len(v)):
            v[i] = v[i] or next(letters)
    out = (
        [la[i] for i in lb]
        + [la[i] for i in range(ra) if i not in lb + lc]
        + [lr[i] for i in range(rb) if i not in rbd + rc]
    )
    return f"{''.join(la)},{''.join(lr)}->{''.join(out)}"


ZOO = [  # shapes, lhs batch, rhs batch, lhs contracting, rhs contracting
    ((3, 4), (4, 5), [], [], [1], [0]),
    ((4, 3), (5, 4), [], [], [0], [1]),  # contracting dims anywhere
    ((2, 3, 4), (2, 4, 5), [0], [0], [2], [1]),
    ((3, 2, 4), (4, 5, 2), [1], [2], [2], [0]),  # batch dims in the middle / last
    ((2, 3, 4, 5), (5, 4, 2, 6), [0], [2], [2, 3], [1, 0]),  # several contracting, any order
    ((3,), (4,), [], [], [], []),  # outer product
    ((2, 3), (2, 3), [0, 1], [0, 1], [], []),  # all batch: elementwise product
    ((0, 3), (3, 2), [], [], [1], [0]),  # empty free dim
    ((2, 0), (0, 3), [], [], [1], [0]),  # empty contraction -> zeros
]


@pytest.mark.parametrize("case", ZOO, ids=lambda c: f"{c[0]}x{c[1]}")
@pytest.mark.parametrize("dtype", ["f32", "f64", "i32", "c64"])
def test_against_einsum(case, dtype):
    sa, sb, lb, rbd, lc, rc = case
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, sa).astype(xo.as_dtype(dtype).np)
    b = rng.integers(-3, 4, sb).astype(xo.as_dtype(dtype).np)
    want = np.einsum(_einsum_spec(len(sa), len(sb), lb, rbd, lc, rc), a, b)
    got = xo.dot_general(a, b, lb, rbd, lc, rc)
    assert_tensor(got, want.astype(a.dtype), dtype)


@pytest.mark.parametrize("dtype", [d for d in xo.all_dtypes()])
def test_every_element_type(dtype):
    # small integer values are exact in every type; products and sums too (<= 6)
    a = np.array([[1, 0], [1, 1]])
    b = np.array([[1, 1], [0, 1]])
    want = a @ b if dtype.kind != "bool" else (a @ b) > 0
    if dtype.name in ("i2", "f4E2M1FN"):
        a, b = np.eye(2, dtype=int), np.eye(2, dtype=int)  # values that type can hold
        want = np.eye(2, dtype=int)
    if dtype.name == "f8E8M0FNU":  # powers of two only, and no zero
        a, b, want = np.array([[2, 4]]), np.array([[4], [2]]), np.array([[16]])
    got = xo.dot_general(
        xo.tensor(a, dtype),
        xo.tensor(b, dtype),
        lhs_contracting_dimensions=[1],
        rhs_contracting_dimensions=[0],
    )
    assert got.dtype is dtype
    assert_tensor(got, xo.tensor(want, dtype).numpy())


def test_integer_accumulation_is_exact_and_wraps_to_the_result_type():
    a = xo.tensor([[100, 100, 100]], "i8")
    out = xo.dot_general(
        a,
        a,
        lhs_contracting_dimensions=[1],
        rhs_contracting_dimensions=[1],
        preferred_element_type="i32",
    )
    assert_tensor(out, [[30000]], "i32")
    wrapped = xo.dot_general(a, a, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1])
    assert_tensor(wrapped, [[np.int64(30000).astype(np.int8)]], "i8")  # 30000 mod 256
    big = xo.tensor([[2**62, 2**62]], "i64")
    assert_tensor(
        xo.dot_general(big, big, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1]),
        [[0]],
        "i64",
    )  # 2^125 mod 2^64


@pytest.mark.parametrize("bound", [2**20, 2**24 - 1, 2**31 - 1])
def test_integer_dot_is_exact_on_both_paths(bound):
    # |a|max * |b|max * K < 2**53 runs in float64 BLAS, otherwise in int64: both exact
    rng = np.random.default_rng(bound)
    a = rng.integers(-bound, bound, (5, 32), dtype=np.int64).astype(np.int32)
    b = rng.integers(-bound, bound, (32, 3), dtype=np.int64).astype(np.int32)
    a[0, 0], b[0, 0] = bound, -bound
    got = xo.dot_general(
        xo.tensor(a), xo.tensor(b), lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
    )
    exact = [
        [sum(int(a[i, k]) * int(b[k, j]) for k in range(32)) for j in range(3)] for i in range(5)
    ]
    want = np.array([[((v + 2**31) % 2**32) - 2**31 for v in row] for row in exact])
    assert_tensor(got, want.astype(np.int32), "i32")


def test_bf16_accumulates_in_f32_and_rounds_once():
    # 256 + 1 + 1 + ... : in bf16 each add would round away the 1s; f32 accumulation keeps them
    a = np.array([[256.0] + [1.0] * 16])
    x = xo.tensor(a, "bf16")
    ones = xo.tensor(np.ones((17, 1)), "bf16")
    out = xo.dot_general(x, ones, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    assert_tensor(out, [[272.0]], "bf16")
    wide = xo.dot_general(
        x,
        ones,
        lhs_contracting_dimensions=[1],
        rhs_contracting_dimensions=[0],
        preferred_element_type="f32",
    )
    assert_tensor(wide, [[272.0]], "f32")


def test_dot_ranks():
    v, m = np.array([1.0, 2.0], np.float32), np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert_tensor(xo.dot(v, v), v @ v, "f32")
    assert_tensor(xo.dot(m, v), m @ v, "f32")
    assert_tensor(xo.dot(v, m), v @ m, "f32")
    assert_tensor(xo.dot(m, m), m @ m, "f32")
    with raises_spec("dot", "I1"):
        xo.dot(np.ones((2, 2, 2), np.float32), m)
    with raises_spec("dot", "C10"):
        xo.dot(np.ones((2, 3), np.float32), m)


def _dg(sa, sb, **kw):
    return xo.dot_general(np.ones(sa, np.float32), np.ones(sb, np.float32), **kw)


def test_constraint_labels():
    with raises_spec("dot_general", "C1"):
        _dg((2, 3), (2, 3), lhs_batching_dimensions=[0])
    with raises_spec("dot_general", "C2"):
        _dg((2, 3), (3, 2), lhs_contracting_dimensions=[1])
    with raises_spec("dot_general", "C3"):
        _dg(
            (2, 3),
            (2, 2),
            lhs_batching_dimensions=[0],
            rhs_batching_dimensions=[0],
            lhs_contracting_dimensions=[0],
            rhs_contracting_dimensions=[1],
        )
    with raises_spec("dot_general", "C4"):
        _dg(
            (2, 2),
            (2, 3),
            lhs_batching_dimensions=[0],
            rhs_batching_dimensions=[0],
            lhs_contracting_dimensions=[1],
            rhs_contracting_dimensions=[0],
        )
    with raises_spec("dot_general", "C5"):
        _dg((2, 3), (2, 3), lhs_batching_dimensions=[2], rhs_batching_dimensions=[0])
    with raises_spec("dot_general", "C6"):
        _dg((2, 3), (3, 2), lhs_contracting_dimensions=[-1], rhs_contracting_dimensions=[0])
    with raises_spec("dot_general", "C7"):
        _dg((2, 3), (2, 3), lhs_batching_dimensions=[0], rhs_batching_dimensions=[5])
    with raises_spec("dot_general", "C8"):
        _dg((2, 3), (3, 2), lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[2])
    with raises_spec("dot_general", "C9"):
        _dg((2, 3), (4, 3), lhs_batching_dimensions=[0], rhs_batching_dimensions=[0])
    with raises_spec("dot_general", "C10"):
        _dg((2, 3), (4, 2), lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    with raises_spec("dot_general", "C11"):
        _dg(
            (2, 3),
            (3, 2),
            lhs_contracting_dimensions=[1],
            rhs_contracting_dimensions=[0],
            precision_config=["DEFAULT"],
        )
    with raises_spec("dot_general", "C13"):
        xo.dot_general(
            np.ones((2, 3), np.float32),
            np.ones((3, 2)),
            lhs_contracting_dimensions=[1],
            rhs_contracting_dimensions=[0],
        )


@pytest.mark.parametrize(
    "lhs, rhs, one",
    [
        ((64, 1568), (1568, 10), True),  # a dense layer: 1M multiply-adds
        ((64, 10), (10, 1568), True),
        ((4, 64, 128), (4, 128, 64), True),  # batched: 4 x 524K together
        ((4, 64, 32), (4, 32, 64), False),  # 131K each: one thread in OpenBLAS anyway
        ((8, 8), (8, 8), False),  # OpenBLAS keeps it on one thread itself
        ((256, 512), (512, 256), False),  # 33M: BLAS's threads
        ((64, 128, 128), (64, 128, 128), True),  # batched 64 x 2M: whole products per thread
        ((3, 200, 200), (3, 200, 200), True),  # 3 x 8M: ... up to 2^24 each
        ((2, 260, 260), (2, 260, 260), False),  # 2 x 17.6M: each past 2^24, BLAS's threads
    ],
)
def test_small_products_run_on_one_blas_thread(monkeypatch, lhs, rhs, one):
    """Products between OpenBLAS's own one-thread bound and ``ONE_THREAD_MACS`` run
    under ``one_thread()`` (threaded, OpenBLAS's workers would spin for ~0.1 s after
    them, taking a core from the kernels that follow), and batches of products of up to
    ``PIECE_MACS`` each whole products on the threads, one BLAS thread each; the values
    are the matmul's."""
    import contextlib

    from xops.ops import _blas

    used = []
    real = _blas.one_thread

    @contextlib.contextmanager
    def spy():
        used.append(True)
        with real():
            yield

    monkeypatch.setattr(_blas, "one_thread", spy)
    rng = np.random.default_rng(len(lhs) + lhs[-1])
    a = rng.integers(-4, 5, lhs).astype(np.float32)
    b = rng.integers(-4, 5, rhs).astype(np.float32)
    batch = [0] if len(lhs) == 3 else []
    out = xo.dot_general(a, b, batch, batch, [len(lhs) - 1], [len(rhs) - 2])
    np.testing.assert_array_equal(np.asarray(out), np.matmul(a, b))  # (exact: integers)
    assert bool(used) == one


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_products_on_numbas_threads_match_numpy_bit_for_bit(dtype, monkeypatch):
    # batches past ONE_THREAD_MACS with products of at most PIECE_MACS run one BLAS GEMM
    # per product from a prange loop (xops.kernels.gemm): np.matmul's bits on one BLAS
    # thread (OpenBLAS's last bits depend on its thread count), odd shapes,
    # batch dims in any place (a transposed operand is made contiguous first), and the
    # same through the Python pieces where the GEMM routine is not found
    from xops.ops import _blas

    rng = np.random.default_rng(11)
    cases = (
        ((37, 129, 65), (37, 65, 131), [0], [0], [2], [1]),
        ((96, 40, 33), (33, 40, 70), [1], [1], [2], [0]),  # batch dims not leading
    )
    for sa, sb, lb, rb, lc, rc in cases:
        a = rng.standard_normal(sa).astype(dtype)
        b = rng.standard_normal(sb).astype(dtype)
        with _blas.one_thread():  # (each product on one BLAS thread, as the kernel's)
            want = np.matmul(np.moveaxis(a, lb[0], 0), np.moveaxis(b, rb[0], 0))
        assert _blas.ONE_THREAD_MACS < want.size * a.shape[lc[0]]
        got = xo.dot_general(xo.tensor(a), xo.tensor(b), lb, rb, lc, rc)
        assert got.dtype.np == np.dtype(dtype)
        np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8))
        if _blas.gemm_address(np.dtype(dtype)):
            calls = []
            original = _blas.gemm_address
            monkeypatch.setattr(_blas, "gemm_address", lambda dt: calls.append(dt) or 0)
            again = xo.dot_general(xo.tensor(a), xo.tensor(b), lb, rb, lc, rc)
            monkeypatch.setattr(_blas, "gemm_address", original)
            assert calls  # (the pieces path ran)
            np.testing.assert_array_equal(again.numpy().view(np.uint8), want.view(np.uint8))
