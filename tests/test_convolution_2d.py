"""The two-dimensional convolution fast paths (``xops.ops.convolution._fast_2d`` with the
``im2col_2d`` kernel: im2col and im2row; window_sum's ``window_sum_rows``) against the
spec-shaped reference and against the general packings, over random shapes and
attributes: strides, both dilations, padding (negative too), window reversal, feature
and batch groups, every layout that reaches them, 1-D and 2-D, the three strategies,
serial and parallel kernels; plus the validated-attribute cache."""

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor
from xops.kernels import config
from xops.ops import _convolution_attrs as A
from xops.ops import convolution as C
from xops.ops.convolution import convolution_grad_lhs, convolution_grad_rhs, convolution_reference

STRATEGIES = ["im2col", "im2row", "window_sum"]
K_WINDOW_SUM = C.K.window_sum
LAYOUTS = {
    2: [None, "NHWC,HWIO,NHWC", "[0, 1, f, b]x[i, 0, 1, o]->[f, 1, 0, b]"],
    1: [None, "NWC,WIO,NWC", "[f, 0, b]x[o, 0, i]->[0, b, f]"],
}


def _random_case(rng, n):
    """(lhs shape, rhs shape, attributes) in the layout the dimension numbers name."""
    fgc, bgc = [(1, 1), (int(rng.integers(2, 4)), 1), (1, int(rng.integers(2, 4)))][
        int(rng.integers(0, 3))
    ]
    batch = int(rng.integers(1, 4)) * bgc
    cin = int(rng.integers(1, 4)) * fgc
    cout = int(rng.integers(1, 4)) * fgc * bgc
    spatial = [int(rng.integers(1, 9)) for _ in range(n)]
    kernel = [int(rng.integers(1, 4)) for _ in range(n)]
    kw = dict(
        window_strides=[int(rng.integers(1, 3)) for _ in range(n)],
        padding=[(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(n)],
        lhs_dilation=[int(rng.choice([1, 1, 2])) for _ in range(n)],
        rhs_dilation=[int(rng.choice([1, 1, 2])) for _ in range(n)],
        window_reversal=[bool(rng.integers(0, 2)) for _ in range(n)],
        feature_group_count=fgc,
        batch_group_count=bgc,
    )
    layout = LAYOUTS[n][int(rng.integers(0, 3))]
    lhs = (batch, cin, *spatial)
    rhs = (cout, cin // fgc, *kernel)
    if layout is not None:
        dn = A._dimension_numbers("convolution", layout, n + 2)
        lhs = _place(
            lhs, dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions
        )
        rhs = _place(
            rhs,
            dn.kernel_output_feature_dimension,
            dn.kernel_input_feature_dimension,
            dn.kernel_spatial_dimensions,
        )
        kw["dimension_numbers"] = layout
    return lhs, rhs, kw


def _place(canonical, first, second, spatial):
    shape = [0] * len(canonical)
    shape[first], shape[second] = canonical[0], canonical[1]
    for d, s in zip(spatial, canonical[2:]):
        shape[d] = s
    return tuple(shape)


def _ints(rng, shape, dt=np.float32):
    return rng.integers(-3, 4, shape).astype(dt)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("n", [1, 2])
def test_random_attributes_against_reference(strategy, n, monkeypatch):
    """Integer-valued f32 data: every summation order is exact, so the fast path, the
    general packings and the reference agree bit for bit."""
    monkeypatch.setattr(C, "_FORCE_STRATEGY", strategy)
    rng = np.random.default_rng(100 + n + 10 * STRATEGIES.index(strategy))
    for _ in range(12):
        ls, rs, kw = _random_case(rng, n)
        x, w = _ints(rng, ls), _ints(rng, rs)
        want = np.asarray(convolution_reference(x, w, **kw))
        assert_tensor(xo.convolution(x, w, **kw), want, "f32", signed_zeros=False)
        monkeypatch.setattr(C, "_FAST_2D", False)
        assert_tensor(xo.convolution(x, w, **kw), want, "f32", signed_zeros=False)
        monkeypatch.setattr(C, "_FAST_2D", True)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("dtype, preferred", [("f64", None), ("c64", None), ("i8", "i32")])
def test_other_word_sizes_against_reference(strategy, dtype, preferred, monkeypatch):
    """64-bit words (f64, c64, the exact float64 path of integers); c64 and integers take
    the fast im2col/im2row path and the general window_sum."""
    monkeypatch.setattr(C, "_FORCE_STRATEGY", strategy)
    rng = np.random.default_rng(7)
    for _ in range(6):
        ls, rs, kw = _random_case(rng, 2)
        x, w = rng.integers(-3, 4, ls), rng.integers(-3, 4, rs)
        if dtype == "c64":
            x, w = x + 1j * rng.integers(-3, 4, ls), w - 1j * rng.integers(-3, 4, rs)
        x, w = xo.tensor(x, dtype), xo.tensor(w, dtype)
        got = xo.convolution(x, w, preferred_element_type=preferred, **kw)
        want = convolution_reference(x, w, preferred_element_type=preferred, **kw)
        assert_tensor(got, np.asarray(want), preferred or dtype, signed_zeros=False)


def test_random_floats_close_to_reference():
    """Real-valued data with the automatic strategy (rounding differs by order only)."""
    rng = np.random.default_rng(11)
    for _ in range(10):
        ls, rs, kw = _random_case(rng, 2)
        x = rng.standard_normal(ls).astype(np.float32)
        w = rng.standard_normal(rs).astype(np.float32)
        want = np.asarray(convolution_reference(x, w, **kw))
        assert_tensor(xo.convolution(x, w, **kw), want, "f32", exact=False, rtol=2e-5, atol=2e-5)


def test_benchmark_shapes_and_gradients_match_general_path(monkeypatch):
    """The layers the benchmarks and the digits CNN run (few and many channels, same
    padding), forward and both gradient convolutions: fast path == general path."""
    rng = np.random.default_rng(12)
    pad = dict(padding=[(1, 1), (1, 1)])
    for n, c, h, o in [(4, 1, 28, 16), (3, 3, 32, 8), (2, 16, 14, 32), (2, 32, 16, 16)]:
        x, w, g = _ints(rng, (n, c, h, h)), _ints(rng, (o, c, 3, 3)), _ints(rng, (n, o, h, h))
        got = [
            np.asarray(xo.convolution(x, w, **pad)),
            np.asarray(convolution_grad_lhs(g, w, x.shape, **pad)),
            np.asarray(convolution_grad_rhs(g, x, w.shape, **pad)),
        ]
        monkeypatch.setattr(C, "_FAST_2D", False)
        want = [
            np.asarray(xo.convolution(x, w, **pad)),
            np.asarray(convolution_grad_lhs(g, w, x.shape, **pad)),
            np.asarray(convolution_grad_rhs(g, x, w.shape, **pad)),
        ]
        monkeypatch.setattr(C, "_FAST_2D", True)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(got[0], np.asarray(convolution_reference(x, w, **pad)))


def _every_strategy(inputs, threshold, monkeypatch):
    """Each input's result under each forced strategy, kernels going parallel from
    ``threshold`` work units."""
    monkeypatch.setattr(config, "PARALLEL_THRESHOLD", threshold)
    results = []
    for strategy in STRATEGIES:
        monkeypatch.setattr(C, "_FORCE_STRATEGY", strategy)
        results += [np.asarray(xo.convolution(x, w, **kw)) for x, w, kw in inputs]
    return results


def test_parallel_kernels_match_serial(monkeypatch):
    """The prange variants of the 2-D kernels give the serial results bit for bit."""
    rng = np.random.default_rng(13)
    inputs = []
    for _ in range(6):
        ls, rs, kw = _random_case(rng, 2)
        inputs.append((rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs), kw))
    inputs = [(x, w.astype(np.float32), kw) for x, w, kw in inputs]
    serial = _every_strategy(inputs, 1 << 60, monkeypatch)
    for got, want in zip(_every_strategy(inputs, 0, monkeypatch), serial):
        np.testing.assert_array_equal(got, want)


def test_window_sum_with_infinite_weights_keeps_nan_at_padding(monkeypatch):
    """An infinite weight times a padding zero is NaN (window_sum's zero slot goes
    through the GEMM), next to finite values elsewhere."""
    monkeypatch.setattr(C, "_FORCE_STRATEGY", "window_sum")
    x = np.ones((1, 2, 4, 4), np.float32)
    w = np.ones((1, 2, 3, 3), np.float32)
    w[0, 1, 0, 0] = np.inf
    pad = dict(padding=[(1, 1), (1, 1)])
    got = np.asarray(xo.convolution(x, w, **pad))
    want = np.asarray(convolution_reference(x, w, **pad))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[0, 0, 0, 0]) and not np.isnan(got[0, 0, 1, 1])
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])


