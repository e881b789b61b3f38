"""The direct convolution kernel for few input features
(``xops.ops._convolution_direct``), tried before the packings: compared with the
packings (``window_sum`` bit for bit for one input feature), with the spec-shaped
reference and with NumPy sums, over the attributes it accepts (padding, window
reversal, layouts), odd sizes, batch 1, NaN/inf, float32/float64; serial and parallel
variants give the same bits; everything else falls through (None), the layer's kernel
gradient included."""

import inspect

import numpy as np
import pytest

import xops as xo
from conftest import bits
from xops.ops import _convolution_attrs as A
from xops.ops import _convolution_direct as D
from xops.ops import convolution as C
from xops.ops.convolution import convolution_grad_lhs, convolution_grad_rhs, convolution_reference

_FAST_2D = C._fast_2d


def _fast_2d(strategy, lhs_c, w, a, work, batch, chan, groups, n_out):
    """_fast_2d trying the direct kernel first, as _convolution_impl does once it is
    wired in (not where a test forces a packing)."""
    if C._FORCE_STRATEGY is None and C._FAST_2D:
        out = D.try_direct(lhs_c, w, a, work, batch, chan, groups, n_out, strategy)
        if out is not None:
            return out
    return _FAST_2D(strategy, lhs_c, w, a, work, batch, chan, groups, n_out)


@pytest.fixture
def direct(monkeypatch):
    """The direct paths tried first (patched in where convolution.py does not call them
    yet); returns the list of (batch, chan, n_out) the few-feature kernel took (those
    of _pieces_im2col: ``D.pieces_taken``)."""
    taken = []

    def spy(name):
        run = getattr(D, name)

        def spied(lhs_c, w, a, work, batch, chan, n_out):
            if name == "_few_channels":
                taken.append((batch, chan, n_out))
            else:
                pieces.append((batch, chan, n_out))
            return run(lhs_c, w, a, work, batch, chan, n_out)

        return spied

    pieces = []
    # the kernel takes up to four input features; by default only one is routed to it
    # (measured: test_default_routes_one_input_feature), the tests exercise all four
    monkeypatch.setattr(D, "_FEW_CHANNELS", 4)
    monkeypatch.setattr(D, "_PIECES_MIN_FLOPS", 0)  # (small shapes take the pieces too,
    monkeypatch.setattr(D, "_PIECES_STRATEGIES", ("im2col", "window_sum"))  # and any packing)
    for name in ("_few_channels", "_pieces_im2col"):
        monkeypatch.setattr(D, name, spy(name))
    monkeypatch.setattr(D, "pieces_taken", pieces, raising=False)
    if "try_direct" not in inspect.getsource(C._convolution_impl):
        monkeypatch.setattr(C, "_fast_2d", _fast_2d)
    return taken


def _packed(monkeypatch, fn, strategy):
    """fn() through the packing ``strategy`` (no direct kernel)."""
    with monkeypatch.context() as m:
        m.setattr(C, "_FORCE_STRATEGY", strategy)
        return np.asarray(fn())


def _random_forward(rng, dtype, chan=None):
    batch = int(rng.choice([1, 1, 2, 3, 5]))
    cin = chan if chan is not None else int(rng.integers(1, 5))
    cout = int(rng.integers(1, 6))
    k = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    size = (int(rng.integers(k[0], 13)), int(rng.integers(2 * k[1] - 1, 14)))  # OW >= KW
    kw = dict(
        padding=[(int(rng.integers(0, 4)), int(rng.integers(0, 4))) for _ in range(2)],
        window_reversal=[bool(rng.integers(0, 2)) for _ in range(2)],
    )
    x = rng.standard_normal((batch, cin, *size)).astype(dtype)
    w = rng.standard_normal((cout, cin, *k)).astype(dtype)
    return x, w, kw


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_input_feature_is_window_sum_bit_for_bit(direct, monkeypatch, dtype):
    """One input feature: every output is 0 + its taps' products in increasing tap order,
    window_sum's sums, bit for bit (signed zeros too), with NaN where it has NaN (an inf
    times a padding zero: the packing writes NumPy's NaN there, the kernel the product's)
    and inf where it has inf; and the spec-shaped reference within rounding."""
    rng = np.random.default_rng(3)
    for case in range(24):
        x, w, kw = _random_forward(rng, dtype, chan=1)
        if case % 3 == 1:
            x.reshape(-1)[rng.integers(0, x.size, 2)] = [np.inf, np.nan]
        if case % 3 == 2:
            w.reshape(-1)[int(rng.integers(0, w.size))] = rng.choice([np.inf, -np.inf, np.nan])
        got = np.asarray(xo.convolution(x, w, **kw))
        assert len(direct) == case + 1, "the direct kernel was not taken"
        want = _packed(monkeypatch, lambda: xo.convolution(x, w, **kw), "window_sum")
        np.testing.assert_array_equal(got, want)  # NaN where NaN (its sign bit is not pinned)
        np.testing.assert_array_equal(bits(got)[~np.isnan(got)], bits(want)[~np.isnan(want)])
        ref = np.asarray(convolution_reference(x, w, **kw))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_input_features_match_reference(direct, dtype):
    """Two to four input features, odd sizes, batch 1, padding wider than the kernel,
    window reversal: the reference within rounding (the order of the adds is input
    feature, kernel row, kernel column)."""
    rng = np.random.default_rng(5)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for _ in range(20):
        x, w, kw = _random_forward(rng, dtype, chan=int(rng.integers(2, 5)))
        got = np.asarray(xo.convolution(x, w, **kw))
        ref = np.asarray(convolution_reference(x, w, **kw))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    assert len(direct) == 20


