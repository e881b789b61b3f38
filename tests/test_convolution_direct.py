"""The direct convolution kernel for few input features
(``xops.ops._convolution_direct``), tried before the packings: compared with the
packings (``window_sum`` bit for bit for one input feature), with the spec-shaped
reference and with NumPy sums, over the attributes it accepts (padding, window
reversal, layouts), odd sizes, batch 1, NaN/inf, float32/float64; serial and parallel
variants give the same bits; everything else falls through (None), the layer's kernel
gradient included."""

import numpy as np
import pytest

import xops as xo
from conftest import bits
from xops.ops import _convolution_attrs as A
from xops.ops import _convolution_direct as D
from xops.ops import convolution as C
from xops.ops.convolution import convolution_grad_rhs, convolution_reference


@pytest.fixture
def direct(monkeypatch):
    """Returns the list of (batch, chan, n_out) the few-feature kernel took. The kernel
    takes up to four input features; by default only one is routed to it (measured:
    test_default_routes_one_input_feature): here all four are, and none to the
    register-blocked kernels (tests/test_convolution_fast.py) that AVX2 / AVX-512 CPUs try
    first."""
    taken = []
    run = D._few_channels

    def spied(lhs_c, w, a, work, batch, chan, n_out):
        taken.append((batch, chan, n_out))
        return run(lhs_c, w, a, work, batch, chan, n_out)

    monkeypatch.setattr(D, "_FEW_CHANNELS", 4)
    monkeypatch.setattr(D, "_few_channels", spied)
    monkeypatch.setattr(D, "_vector_lanes", lambda: 0)
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
    assert D.try_direct(x, w, a, np.dtype(np.float32), 2, 2, groups, 4) is None


def test_default_routes_one_input_feature(monkeypatch):
    """Out of the box the few-feature kernel takes one input feature (the digits' first
    layer) and leaves three (RGB: the packings measured faster) to the packings (calls
    larger than ``_SMALL_MACS``: smaller ones take the blocked kernels)."""
    monkeypatch.setattr(D, "_SMALL_MACS", 0)
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
    images), integer work, one spatial dim: the few-feature kernel's (the blocked kernels
    off: with 8 or 16 lanes they take the 3 x 3 output, tests/test_convolution_fast.py)."""
    monkeypatch.setattr(D, "_FEW_CHANNELS", 4)
    monkeypatch.setattr(D, "_vector_lanes", lambda: 0)
    x, w = np.ones((2, 8, 8, 8), np.float32), np.ones((4, 8, 3, 3), np.float32)
    a = _attrs(x.shape, w.shape)
    assert D.try_direct(x, w, a, np.dtype(np.float32), 2, 8, 1, 4) is None
    x, w = np.ones((1, 3, 8, 8), np.float32), np.ones((4, 3, 8, 8), np.float32)
    a = _attrs(x.shape, w.shape, padding=[(1, 1), (1, 1)])
    assert D.try_direct(x, w, a, np.dtype(np.float32), 1, 3, 1, 4) is None
    x, w = np.ones((2, 2, 8, 8), np.float32), np.ones((4, 2, 3, 3), np.float32)
    a = _attrs(x.shape, w.shape)
    assert D.try_direct(x, w, a, np.dtype(np.int64), 2, 2, 1, 4) is None
    assert D.try_direct(x, w, a, np.dtype(np.float32), 2, 2, 1, 4) is not None
    x1, w1 = np.ones((2, 2, 8), np.float32), np.ones((4, 2, 3), np.float32)
    a = _attrs(x1.shape, w1.shape)
    assert D.try_direct(x1, w1, a, np.dtype(np.float32), 2, 2, 1, 4) is None


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
    few-feature kernel's; with it tried first the result is still a NumPy sum's."""
    rng = np.random.default_rng(23)
    x = rng.standard_normal((4, 1, 28, 28)).astype(np.float32)
    g = rng.standard_normal((4, 16, 28, 28)).astype(np.float32)
    got = np.asarray(convolution_grad_rhs(g, x, (16, 1, 3, 3), padding=[(1, 1), (1, 1)]))
    want = _grad_rhs_numpy(x, g, (16, 1, 3, 3), [(1, 1), (1, 1)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert direct == []