def test_window_sum_rows_matches_general_kernel(monkeypatch):
    """window_sum's row-run kernel (stride 1 and no lhs dilation along the last dim,
    padding up to 2 there, negative too) gives the general kernel's results bit for bit
    (integer-valued data), NaN cells included where a weight is infinite; and the
    benchmarks' layer shapes take it (the general kernel is never called)."""
    monkeypatch.setattr(C, "_FORCE_STRATEGY", "window_sum")
    rng = np.random.default_rng(14)
    cases = []
    for n in (1, 2, 2, 2):
        for _ in range(10):
            ls, rs, kw = _random_case(rng, n)
            kw["window_strides"][-1] = kw["lhs_dilation"][-1] = 1
            kw["padding"][-1] = (int(rng.integers(-1, 3)), int(rng.integers(-1, 3)))
            x, w = _ints(rng, ls), _ints(rng, rs)
            if rng.integers(0, 2):
                w.reshape(-1)[int(rng.integers(0, w.size))] = rng.choice([np.inf, -np.inf, np.nan])
            cases.append((x, w, kw))
    monkeypatch.setattr(C, "_FAST_2D", False)
    general = [np.asarray(xo.convolution(x, w, **kw)) for x, w, kw in cases]
    monkeypatch.setattr(C, "_FAST_2D", True)
    taken = 0
    for (x, w, kw), want in zip(cases, general):
        taken += (
            C._row_taps(A._attributes("convolution", *_key(x, w, kw)), np.dtype(np.float32))
            is not None
        )
        np.testing.assert_array_equal(np.asarray(xo.convolution(x, w, **kw)), want)
    assert taken >= len(cases) // 2

    def general_kernel(*args):
        raise AssertionError("the general window_sum kernel ran")

    monkeypatch.setattr(C.K, "window_sum", general_kernel)
    pad = dict(padding=[(1, 1), (1, 1)])
    for n, c, h, o in [(2, 3, 8, 4), (2, 16, 6, 8)]:  # the input gradients: o < c
        x, w = _ints(rng, (n, c, h, h)), _ints(rng, (o, c, 3, 3))
        want = np.asarray(convolution_reference(x, w, **pad))
        np.testing.assert_array_equal(np.asarray(xo.convolution(x, w, **pad)), want)
    g, w = _ints(rng, (2, 4, 5)), _ints(rng, (4, 2, 3))  # 1-D
    want = np.asarray(convolution_grad_lhs(g, w, (2, 2, 5), padding=[(2, 0)]))
    monkeypatch.setattr(C, "_FAST_2D", False)
    monkeypatch.setattr(C.K, "window_sum", K_WINDOW_SUM)
    np.testing.assert_array_equal(
        want, np.asarray(convolution_grad_lhs(g, w, (2, 2, 5), padding=[(2, 0)]))
    )