def test_digits_layer_and_layouts(direct, monkeypatch):
    """The digits CNN's first layer (3x3, padding 1) against a NumPy sum, in NCHW and in
    NHWC (a transposed lhs view, a non-contiguous result view) and RGB input."""
    rng = np.random.default_rng(7)
    for cin in (1, 3):
        x = rng.standard_normal((4, cin, 28, 28)).astype(np.float32)
        w = rng.standard_normal((16, cin, 3, 3)).astype(np.float32)
        xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
        win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
        want = np.einsum("nchwij,ocij->nohw", win.astype(np.float64), w.astype(np.float64))
        got = np.asarray(xo.convolution(x, w, padding=[(1, 1), (1, 1)]))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        nhwc = np.asarray(
            xo.convolution(
                np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
                np.ascontiguousarray(w.transpose(2, 3, 1, 0)),
                padding=[(1, 1), (1, 1)],
                dimension_numbers="NHWC,HWIO,NHWC",
            )
        )
        np.testing.assert_array_equal(nhwc, got.transpose(0, 2, 3, 1))
    assert len(direct) == 4


def _grad_rhs_numpy(x, g, rhs_shape, pads):
    """dw[o, c, i, j] = sum_{n, h, w} g[n, o, h, w] * padded x[n, c, h + i, w + j]."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), *pads])
    win = np.lib.stride_tricks.sliding_window_view(xp, g.shape[2:], axis=(2, 3))
    return np.einsum("ncijhw,nohw->ocij", win, g.astype(np.float64))


def _attrs(x_shape, w_shape, **kw):
    f32 = xo.tensor(np.float32(0))._dtype
    args = [kw.get(k) for k in ("window_strides", "padding", "lhs_dilation", "rhs_dilation")]
    return A._attributes(
        "convolution",
        f32,
        x_shape,
        f32,
        w_shape,
        *args,
        None,
        None,
        kw.get("feature_group_count", 1),
        1,
        None,
        None,
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(window_strides=[2, 1]),
        dict(lhs_dilation=[1, 2]),
        dict(rhs_dilation=[2, 1]),
        dict(padding=[(1, -1), (0, 0)]),
        dict(feature_group_count=2),
    ],
)
def test_other_attributes_fall_through(kw):
    """Strides, dilations, negative padding and groups are not the direct kernels'."""
    x, w = (
        np.ones((2, 2, 8, 8), np.float32),
        np.ones((4, 2 // kw.get("feature_group_count", 1), 3, 3), np.float32),
    )
    a = _attrs(x.shape, w.shape, **kw)
    groups = kw.get("feature_group_count", 1)
    assert D.try_direct(x, w, a, np.dtype(np.float32), 2, 2, groups, 4, "im2col") is None


def test_default_routes_one_input_feature(monkeypatch):
    """Out of the box the few-feature kernel takes one input feature (the digits' first
    layer) and leaves three (RGB: the packings measured faster) to the packings."""
    taken = []
    real = D._few_channels
    monkeypatch.setattr(D, "_few_channels", lambda *args: taken.append(args[5]) or real(*args))
    rng = np.random.default_rng(3)
    for chan in (1, 3):
        x = rng.standard_normal((2, chan, 9, 9)).astype(np.float32)
        w = rng.standard_normal((4, chan, 3, 3)).astype(np.float32)
        got = xo.convolution(xo.tensor(x), xo.tensor(w), padding=[(1, 1), (1, 1)])
        want = convolution_reference(x, w, padding=[(1, 1), (1, 1)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    assert taken == [1]


def test_other_shapes_and_types_fall_through(monkeypatch):
    """Many input features with few output positions, a kernel wider than the output
    (the layer's kernel gradient: lhs batches = its input features, features = its
    images), integer work, one spatial dim."""
    monkeypatch.setattr(D, "_FEW_CHANNELS", 4)
    x, w = np.ones((2, 8, 8, 8), np.float32), np.ones((4, 8, 3, 3), np.float32)
    a = _attrs(x.shape, w.shape)
    assert D.try_direct(x, w, a, np.dtype(np.float32), 2, 8, 1, 4, "im2col") is None
    x, w = np.ones((1, 3, 8, 8), np.float32), np.ones((4, 3, 8, 8), np.float32)
    a = _attrs(x.shape, w.shape, padding=[(1, 1), (1, 1)])
    assert D.try_direct(x, w, a, np.dtype(np.float32), 1, 3, 1, 4, "im2row") is None
    x, w = np.ones((2, 2, 8, 8), np.float32), np.ones((4, 2, 3, 3), np.float32)
    a = _attrs(x.shape, w.shape)
    assert D.try_direct(x, w, a, np.dtype(np.int64), 2, 2, 1, 4, "im2col") is None
    assert D.try_direct(x, w, a, np.dtype(np.float32), 2, 2, 1, 4, "im2col") is not None
    x1, w1 = np.ones((2, 2, 8), np.float32), np.ones((4, 2, 3), np.float32)
    a = _attrs(x1.shape, w1.shape)
    assert D.try_direct(x1, w1, a, np.dtype(np.float32), 2, 2, 1, 4, "im2col") is None


def test_serial_and_parallel_give_the_same_bits(direct, monkeypatch):
    """The kernel's adds name no thread: forced serial and forced parallel agree bit for
    bit (3 input features, NaN and inf included)."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((6, 3, 17, 15)).astype(np.float32)
    w = rng.standard_normal((7, 3, 3, 3)).astype(np.float32)
    x[1, 2, 3, 4], w[2, 1, 0, 0] = np.nan, np.inf
    pads = [(1, 1), (1, 1)]
    monkeypatch.setattr(D, "_MACS_PER_UNIT", 1 << 40)
    serial = np.asarray(xo.convolution(x, w, padding=pads))
    monkeypatch.setattr(D, "_MACS_PER_UNIT", 1)
    parallel = np.asarray(xo.convolution(x, w, padding=pads))
    np.testing.assert_array_equal(bits(serial), bits(parallel))
    assert len(direct) == 2


def test_training_gradient_with_direct_kernel(direct):
    """End to end through the tape: xo.vjp of a padded 1-feature layer (the forward
    direct, the kernel gradient packed) gives the kernel gradient a NumPy sum gives."""
    rng = np.random.default_rng(19)
    x = rng.standard_normal((3, 1, 9, 7)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    y, pull = xo.vjp(lambda b: xo.convolution(x, b, padding=[(1, 1), (1, 1)]), xo.tensor(w))
    g = rng.standard_normal(y.shape).astype(np.float32)
    (dw,) = pull(xo.tensor(g))
    want = _grad_rhs_numpy(x, g, w.shape, [(1, 1), (1, 1)])
    np.testing.assert_allclose(np.asarray(dw), want, rtol=1e-5, atol=1e-5)
    assert direct == [(3, 1, 4)]


def test_kernel_gradient_is_left_to_the_packing(direct):
    """The digits layer's kernel gradient (a 28 x 28 kernel, a 3 x 3 output) is not the
    direct kernel's; with it tried first the result is still a NumPy sum's."""
    rng = np.random.default_rng(23)
    x = rng.standard_normal((4, 1, 28, 28)).astype(np.float32)
    g = rng.standard_normal((4, 16, 28, 28)).astype(np.float32)
    got = np.asarray(convolution_grad_rhs(g, x, (16, 1, 3, 3), padding=[(1, 1), (1, 1)]))
    want = _grad_rhs_numpy(x, g, (16, 1, 3, 3), [(1, 1), (1, 1)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert direct == []


def _random_mid(rng, dtype):
    """A mid layer: 5-12 input features, at least 100 output positions."""
    batch = int(rng.choice([1, 2, 3, 5]))
    cin, cout = int(rng.integers(5, 13)), int(rng.integers(1, 9))
    k = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    kw = dict(
        window_strides=[int(rng.choice([1, 1, 2])) for _ in range(2)],
        padding=[(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(2)],
        rhs_dilation=[int(rng.choice([1, 1, 2])) for _ in range(2)],
        window_reversal=[bool(rng.integers(0, 2)) for _ in range(2)],
    )
    size = (int(rng.integers(21, 30)), int(rng.integers(21, 30)))
    x = rng.standard_normal((batch, cin, *size)).astype(dtype)
    w = rng.standard_normal((cout, cin, *k)).astype(dtype)
    return x, w, kw


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pieces_im2col_matches_packing_and_reference(direct, monkeypatch, dtype):
    """Mid layers (strides, window dilation, negative padding, reversal, batch 1 and
    odd, NaN and inf): the im2col packing and the reference within rounding, the result
    already (N, O, H, W) in memory."""
    rng = np.random.default_rng(29)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    large = 0
    for case in range(12):
        x, w, kw = _random_mid(rng, dtype)
        if case % 4 == 3:
            x.reshape(-1)[rng.integers(0, x.size, 2)] = [np.inf, np.nan]
        got = np.asarray(xo.convolution(x, w, **kw))
        want = _packed(monkeypatch, lambda: xo.convolution(x, w, **kw), "im2col")
        ref = np.asarray(convolution_reference(x, w, **kw))
        assert got.dtype == dtype
        assert got.flags.c_contiguous or got.shape[2] * got.shape[3] < D._MIN_POSITIONS
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
        large += got.shape[2] * got.shape[3] >= D._MIN_POSITIONS
    assert direct == [] and len(D.pieces_taken) == large >= 9


def test_digits_second_layer_and_its_input_gradient(direct, monkeypatch):
    """The digits CNN's second layer (16 -> 32 features, 14 x 14, padding 1) and its
    input gradient (32 -> 16, which the cost model gives window_sum) take the pieces,
    NHWC too, and agree with the packings."""
    rng = np.random.default_rng(31)
    x = rng.standard_normal((5, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    g = rng.standard_normal((5, 32, 14, 14)).astype(np.float32)
    pad = [(1, 1), (1, 1)]
    got = np.asarray(xo.convolution(x, w, padding=pad))
    np.testing.assert_allclose(
        got, _packed(monkeypatch, lambda: xo.convolution(x, w, padding=pad), "im2col"), 1e-5, 1e-4
    )
    dx = np.asarray(convolution_grad_lhs(g, w, x.shape, padding=pad))
    want = _packed(
        monkeypatch, lambda: convolution_grad_lhs(g, w, x.shape, padding=pad), "window_sum"
    )
    np.testing.assert_allclose(dx, want, rtol=1e-5, atol=1e-4)  # (sums of 288 products)
    nhwc = xo.convolution(
        np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
        np.ascontiguousarray(w.transpose(2, 3, 1, 0)),
        padding=pad,
        dimension_numbers="NHWC,HWIO,NHWC",
    )
    np.testing.assert_array_equal(np.asarray(nhwc), got.transpose(0, 2, 3, 1))
    assert D.pieces_taken == [(5, 16, 32), (5, 32, 16), (5, 16, 32)]


def test_pieces_give_the_same_bits_on_any_thread_count(direct, monkeypatch):
    """Each image's product is one single-threaded GEMM, whichever thread takes it:
    one thread and two give the same bits, as do pieces of one image and of several."""
    from xops.ops import _blas

    rng = np.random.default_rng(37)
    x = rng.standard_normal((7, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    runs = []
    for threads, piece in ((1, 1 << 18), (2, 1 << 18), (2, 1)):
        monkeypatch.setattr(_blas, "_threads", lambda t=threads: t)
        monkeypatch.setattr(D, "_PIECE_BYTES", piece)
        runs.append(np.asarray(xo.convolution(x, w, padding=[(1, 1), (1, 1)])))
    for r in runs[1:]:
        np.testing.assert_array_equal(bits(r), bits(runs[0]))


def test_pieces_start_at_their_flop_count(monkeypatch):
    """im2col in pieces (where turned on) only from _PIECES_MIN_FLOPS (CIFAR's batch 8
    stays packed); the result is the packings' either way, to rounding."""
    assert D._PIECES_STRATEGIES == ()  # (off by default: see its comment)
    monkeypatch.setattr(D, "_PIECES_STRATEGIES", ("im2col",))
    taken = []
    real = D._pieces_im2col
    monkeypatch.setattr(D, "_pieces_im2col", lambda *args: taken.append(args[4]) or real(*args))
    rng = np.random.default_rng(4)
    pads = [(1, 1), (1, 1)]
    w = rng.standard_normal((8, 6, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 6, 12, 12)).astype(np.float32)  # 2*8*144*54*2 = 248,832 flops
    want = convolution_reference(x, w, padding=pads)
    for limit in (1 << 25, 248_832):
        monkeypatch.setattr(D, "_PIECES_MIN_FLOPS", limit)
        got = xo.convolution(xo.tensor(x), xo.tensor(w), padding=pads)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    assert taken == [2]
    # an input gradient (window_sum's: lhs dilation by the stride) stays with its packing
    g = rng.standard_normal((2, 8, 6, 6)).astype(np.float32)
    dx = convolution_grad_lhs(g, w, x.shape, window_strides=[2, 2], padding=pads)
    assert taken == [2] and dx.shape == x.shape
