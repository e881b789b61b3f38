"""The kernel gradient's per-input-feature GEMMs (``xops.ops.convolution._per_chan``: the
im2row rows written as one block per input feature, one single-threaded BLAS product
per feature, in pieces shared out to the threads, the partial products added in order)
against float64 references, the general path and finite differences; and
``xops.ops._blas.one_thread`` and ``run_pieces``."""

import itertools
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import xops as xo
from conftest import assert_tensor
from gradcheck import check_grads
from xops.ops import _blas
from xops.ops import _convolution_direct as D
from xops.ops import convolution as C
from xops.ops.convolution import convolution_grad_rhs, convolution_reference

PAD = dict(padding=[(1, 1), (1, 1)])
PER_CHAN_RESULT = C._PER_CHAN_RESULT


def _grad_rhs64(x, g, k=3, pad=1):
    """The 3x3 kernel gradient in float64: sum over n, h, w of g * the shifted input."""
    xp = np.pad(np.asarray(x, np.float64), [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    win = sliding_window_view(xp, (k, k), axis=(2, 3))  # (N, C, H, W, k, k)
    return np.einsum("nchwij,nohw->ocij", win, np.asarray(g, np.float64))


@pytest.fixture
def per_chan_calls(monkeypatch):
    """The (C, O, K) views _per_chan handed out (None where it declined). The register-
    blocked kernels, which AVX2 / AVX-512 CPUs try first for 3 x 3 kernels
    (tests/test_convolution_fast.py), are off: these tests are the packings'."""
    calls = []
    monkeypatch.setattr(D, "_vector_lanes", lambda: 0)
    real = C._per_chan

    def spy(*args):
        out = real(*args)
        calls.append(out)
        return out

    monkeypatch.setattr(C, "_per_chan", spy)
    return calls


@pytest.mark.parametrize("n, c, h, o", [(6, 3, 16, 8), (4, 1, 12, 16), (3, 3, 32, 32)])
def test_cifar_like_kernel_gradient_is_close_to_float64(n, c, h, o, per_chan_calls):
    """Few input channels (CIFAR's first layer, the digits CNN's first layer): the
    per-feature path runs, and the f32 result is within 2e-6 of the largest float64
    entry (only the summation order differs from the single-GEMM path)."""
    rng = np.random.default_rng(21)
    x = rng.standard_normal((n, c, h, h), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    g = rng.standard_normal((n, o, h, h), dtype=np.float32)
    _, pullback = xo.vjp(lambda b: xo.convolution(x, b, **PAD), xo.tensor(w))
    got = np.asarray(pullback(xo.tensor(g))[0])
    assert any(v is not None for v in per_chan_calls)
    want = _grad_rhs64(x, g)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.abs(got - want).max() <= 2e-6 * np.abs(want).max()


def test_per_feature_path_equals_general_path_on_integers(monkeypatch, per_chan_calls):
    """Integer-valued f32 data: every order is exact, so the per-feature path, the
    single-GEMM im2row path, the general packings and the reference agree bit for bit
    (padding, strides and rhs dilation of the forward convolution included)."""
    rng = np.random.default_rng(22)
    for attrs in [
        PAD,
        dict(window_strides=[2, 1], padding=[(1, 0), (2, 1)]),
        dict(rhs_dilation=[1, 2], padding=[(0, 1), (2, 2)]),
    ]:
        x = rng.integers(-3, 4, (5, 3, 11, 9)).astype(np.float32)
        w = np.zeros((4, 3, 3, 3), np.float32)
        y_shape = np.asarray(convolution_reference(x, w, **attrs)).shape
        g = rng.integers(-3, 4, y_shape).astype(np.float32)
        per_chan_calls.clear()
        monkeypatch.setattr(C, "_FORCE_STRATEGY", "im2row")
        got = np.asarray(convolution_grad_rhs(g, x, w.shape, **attrs))
        assert per_chan_calls and per_chan_calls[-1] is not None
        monkeypatch.setattr(C, "_PER_CHAN_RESULT", 0)  # the single-GEMM im2row
        single = np.asarray(convolution_grad_rhs(g, x, w.shape, **attrs))
        monkeypatch.setattr(C, "_FAST_2D", False)  # the general packings
        general = np.asarray(convolution_grad_rhs(g, x, w.shape, **attrs))
        monkeypatch.setattr(C, "_FORCE_STRATEGY", None)
        monkeypatch.setattr(C, "_FAST_2D", True)
        monkeypatch.setattr(C, "_PER_CHAN_RESULT", PER_CHAN_RESULT)
        automatic = np.asarray(convolution_grad_rhs(g, x, w.shape, **attrs))
        np.testing.assert_array_equal(got, single)
        np.testing.assert_array_equal(got, general)
        np.testing.assert_array_equal(got, automatic)
        # the same convolution spelled out for the reference: lhs batch/feature swapped,
        # the cotangent as the kernel (see convolution_grad_rhs)
        want = _grad_rhs_reference(x, g, attrs)
        np.testing.assert_array_equal(got, want)


def _grad_rhs_reference(x, g, attrs, dtype=np.float32):
    strides = attrs.get("window_strides", [1, 1])
    rdil = attrs.get("rhs_dilation", [1, 1])
    x64, g64 = np.asarray(x, np.float64), np.asarray(g, np.float64)
    k_shape = [3, 3]
    pads = []
    for (lo, _), i, k, o, s, d in zip(
        attrs["padding"], x.shape[2:], k_shape, g.shape[2:], strides, rdil
    ):
        dk, dout = (k - 1) * d + 1, (o - 1) * s + 1
        pads.append((lo, dout - i + dk - lo - 1))
    out = convolution_reference(
        x64,
        g64,
        window_strides=rdil,
        padding=pads,
        rhs_dilation=strides,
        dimension_numbers="CNHW,IOHW,CNHW",
    )
    return np.asarray(out).astype(dtype)


@pytest.mark.parametrize("dtype", ["f64", "i32"])
def test_other_types_take_the_per_feature_path_exactly(dtype, per_chan_calls):
    """f64, and integers (their exact float64 path): the result equals the reference."""
    rng = np.random.default_rng(23)
    x = xo.tensor(rng.integers(-5, 6, (4, 2, 7, 7)), dtype)
    g = xo.tensor(rng.integers(-5, 6, (4, 3, 7, 7)), dtype)
    got = convolution_grad_rhs(g, x, (3, 2, 3, 3), **PAD)
    assert per_chan_calls[-1] is not None
    want = _grad_rhs64(np.asarray(x), np.asarray(g))
    assert_tensor(got, want.astype(np.asarray(got).dtype), dtype)


def test_specials_propagate_as_in_the_reference(per_chan_calls):
    """inf in the input and NaN in the cotangent reach the entries they touch, and the
    padding zeros times inf make NaN where the spec's padded windows reach them."""
    rng = np.random.default_rng(24)
    x = rng.integers(-2, 3, (3, 2, 6, 6)).astype(np.float32)
    g = rng.integers(-2, 3, (3, 4, 6, 6)).astype(np.float32)
    x[1, 0, 0, 5] = np.inf
    g[2, 3, 4, 1] = np.nan
    got = np.asarray(convolution_grad_rhs(g, x, (4, 2, 3, 3), **PAD))
    assert per_chan_calls[-1] is not None
    want = _grad_rhs_reference(x, g, PAD)
    np.testing.assert_array_equal(got, want)  # NaN == NaN for assert_array_equal
    assert np.isnan(got).any() and np.isinf(got).any()


def test_thick_products_keep_one_gemm(per_chan_calls):
    """Results above _PER_CHAN_RESULT elements (the 32 -> 64 mid layer's 64 x 288)
    keep the single multi-threaded GEMM."""
    rng = np.random.default_rng(25)
    x = rng.integers(-2, 3, (2, 32, 6, 6)).astype(np.float32)
    g = rng.integers(-2, 3, (2, 64, 6, 6)).astype(np.float32)
    got = np.asarray(convolution_grad_rhs(g, x, (64, 32, 3, 3), **PAD))
    assert per_chan_calls and all(v is None for v in per_chan_calls)
    np.testing.assert_array_equal(got, _grad_rhs64(x, g).astype(np.float32))


def test_kernel_gradient_matches_finite_differences():
    """Through the tape, first and second order, on a shape that takes the
    per-feature path (3 input channels, 5 images)."""
    rng = np.random.default_rng(26)
    a, b = rng.standard_normal((5, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    check_grads(lambda x, w: xo.convolution(x, w, **PAD), [a, b], order=2)


@pytest.mark.skipif(not _blas.available(), reason="NumPy's BLAS is not a bundled OpenBLAS")
def test_one_thread_restores_the_count():
    getter = _blas._state["get"]
    before = getter()
    with _blas.one_thread():
        assert getter() == 1
        with _blas.one_thread():  # nested
            assert getter() == 1
        assert getter() == 1
    assert getter() == before
    with pytest.raises(RuntimeError), _blas.one_thread():
        raise RuntimeError("restored on errors too")
    assert getter() == before


def test_one_thread_without_openblas_does_nothing(monkeypatch):
    """Another BLAS (no settable OpenBLAS found): the block runs, nothing is set, and
    the per-feature path gives the same values."""
    monkeypatch.setitem(_blas._state, "loaded", True)
    monkeypatch.setitem(_blas._state, "set", None)
    monkeypatch.setitem(_blas._state, "get", None)
    assert not _blas.available()
    with _blas.one_thread():
        pass
    rng = np.random.default_rng(27)
    x = rng.integers(-3, 4, (4, 3, 8, 8)).astype(np.float32)
    g = rng.integers(-3, 4, (4, 5, 8, 8)).astype(np.float32)
    got = np.asarray(convolution_grad_rhs(g, x, (5, 3, 3, 3), **PAD))
    np.testing.assert_array_equal(got, _grad_rhs64(x, g).astype(np.float32))


@pytest.fixture
def numba_threads():
    """Set Numba's thread count (run_pieces uses that many threads) and restore it."""
    import numba

    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


def test_pieces_and_threads_give_the_same_bits(monkeypatch, per_chan_calls, numba_threads):
    """The per-feature rows are written and multiplied in pieces of _PIECE_BYTES shared
    out to the threads: one feature per piece, three (7 features: a short last piece),
    all at once, on one or two threads, give one result bit for bit, close to float64."""
    rng = np.random.default_rng(28)
    x = rng.standard_normal((7, 3, 10, 10), dtype=np.float32)
    g = rng.standard_normal((7, 8, 10, 10), dtype=np.float32)
    feature = 3 * 9 * 100 * 4  # one feature's (B*P, K) rows in bytes
    monkeypatch.setattr(C, "_THREADED_FLOPS", 0)  # (small shapes run on one thread)
    results = []
    for piece_bytes in (1, 3 * feature, 1 << 30):
        for threads in (1, 2):
            monkeypatch.setattr(C, "_PIECE_BYTES", piece_bytes)
            numba_threads(threads)
            results.append(np.asarray(convolution_grad_rhs(g, x, (8, 3, 3, 3), **PAD)))
    assert per_chan_calls and all(v is not None for v in per_chan_calls)
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    want = _grad_rhs64(x, g)
    assert np.abs(results[0] - want).max() <= 2e-6 * np.abs(want).max()


def test_pieces_read_strided_inputs(monkeypatch, per_chan_calls):
    """Inputs that are views with gaps (every other image, a band of columns: read in
    place; every other column: copied first) give the bits of their contiguous copies,
    a piece per feature or all features at once."""
    rng = np.random.default_rng(29)
    base = xo.tensor(rng.standard_normal((10, 3, 9, 18), dtype=np.float32))
    g = rng.standard_normal((5, 6, 9, 9), dtype=np.float32)
    monkeypatch.setattr(C, "_THREADED_FLOPS", 0)
    for x, piece_bytes in itertools.product(
        [base[::2, :, :, 4:13], base[::2, :, :, ::2]], [1, 1 << 30]
    ):
        want = _grad_rhs64(np.asarray(x), g)
        monkeypatch.setattr(C, "_PIECE_BYTES", piece_bytes)
        got = np.asarray(convolution_grad_rhs(g, x, (6, 3, 3, 3), **PAD))
        dense = np.asarray(convolution_grad_rhs(g, np.ascontiguousarray(x), (6, 3, 3, 3), **PAD))
        np.testing.assert_array_equal(got, dense)
        assert np.abs(got - want).max() <= 2e-6 * np.abs(want).max()
    assert per_chan_calls and all(v is not None for v in per_chan_calls)


def test_pieces_propagate_specials(monkeypatch, per_chan_calls):
    """One feature per piece: inf and NaN reach the entries they touch, as the
    reference's padded windows say (the specials test above with the rows in pieces),
    and no thread warns of them (NumPy's error state is per thread)."""
    monkeypatch.setattr(C, "_PIECE_BYTES", 1)
    monkeypatch.setattr(C, "_THREADED_FLOPS", 0)
    rng = np.random.default_rng(30)
    x = rng.integers(-2, 3, (3, 2, 6, 6)).astype(np.float32)
    g = rng.integers(-2, 3, (3, 4, 6, 6)).astype(np.float32)
    x[2, 1, 3, 0] = -np.inf
    g[0, 1, 5, 5] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the filters are process-wide: every thread)
        got = np.asarray(convolution_grad_rhs(g, x, (4, 2, 3, 3), **PAD))
    assert per_chan_calls[-1] is not None
    np.testing.assert_array_equal(got, _grad_rhs_reference(x, g, PAD))
    assert np.isnan(got).any() and np.isinf(got).any()


@pytest.mark.parametrize("count", [0, 1, 2, 9])
def test_run_pieces_takes_every_piece_once(count, numba_threads):
    """Each index below count goes to exactly one body call, on one BLAS thread (where
    the count can be set) and in the caller's NumPy error state; a body's error reaches
    the caller."""
    numba_threads(2)
    seen, states = [], []

    def body(pieces):
        for i in pieces:
            if _blas.available():
                assert _blas._state["get"]() == 1
            seen.append(i)  # list.append is atomic under the GIL
            states.append(np.geterr()["over"])

    for parallel in (True, False):
        seen.clear()
        states.clear()
        with np.errstate(over="call"):
            _blas.run_pieces(body, count, parallel)
        assert sorted(seen) == list(range(count))
        assert states == ["call"] * count

    def failing(pieces):
        for i in pieces:
            if i == count - 1:
                raise ValueError("piece failed")

    if count:
        with pytest.raises(ValueError, match="piece failed"):
            _blas.run_pieces(failing, count)


# -- the per-feature pieces on other shapes and types, on one and two threads -----------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "n, c, h, w, o, attrs",
    [
        (7, 3, 10, 10, 8, PAD),  # 7 features: pieces of 3 leave a short last one
        (5, 2, 9, 13, 6, dict(window_strides=[2, 1], padding=[(1, 0), (2, 1)])),
        (6, 3, 11, 9, 5, dict(rhs_dilation=[1, 2], padding=[(0, 1), (2, 2)])),
        (4, 1, 12, 7, 16, dict(padding=[(0, 0), (0, 0)])),
    ],
)
def test_pieces_and_threads_on_strided_shapes(
    per_chan_calls, numba_threads, monkeypatch, dtype, n, c, h, w, o, attrs
):
    """f32 and f64, strides / rhs dilation / no padding of the forward convolution: one
    feature per piece, pieces of 3 (a short last one) and all at once, on one or two
    threads, give one result bit for bit, close to the float64 reference."""
    rng = np.random.default_rng(31)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    k = np.zeros((o, c, 3, 3), dtype)
    g = rng.standard_normal(np.asarray(convolution_reference(x, k, **attrs)).shape).astype(dtype)
    feature = c * 9 * g.shape[2] * g.shape[3] * np.dtype(dtype).itemsize
    monkeypatch.setattr(C, "_THREADED_FLOPS", 0)
    results = []
    for piece_bytes, threads in itertools.product((1, 3 * feature, 1 << 30), (1, 2)):
        monkeypatch.setattr(C, "_PIECE_BYTES", piece_bytes)
        numba_threads(threads)
        results.append(np.asarray(convolution_grad_rhs(g, x, k.shape, **attrs)))
    assert per_chan_calls and all(v is not None for v in per_chan_calls)
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    want = _grad_rhs_reference(x, g, attrs, np.float64)
    assert results[0].dtype == dtype
    tol = 2e-6 if dtype == np.float32 else 4e-15
    assert np.abs(results[0] - want).max() <= tol * np.abs(want).max()


def test_cifar_shape_on_one_and_two_threads(per_chan_calls, numba_threads):
    """CIFAR's first layer at batch 64 (the benchmark's shape: 8 pieces on the
    threads): one and two threads give the same bits, within 2e-6 of the largest
    float64 entry."""
    rng = np.random.default_rng(32)
    x = rng.standard_normal((64, 3, 32, 32), dtype=np.float32)
    g = rng.standard_normal((64, 32, 32, 32), dtype=np.float32)
    results = []
    for threads in (1, 2):
        numba_threads(threads)
        results.append(np.asarray(convolution_grad_rhs(g, x, (32, 3, 3, 3), **PAD)))
    assert per_chan_calls[-1] is not None
    np.testing.assert_array_equal(results[0], results[1])
    want = _grad_rhs64(x, g)
    assert np.abs(results[0] - want).max() <= 2e-6 * np.abs(want).max()


def test_batch_one_is_exact():
    """Batch 1 (one input feature of the gradient's convolution: no per-feature
    GEMMs) stays exact on integers."""
    rng = np.random.default_rng(33)
    x = rng.integers(-3, 4, (1, 3, 9, 9)).astype(np.float32)
    g = rng.integers(-3, 4, (1, 5, 9, 9)).astype(np.float32)
    got = np.asarray(convolution_grad_rhs(g, x, (5, 3, 3, 3), **PAD))
    np.testing.assert_array_equal(got, _grad_rhs64(x, g).astype(np.float32))