def _key(x, w, kw):
    """_attributes' positional arguments for convolution(x, w, **kw)."""
    names = [
        "window_strides",
        "padding",
        "lhs_dilation",
        "rhs_dilation",
        "window_reversal",
        "dimension_numbers",
        "feature_group_count",
        "batch_group_count",
        "precision_config",
        "preferred_element_type",
    ]
    defaults = dict(feature_group_count=1, batch_group_count=1)
    dt = xo.tensor(x)._dtype
    return (dt, x.shape, dt, w.shape, *[kw.get(k, defaults.get(k)) for k in names])


def test_geometry_tables():
    """3 x 3 kernel, same padding, stride 1 on a 4 x 5 input: each kernel row is a band
    of rows, each kernel column one unit-step run; with lhs dilation 2 the columns step by 2."""
    rows, band, runs = C._geometry_2d(
        (4, 5), (3, 3), (4, 5), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)
    )
    assert rows.tolist() == [[-1, 0, 1, 2], [0, 1, 2, 3], [1, 2, 3, -1]]
    assert band.tolist() == [[1, 4, 0], [0, 4, 0], [0, 3, 1]]
    assert runs.tolist() == [[1, 4, 1, 0, 1], [0, 5, 1, 0, 1], [0, 4, 1, 1, 1]]
    _, _, runs = C._geometry_2d((1, 3), (1, 2), (1, 5), (1, 1), ((0, 0), (0, 0)), (1, 2), (1, 1))
    assert runs.tolist() == [[0, 3, 2, 0, 1], [1, 2, 2, 1, 1]]
    # window_sum_rows on the first case, rows of 5 + 1 zero column: tap (kh, kw) adds
    # the run first <= e < last of the scratch plane from Y[e + d]
    taps, padding_cells = C._row_taps_table(
        (4, 5), (3, 3), (4, 5), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1
    )
    assert taps.tolist() == [
        [7, 23, -7],
        [6, 23, -6],
        [6, 23, -5],
        [1, 23, -1],
        [0, 23, 0],
        [0, 23, 1],
        [0, 17, 5],
        [0, 17, 6],
        [0, 17, 7],
    ]
    assert padding_cells[0].reshape(4, 5)[:, 0].all() and padding_cells[0].reshape(4, 5)[0].all()
    assert padding_cells[4].sum() == 0 and padding_cells[8].reshape(4, 5)[3].all()


