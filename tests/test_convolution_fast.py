"""The register-blocked direct kernels (``xops.kernels.convolution_blocked``, picked by
``xops.ops._convolution_direct``): the 3 x 3 forward (and so the input gradient, a 3 x 3
convolution too) in its AVX-512 (16-lane) and AVX2 (8-lane) variants, both run here
wherever the CPU has the instructions, and the 3 x 3 kernel gradient (both widths too).
Compared with float64 NumPy sums over the shapes they take (odd widths: a partial last
vector; padding on either side; window reversal; tails of the output-feature blocks;
strided operands; feature counts padded to whole blocks), through ``xo.vjp`` as a
user gets the gradients; NaN/inf as the
reference gives them; one and two threads, serial and parallel variants, give the same
bits; shapes they do not take fall through to the packings."""

import numba
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import xops as xo
from conftest import bits
from xops.ops import _convolution_direct as D
from xops.ops import convolution as C
from xops.ops.convolution import convolution_grad_rhs

PAD = [(1, 1), (1, 1)]
# the kernel gradient's blocked kernel and the 16-lane forward run on AVX-512 CPUs, the
# 8-lane forward on AVX2 ones too (elsewhere every shape falls through)
avx512 = pytest.mark.skipif(D._cpu_lanes() < 16, reason="no AVX-512: no 16-lane kernels")
_WIDTHS = [w for w in (16, 8) if w <= D._cpu_lanes()]


@pytest.fixture(params=[16, 8])
def lanes(request, monkeypatch):
    """Each forward variant the CPU can run: the width ``_vector_lanes`` reports (8 on an
    AVX-512 CPU runs the AVX2 variant, which only the kernel gradient does not have)."""
    if request.param not in _WIDTHS:
        pytest.skip(f"no {request.param}-lane float32 vectors on this CPU")
    monkeypatch.setattr(D, "_vector_lanes", lambda: request.param)
    return request.param


@pytest.fixture
def taken(monkeypatch):
    """The list of ("forward" | "wgrad", batch, chan, n_out) the blocked kernels took."""
    calls = []
    forward, wgrad = D._blocked, D._wgrad

    def spied_forward(lhs_c, w, a, batch, chan, n_out, serial=False):
        calls.append(("forward", batch, chan, n_out) + (("serial",) if serial else ()))
        return forward(lhs_c, w, a, batch, chan, n_out, serial)

    def spied_wgrad(lhs_c, w, a, batch, chan, n_out, serial=False):
        calls.append(("wgrad", batch, chan, n_out) + (("serial",) if serial else ()))
        return wgrad(lhs_c, w, a, batch, chan, n_out, serial)

    monkeypatch.setattr(D, "_blocked", spied_forward)
    monkeypatch.setattr(D, "_wgrad", spied_wgrad)
    return calls


@pytest.fixture
def threads():
    """Set Numba's thread count and restore it."""
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


def _forward64(x, w, padding, reversal=(False, False)):
    """The convolution in float64: NumPy windows and einsum."""
    w = np.asarray(w, np.float64)
    if reversal[0]:
        w = w[:, :, ::-1]
    if reversal[1]:
        w = w[:, :, :, ::-1]
    xp = np.pad(np.asarray(x, np.float64), [(0, 0), (0, 0), *padding])
    windows = sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", windows, w)


def _wgrad64(x, g, padding):
    """The 3 x 3 kernel gradient in float64."""
    xp = np.pad(np.asarray(x, np.float64), [(0, 0), (0, 0), *padding])
    windows = sliding_window_view(xp, g.shape[2:], axis=(2, 3))  # (N, C, 3, 3, H, W)
    return np.einsum("ncijhw,nohw->ocij", windows, np.asarray(g, np.float64))


def _close(got, want, tol=2e-6):
    got = np.asarray(got)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.abs(got - want).max() <= tol * np.abs(want).max()