def test_validated_attributes_are_kept_and_keyed_by_value():
    """The cache returns the same validated attributes for equal arguments, a new entry
    when an attribute changes (a list changed in place included), and never keeps a
    failed validation."""
    x = xo.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
    w = xo.tensor(np.ones((1, 1, 2, 2), np.float32))
    pad = [[0, 0], [0, 0]]
    first = xo.convolution(x, w, [2, 2], pad).tolist()
    pad[0][1] = 2  # the same list, changed
    second = xo.convolution(x, w, [2, 2], pad)
    assert first == [[[[10.0, 18.0], [42.0, 50.0]]]]
    assert second.shape == (1, 1, 3, 2)
    assert_tensor(second, np.asarray(convolution_reference(x, w, [2, 2], pad)), "f32")
    key = (None, [(0, 0), (0, 0)], None, None, None, None, 1, 1, None, None)
    a = A._attributes("convolution", x._dtype, x.shape, w._dtype, w.shape, *key)
    assert A._attributes("convolution", x._dtype, x.shape, w._dtype, w.shape, *key) is a
    assert A._frozen([1, True]) != A._frozen([True, 1])
    assert A._frozen([object()]) is None
    with pytest.raises(xo.SpecError, match="C21"):
        xo.convolution(x, w, feature_group_count=0)
    with pytest.raises(xo.SpecError, match="C21"):
        xo.convolution(x, w, feature_group_count=0)