@pytest.mark.parametrize(
    "shape, padding, reversal",
    [
        ((3, 4, 16, 16, 8), PAD, (False, False)),  # one vector a row
        ((2, 5, 7, 13, 16), PAD, (True, False)),  # a partial vector (13 of 16 lanes)
        ((2, 3, 9, 27, 8), [(0, 2), (1, 0)], (False, True)),  # 16 + 11 lanes
        ((1, 17, 6, 33, 24), [(2, 2), (0, 0)], (True, True)),  # 2 + 1 rows; 16 + 15 lanes
        ((4, 16, 14, 14, 32), PAD, (False, False)),  # the digits CNN's second layer
        ((2, 32, 6, 32, 3), PAD, (True, True)),  # 3 features (CIFAR's input gradient): 8
        ((2, 5, 4, 16, 12), PAD, (False, False)),  # 12 features computed as 16
        ((1, 3, 5, 24, 21), [(0, 1), (2, 0)], (False, True)),  # 21 as 24
    ],
)
def test_forward_matches_float64(taken, lanes, shape, padding, reversal):
    n, c, h, w_, o = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((n, c, h, w_), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    got = xo.convolution(x, w, padding=padding, window_reversal=list(reversal))
    _close(got, _forward64(x, w, padding, reversal))
    assert np.asarray(got).flags.c_contiguous
    assert taken == [("forward", n, c, o)]


def test_layouts_and_strided_inputs(taken, lanes):
    """NHWC x HWIO -> NHWC (the kernel reads its canonical copies) and an input that is
    a slice of a wider array give the NCHW result's values."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8, 12, 20), dtype=np.float32)[:, :, :, 2:18]
    w = rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
    want = _forward64(x, w, PAD)
    _close(xo.convolution(x, w, padding=PAD), want)
    nhwc = xo.convolution(
        np.transpose(x, (0, 2, 3, 1)),
        np.transpose(w, (2, 3, 1, 0)),
        padding=PAD,
        dimension_numbers="NHWC,HWIO,NHWC",
    )
    _close(np.transpose(np.asarray(nhwc), (0, 3, 1, 2)), want)
    assert [t[0] for t in taken] == ["forward", "forward"]


@avx512
def test_gradients_through_vjp(taken):
    """xo.vjp of a (4, 32, 16, 16) -> 64 layer: the forward and the input gradient
    (64 -> 32 features, the kernel flipped) run the forward kernel, the kernel gradient
    (a 3 x 3 result, 64 x 32 x 9 > the per-feature GEMMs' limit) the wgrad kernel."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 32, 16, 16), dtype=np.float32)
    w = rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
    y, pull = xo.vjp(lambda a, b: xo.convolution(a, b, padding=PAD), xo.tensor(x), xo.tensor(w))
    g = rng.standard_normal(y.shape, dtype=np.float32)
    dx, dw = pull(xo.tensor(g))
    _close(y, _forward64(x, w, PAD))
    dlhs = np.transpose(w, (1, 0, 2, 3))[:, :, ::-1, ::-1]
    _close(dx, _forward64(g, dlhs, PAD))
    _close(dw, _wgrad64(x, g, PAD))
    assert sorted(t[0] for t in taken) == ["forward", "forward", "wgrad"]


@avx512
@pytest.mark.parametrize("n_out", [64, 65, 66])  # blocks of 3 features: tails 1, 2, 0
@pytest.mark.parametrize("width", [12, 14, 16, 28, 32])  # masked last vectors: 12, 14, 16 + 12
def test_wgrad_matches_float64(taken, n_out, width):
    rng = np.random.default_rng(n_out + width)
    x = rng.standard_normal((2, 32, 5, width), dtype=np.float32)
    g = rng.standard_normal((2, n_out, 5, width), dtype=np.float32)
    padding = [(2, 0), (0, 2)]
    got = convolution_grad_rhs(g, x, (n_out, 32, 3, 3), padding=padding)
    _close(got, _wgrad64(x, g, padding))
    assert taken == [("wgrad", 32, 2, n_out)]


@avx512
@pytest.mark.parametrize("width", [14, 28])
def test_wgrad_masked_lanes_read_nothing_past_a_row(taken, monkeypatch, width):
    """A row's last, partial vector: an infinite input in the last column and a NaN
    in the padding-adjacent first one reach only the taps whose windows hold them (the
    masked lanes add +0, never 0 * inf), as in the float64 sums; a row of 11 of 16
    lanes is too short and takes the packings (but in a small call: on one thread)."""
    rng = np.random.default_rng(width)
    x = rng.standard_normal((4, 16, 6, width), dtype=np.float32)
    g = rng.standard_normal((4, 32, 6, width), dtype=np.float32)
    x[1, 3, 2, width - 1], x[2, 5, 4, 0] = np.inf, np.nan
    got = np.asarray(convolution_grad_rhs(g, x, (32, 16, 3, 3), padding=PAD))
    want = _wgrad64(x, g, PAD)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    assert not finite.all() and finite.any()
    assert np.abs(got[finite] - want[finite]).max() <= 2e-6 * np.abs(want[finite]).max()
    assert taken == [("wgrad", 16, 4, 32)]
    taken.clear()
    narrow = rng.standard_normal((4, 16, 6, 11), dtype=np.float32)
    for small, want in ((D._SMALL_MACS, [("wgrad", 16, 4, 32, "serial")]), (0, [])):
        monkeypatch.setattr(D, "_SMALL_MACS", small)
        _close(convolution_grad_rhs(g[..., :11], narrow, (32, 16, 3, 3), padding=PAD),
               _wgrad64(narrow, g[..., :11], PAD))  # fmt: skip
        assert taken == want
        taken.clear()


@avx512
def test_wgrad_reads_strided_and_copied_operands(taken):
    """The cotangent as a slice of a wider array (read in place) and with a reversed
    last dim (no unit stride: copied) give the same values."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 32, 6, 16), dtype=np.float32)
    wide = rng.standard_normal((3, 64, 6, 20), dtype=np.float32)
    g = wide[:, :, :, 3:19]
    want = _wgrad64(x, g, PAD)
    _close(convolution_grad_rhs(g, x, (64, 32, 3, 3), padding=PAD), want)
    flipped = np.ascontiguousarray(g[:, :, :, ::-1])[:, :, :, ::-1]
    _close(convolution_grad_rhs(flipped, x, (64, 32, 3, 3), padding=PAD), want)
    assert [t[0] for t in taken] == ["wgrad", "wgrad"]


def test_specials_as_the_reference(taken, lanes):
    """An infinite weight times a padding zero is NaN at the border, a NaN input spreads
    to its windows, as in the float64 sums."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 5, 16), dtype=np.float32)
    w = rng.standard_normal((8, 4, 3, 3), dtype=np.float32)
    x[1, 2, 3, 4], w[2, 1, 0, 0] = np.nan, np.inf
    got = np.asarray(xo.convolution(x, w, padding=PAD))
    want = _forward64(x, w, PAD)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert np.isinf(got[~np.isnan(want) & ~finite]).all()
    assert np.abs(got[finite] - want[finite]).max() <= 2e-6 * np.abs(want[finite]).max()
    assert taken


@avx512
def test_threads_and_variants_give_the_same_bits(taken, threads, monkeypatch):
    """The adds name no thread: serial, parallel on one thread and on two give the
    forward's and the kernel gradient's results bit for bit (NaN and inf included)."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((6, 32, 9, 16), dtype=np.float32)
    w = rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
    g = rng.standard_normal((6, 64, 9, 16), dtype=np.float32)
    x[1, 2, 3, 4], w[2, 1, 0, 0] = np.nan, np.inf
    results = []
    for units, count in [(1 << 40, 2), (1, 1), (1, 2)]:
        monkeypatch.setattr(D, "_MACS_PER_UNIT", units)
        threads(count)
        forward = xo.convolution(x, w, padding=PAD)
        wgrad = convolution_grad_rhs(g, x, w.shape, padding=PAD)
        results.append((bits(forward), bits(wgrad)))
    for forward, wgrad in results[1:]:
        np.testing.assert_array_equal(forward, results[0][0])
        np.testing.assert_array_equal(wgrad, results[0][1])
    assert len(taken) == 6


@pytest.mark.parametrize(
    "dtype, n_out, kernel, attrs",
    [
        (np.float64, 8, 3, {}),  # float32 only
        (np.float32, 2, 3, {}),  # 2 output features: 8 computed would be over 8/3 of them
        (np.float32, 8, 5, {}),  # not 3 x 3
        (np.float32, 8, 3, {"width": 11}),  # rows of 11 of 16 lanes: too few
        (np.float32, 8, 3, {"window_strides": [2, 2]}),
        (np.float32, 8, 3, {"rhs_dilation": [2, 2]}),
        (np.float32, 8, 3, {"lhs_dilation": [2, 1]}),
    ],
)
def test_other_shapes_fall_through(taken, monkeypatch, dtype, n_out, kernel, attrs):
    monkeypatch.setattr(D, "_SMALL_MACS", 0)  # (narrow rows of small calls: see below)
    rng = np.random.default_rng(17)
    attrs = {"padding": PAD, **attrs}
    x = rng.standard_normal((2, 4, 11, attrs.pop("width", 16))).astype(dtype)
    w = rng.standard_normal((n_out, 4, kernel, kernel)).astype(dtype)
    got = xo.convolution(x, w, **attrs)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(C, "_FAST_2D", False)  # (the direct paths off: the packing it picks)
        want = xo.convolution(x, w, **attrs)
    np.testing.assert_array_equal(bits(got), bits(want))
    assert taken == []


@avx512
@pytest.mark.parametrize("chan, side, n_out", [(3, 16, 32), (1, 28, 16)])
def test_thin_first_layers_take_the_blocked_kernels(taken, chan, side, n_out):
    """CIFAR's first layer (a 32 x 3 x 9 kernel gradient, rows of 16 lanes) and the
    digits CNN's (16 x 1 x 9, rows of 16 + 12 lanes, one grey feature): the forward
    and the kernel gradient both blocked, within float32 rounding of float64."""
    rng = np.random.default_rng(19)
    x = rng.standard_normal((64, chan, side, side), dtype=np.float32)
    w = rng.standard_normal((n_out, chan, 3, 3), dtype=np.float32)
    g = rng.standard_normal((64, n_out, side, side), dtype=np.float32)
    _close(xo.convolution(x, w, padding=PAD), _forward64(x, w, PAD))
    _close(convolution_grad_rhs(g, x, w.shape, padding=PAD), _wgrad64(x, g, PAD))
    assert taken == [("forward", 64, chan, n_out), ("wgrad", chan, 64, n_out)]


def test_without_avx_the_packings_run(taken, monkeypatch):
    """Without AVX2 or AVX-512 (no 8- or 16-lane FMA vectors) the mid layer's forward
    and kernel gradient take the packings."""
    monkeypatch.setattr(D, "_vector_lanes", lambda: 0)
    rng = np.random.default_rng(23)
    x = rng.standard_normal((2, 32, 8, 16), dtype=np.float32)
    w = rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
    g = rng.standard_normal((2, 64, 8, 16), dtype=np.float32)
    _close(xo.convolution(x, w, padding=PAD), _forward64(x, w, PAD))
    _close(convolution_grad_rhs(g, x, w.shape, padding=PAD), _wgrad64(x, g, PAD))
    assert taken == []


@pytest.mark.skipif(8 not in _WIDTHS, reason="no AVX2 on this CPU")
@pytest.mark.parametrize("shape", [(2, 16, 6, 14, 16), (64, 3, 16, 16, 32), (32, 1, 28, 28, 16)])
def test_avx2_variants_through_vjp(taken, monkeypatch, shape):
    """With AVX2 only (8-lane vectors, 16 registers: 16-lane accumulators would spill)
    the forward and the input gradient take the 8-lane forward kernel (one input feature
    too, since session 18), the kernel gradient the 8-lane
    kernel-gradient kernel (one feature's nine sums a call): a layer with rows of 8 + 6
    lanes, CIFAR's and the digits' first layers. The kernel
    gradient's lanes sum twice as many products each as with 16 lanes: within 4e-6 of
    the largest float64 entry (sums of 16K-25K products an entry here)."""
    monkeypatch.setattr(D, "_vector_lanes", lambda: 8)
    n, c, h, w_, o = shape
    rng = np.random.default_rng(29)
    x = rng.standard_normal((n, c, h, w_), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    y, pull = xo.vjp(lambda a, b: xo.convolution(a, b, padding=PAD), xo.tensor(x), xo.tensor(w))
    g = rng.standard_normal(y.shape, dtype=np.float32)
    dx, dw = pull(xo.tensor(g))
    _close(y, _forward64(x, w, PAD))
    _close(dw, _wgrad64(x, g, PAD), tol=4e-6)
    kinds = ["forward", "wgrad"]
    if c > 1:  # the input gradient: c output features (3 computed as a block of 8)
        _close(dx, _forward64(g, np.transpose(w, (1, 0, 2, 3))[:, :, ::-1, ::-1], PAD))
        kinds.append("forward")
    assert sorted(t[0] for t in taken) == sorted(kinds)


@pytest.mark.skipif(8 not in _WIDTHS, reason="no AVX2 on this CPU")
@pytest.mark.parametrize("n_out", [64, 65, 66, 67])  # blocks of 4 features: tails 0-3
@pytest.mark.parametrize("width", [6, 8, 14, 16, 30])  # masked last vectors: 6, 6, 8 + 6
def test_avx2_wgrad_matches_float64(taken, monkeypatch, n_out, width):
    """The 8-lane kernel gradient: blocks of 4 output features (one kernel row of 3
    sums each a call) and the last 1-3 features one at a time (9 sums a call)."""
    monkeypatch.setattr(D, "_vector_lanes", lambda: 8)
    rng = np.random.default_rng(n_out + width)
    x = rng.standard_normal((2, 12, 5, width), dtype=np.float32)
    g = rng.standard_normal((2, n_out, 5, width), dtype=np.float32)
    padding = [(2, 0), (0, 2)]
    got = convolution_grad_rhs(g, x, (n_out, 12, 3, 3), padding=padding)
    _close(got, _wgrad64(x, g, padding), tol=4e-6)
    assert taken == [("wgrad", 12, 2, n_out)]


@pytest.mark.skipif(8 not in _WIDTHS, reason="no AVX2 on this CPU")
def test_avx2_wgrad_blocks_and_single_features_give_the_same_bits(taken, monkeypatch, threads):
    """Each of the 9 sums per (input, output feature) adds the same products in the same
    order whether its feature runs in a block of 4 (one kernel row a call) or alone (all
    rows a call), on one thread or two: the same bits, inf included, NaN where NaN (its
    sign may differ: the fused multiply-add that meets two NaNs keeps the one LLVM
    ordered first, which the two micro-kernels do not promise alike)."""
    monkeypatch.setattr(D, "_vector_lanes", lambda: 8)
    rng = np.random.default_rng(43)
    x = rng.standard_normal((3, 70, 9, 19), dtype=np.float32)  # 70 > one chunk of 64
    g = rng.standard_normal((3, 9, 9, 19), dtype=np.float32)
    x[1, 2, 3, 4], g[2, 5, 0, 0] = np.nan, np.inf
    whole = np.asarray(convolution_grad_rhs(g, x, (9, 70, 3, 3), padding=PAD))
    assert np.isnan(whole).any() and np.isinf(whole).any()
    threads(1)
    for k in range(9):  # one feature: the single-feature micro-kernel alone
        alone = np.asarray(convolution_grad_rhs(g[:, k : k + 1], x, (1, 70, 3, 3), padding=PAD))
        np.testing.assert_array_equal(alone[0], whole[k])  # (NaN == NaN here)
        finite = ~np.isnan(whole[k])
        np.testing.assert_array_equal(bits(alone[0])[finite], bits(whole[k])[finite])
    assert len(taken) == 10


@pytest.mark.skipif(8 not in _WIDTHS, reason="no AVX2 on this CPU")
def test_avx2_rows_that_fill_too_little_of_a_vector_fall_through(taken, monkeypatch):
    """8-lane rows: 6 lanes (3/4 of a vector) are blocked, 5 are not (but in small
    calls, below)."""
    monkeypatch.setattr(D, "_vector_lanes", lambda: 8)
    monkeypatch.setattr(D, "_SMALL_MACS", 0)
    rng = np.random.default_rng(37)
    x = rng.standard_normal((2, 16, 6, 6), dtype=np.float32)
    w = rng.standard_normal((16, 16, 3, 3), dtype=np.float32)
    _close(xo.convolution(x, w, padding=PAD), _forward64(x, w, PAD))
    _close(xo.convolution(x[..., :5], w, padding=PAD), _forward64(x[..., :5], w, PAD))
    assert taken == [("forward", 2, 16, 16)]


@avx512
def test_both_forward_variants_give_the_same_bits(taken, monkeypatch):
    """The 16- and 8-lane forwards add each output's products in the same order
    (features, kernel rows, columns): the same bits, NaN and inf included, on rows of
    one, one and a part, and a partial vector."""
    rng = np.random.default_rng(31)
    for width in (16, 27, 13):
        x = rng.standard_normal((3, 8, 7, width), dtype=np.float32)
        w = rng.standard_normal((24, 8, 3, 3), dtype=np.float32)
        x[1, 2, 3, 4], w[2, 1, 0, 0] = np.nan, np.inf
        results = []
        for lanes in (16, 8):
            monkeypatch.setattr(D, "_vector_lanes", lambda lanes=lanes: lanes)
            results.append(bits(xo.convolution(x, w, padding=PAD)))
        np.testing.assert_array_equal(results[0], results[1])
    assert len(taken) == 6


def test_lanes_follow_numba_target_features(monkeypatch):
    """The blocked kernels' width follows the features Numba compiles for:
    NUMBA_CPU_FEATURES where set (AVX-512: 16 lanes; AVX2 with FMA: 8; else none),
    else the host's."""
    from numba.core import config as numba_config

    try:
        for features, lanes in [
            ("+avx2,+fma,-avx512f", 8),
            ("+avx512f,+avx2,+fma", 16),
            ("+sse4.2,+avx", 0),
            ("+avx2,-fma", 0),
        ]:
            monkeypatch.setattr(numba_config, "CPU_FEATURES", features)
            D._cpu_lanes.cache_clear()
            assert D._cpu_lanes() == lanes
    finally:
        monkeypatch.undo()
        D._cpu_lanes.cache_clear()
    assert D._cpu_lanes() in (0, 8, 16)


@pytest.mark.parametrize(
    "shape",
    [
        (32, 16, 4, 4, 32),  # the main job's second layer: rows of 4 lanes
        (32, 1, 8, 8, 16),  # its first layer: 8 of 16 lanes
        (3, 5, 2, 3, 8),  # 3 lanes
        (2, 4, 5, 1, 16),  # one lane a row
        (1, 2, 1, 1, 8),  # one pixel
        (2, 3, 7, 17, 8),  # 16 + 1 lanes
    ],
)
def test_small_calls_take_the_blocked_kernels_whatever_their_rows(taken, lanes, shape):
    """Calls of at most ``_SMALL_MACS`` multiply-adds whose rows fill too little of a
    vector run the blocked kernels on one thread (the main job compiles no packing
    kernel for its 4 x 4 maps): forward, input gradient and kernel gradient within
    float32 rounding of float64."""
    n, c, h, w_, o = shape
    rng = np.random.default_rng(41)
    x = rng.standard_normal((n, c, h, w_), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    g = rng.standard_normal((n, o, h, w_), dtype=np.float32)
    out, pull = xo.vjp(lambda a, b: xo.convolution(a, b, padding=PAD), x, w)
    gx, gw = pull(g)
    _close(out.numpy(), _forward64(x, w, PAD))
    _close(gw.numpy(), _wgrad64(x, g, PAD))
    g_flipped = np.transpose(w, (1, 0, 2, 3))[:, :, ::-1, ::-1]  # the input gradient
    _close(gx.numpy(), _forward64(g, g_flipped, PAD))
    serial = ("serial",) if not D._fills_vectors(w_, lanes) else ()
    want = []
    if w_ >= 3:  # (rows narrower than the kernel: the packings)
        want.append(("forward", n, c, o) + serial)
        if 3 * D._padded_features(c) <= 8 * c:  # (one input feature computed as 8: no)
            want.append(("forward", n, o, c) + serial)
    want.append(("wgrad", c, n, o) + serial)
    assert taken == want


def test_narrow_rows_above_the_small_limit_fall_through(taken, monkeypatch):
    """Just above ``_SMALL_MACS`` narrow rows take the packings again."""
    rng = np.random.default_rng(43)
    x = rng.standard_normal((4, 16, 4, 4), dtype=np.float32)
    w = rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
    macs = 4 * 32 * 4 * 4 * 16 * 9
    monkeypatch.setattr(D, "_SMALL_MACS", macs)
    _close(xo.convolution(x, w, padding=PAD), _forward64(x, w, PAD))
    assert taken == [("forward", 4, 16, 32, "serial")] or D._cpu_lanes() == 0
    monkeypatch.setattr(D, "_SMALL_MACS", macs - 1)
    _close(xo.convolution(x, w, padding=PAD), _forward64(x, w, PAD))
    assert len(taken) == (1 if D._cpu_lanes() else 0)
