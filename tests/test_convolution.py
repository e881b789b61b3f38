"""stablehlo.convolution: the spec's example, the spec-shaped reference checked against
independent formulas (XLA's loop pseudo-code, scipy.signal.correlate), the fast paths
against the reference over an attribute zoo x element types x strategies, jax.lax and
PyTorch cross-checks (forward and both gradient convolutions), dimension_numbers forms,
and one negative test per constraint label."""

import itertools

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec
from xops.kernels import config
from xops.ops import convolution as C
from xops.ops.convolution import (
    ConvDimensionNumbers,
    convolution_grad_lhs,
    convolution_grad_rhs,
    convolution_reference,
)

STRATEGIES = ["im2col", "im2row", "window_sum"]


@pytest.fixture(params=STRATEGIES)
def strategy(request, monkeypatch):
    monkeypatch.setattr(C, "_FORCE_STRATEGY", request.param)
    return request.param


# ---------------------------------------------------------------------------------------
# The spec's example (seed 004)
# ---------------------------------------------------------------------------------------

SPEC_LHS = np.array(
    [
        [
            [[1], [2], [5], [6]],
            [[3], [4], [7], [8]],
            [[10], [11], [14], [15]],
            [[12], [13], [16], [17]],
        ]
    ]
)


def test_spec_example(strategy):
    lhs = xo.tensor(SPEC_LHS, "i32")
    rhs = xo.tensor(np.ones((3, 3, 1, 1)), "i32")
    out = xo.convolution(
        lhs,
        rhs,
        window_strides=[4, 4],
        padding=[[0, 0], [0, 0]],
        lhs_dilation=[2, 2],
        rhs_dilation=[1, 1],
        window_reversal=[False, False],
        dimension_numbers="[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        feature_group_count=1,
        batch_group_count=1,
        precision_config=["DEFAULT", "DEFAULT"],
    )
    assert_tensor(out, [[[[10], [26]], [[46], [62]]]], "i32")


def test_spec_example_reference():
    lhs = xo.tensor(SPEC_LHS, "i32")
    rhs = xo.tensor(np.ones((3, 3, 1, 1)), "i32")
    out = convolution_reference(
        lhs,
        rhs,
        [4, 4],
        [[0, 0], [0, 0]],
        [2, 2],
        [1, 1],
        [False, False],
        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
    )
    assert_tensor(out, [[[[10], [26]], [[46], [62]]]], "i32")


def test_docstring_example():
    x = xo.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
    out = xo.convolution(x, xo.tensor(np.ones((1, 1, 2, 2), np.float32)), [2, 2])
    assert out.tolist() == [[[[10.0, 18.0], [42.0, 50.0]]]]


# ---------------------------------------------------------------------------------------
# The attribute zoo: (id, lhs shape, rhs shape, attributes), shapes in the layout the
# dimension numbers name
# ---------------------------------------------------------------------------------------

ZOO = [
    ("1d", (2, 3, 7), (4, 3, 3), {}),
    ("1d_stride_pad", (2, 3, 9), (4, 3, 2), dict(window_strides=[2], padding=[(1, 2)])),
    ("2d", (2, 3, 6, 5), (4, 3, 3, 2), {}),
    (
        "2d_stride_pad",
        (2, 3, 6, 5),
        (4, 3, 3, 2),
        dict(window_strides=[2, 3], padding=[(1, 1), (0, 2)]),
    ),
    ("2d_negative_pad", (2, 3, 6, 5), (4, 3, 2, 2), dict(padding=[(-1, 2), (1, -2)])),
    (
        "2d_lhs_dilation",
        (2, 3, 4, 3),
        (4, 3, 3, 2),
        dict(lhs_dilation=[2, 3], padding=[(1, 1), (2, 0)]),
    ),
    (
        "2d_rhs_dilation",
        (2, 3, 7, 6),
        (4, 3, 3, 2),
        dict(rhs_dilation=[2, 3], padding=[(2, 2), (1, 1)]),
    ),
    ("2d_reversal", (2, 3, 5, 5), (4, 3, 3, 2), dict(window_reversal=[True, False])),
    (
        "2d_everything",
        (2, 3, 6, 5),
        (4, 3, 3, 2),
        dict(
            window_strides=[2, 1],
            padding=[(2, -1), (0, 3)],
            lhs_dilation=[1, 2],
            rhs_dilation=[2, 1],
            window_reversal=[True, True],
        ),
    ),
    (
        "3d",
        (1, 2, 4, 5, 3),
        (3, 2, 2, 3, 2),
        dict(window_strides=[1, 2, 1], padding=[(1, 0), (0, 1), (1, 1)]),
    ),
    (
        "3d_dilated",
        (1, 2, 3, 4, 3),
        (2, 2, 2, 2, 2),
        dict(lhs_dilation=[2, 1, 2], rhs_dilation=[1, 2, 1], window_reversal=[False, True, True]),
    ),
    (
        "4d",
        (1, 2, 3, 3, 2, 3),
        (2, 2, 2, 1, 2, 2),
        dict(padding=[(1, 0), (0, 0), (1, 1), (0, 1)], window_strides=[1, 2, 1, 2]),
    ),
    ("0d", (3, 4), (5, 4), {}),
    ("feature_groups", (2, 6, 5, 5), (6, 2, 3, 3), dict(feature_group_count=3)),
    ("depthwise", (2, 4, 6, 6), (8, 1, 3, 3), dict(feature_group_count=4, padding=[(1, 1)] * 2)),
    ("batch_groups", (4, 3, 5, 5), (6, 3, 2, 2), dict(batch_group_count=2)),
    (
        "batch_groups_4",
        (8, 2, 4, 4),
        (4, 2, 3, 3),
        dict(batch_group_count=4, window_strides=[2, 1], padding=[(1, 1), (1, 0)]),
    ),
    ("nhwc_hwio", (2, 6, 5, 3), (3, 2, 3, 4), dict(dimension_numbers="NHWC,HWIO,NHWC")),
    (
        "nhwc_groups",
        (2, 5, 5, 4),
        (3, 3, 2, 6),
        dict(dimension_numbers="NHWC,HWIO,NHWC", feature_group_count=2, window_strides=[2, 2]),
    ),
    (
        "batch_last",
        (6, 5, 3, 2),
        (3, 3, 2, 4),
        dict(dimension_numbers="[0, 1, f, b]x[i, 0, 1, o]->[f, 1, 0, b]"),
    ),
    (
        "batch_last_bgc",
        (5, 4, 3, 4),
        (2, 2, 3, 6),
        dict(dimension_numbers="[0, 1, f, b]x[0, 1, i, o]->[1, b, f, 0]", batch_group_count=2),
    ),
    ("empty_batch", (0, 3, 5, 5), (4, 3, 3, 3), {}),
    ("empty_features", (2, 0, 5, 5), (4, 0, 3, 3), {}),
    ("empty_out_features", (2, 3, 5, 5), (0, 3, 3, 3), {}),
    ("empty_spatial", (2, 3, 0, 5), (4, 3, 2, 2), dict(padding=[(1, 1), (0, 0)])),
    ("window_bigger_than_input", (2, 3, 3, 3), (4, 3, 5, 5), {}),
    ("kernel_spatial_zero", (2, 3, 4, 4), (4, 3, 0, 2), dict(padding=[(0, 1), (0, 0)])),
    ("cropped_away", (1, 2, 4, 4), (2, 2, 1, 1), dict(padding=[(-5, 0), (0, 0)])),
    ("stride_past_end", (1, 2, 4, 4), (2, 2, 2, 2), dict(window_strides=[5, 5])),
]
ZOO_IDS = [z[0] for z in ZOO]


def zoo(*names):
    return [z for z in ZOO if z[0] in names]


def sample(dt, shape, seed, lo=-3, hi=3):
    """Small integer values (exact in every type and in every summation order)."""
    dt = xo.as_dtype(dt)
    rng = np.random.default_rng(seed)
    if dt.kind == "bool":
        return xo.tensor(rng.integers(0, 2, shape).astype(bool), dt)
    if dt.kind == "ui":
        lo = 0
    v = rng.integers(lo, hi + 1, shape)
    if dt.kind == "complex":
        v = v + 1j * rng.integers(lo, hi + 1, shape)
    return xo.tensor(v, dt)


# (operand type, preferred_element_type). Every strategy runs the types whose packing
# differs: f32 (32-bit words), i8 -> i32 (exact float64 path, 64-bit words), c64
# (complex lanes); the types that share those paths run with the automatic choice.
DTYPE_CASES = [("f32", None), ("i8", "i32"), ("c64", None)]
AUTO_DTYPE_CASES = [("bf16", None), ("i32", None), ("i1", None)]


@pytest.mark.parametrize("case", ZOO, ids=ZOO_IDS)
@pytest.mark.parametrize("dtype, preferred", DTYPE_CASES, ids=[d[0] for d in DTYPE_CASES])
def test_against_reference(case, dtype, preferred, strategy):
    _check_against_reference(case, dtype, preferred)


@pytest.mark.parametrize("case", ZOO, ids=ZOO_IDS)
@pytest.mark.parametrize("dtype, preferred", AUTO_DTYPE_CASES, ids=[d[0] for d in AUTO_DTYPE_CASES])
def test_against_reference_auto_strategy(case, dtype, preferred):
    _check_against_reference(case, dtype, preferred)


def _check_against_reference(case, dtype, preferred):
    _, ls, rs, kw = case
    lhs, rhs = sample(dtype, ls, 0), sample(dtype, rs, 1)
    got = xo.convolution(lhs, rhs, preferred_element_type=preferred, **kw)
    want = convolution_reference(lhs, rhs, preferred_element_type=preferred, **kw)
    assert_tensor(got, np.asarray(want), preferred or dtype, signed_zeros=False)


OTHER_TYPES = [
    ("f64", None),
    ("f16", None),
    ("c128", None),
    ("ui8", None),
    ("i64", None),
    ("i4", None),
    ("f8E4M3FN", None),
    ("f32", "f64"),
    ("bf16", "f32"),
    ("f32", "bf16"),
    ("c64", "c128"),
    ("i32", "i8"),
    ("ui16", "ui32"),
]


@pytest.mark.parametrize(
    "case",
    zoo(
        "1d_stride_pad",
        "2d_everything",
        "3d_dilated",
        "depthwise",
        "batch_groups",
        "batch_last_bgc",
    ),
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("dtype, preferred", OTHER_TYPES, ids=[f"{a}-{b}" for a, b in OTHER_TYPES])
def test_more_types_against_reference(case, dtype, preferred, strategy):
    _, ls, rs, kw = case
    lhs, rhs = sample(dtype, ls, 2, -1, 1), sample(dtype, rs, 3, -1, 1)
    got = xo.convolution(lhs, rhs, preferred_element_type=preferred, **kw)
    want = convolution_reference(lhs, rhs, preferred_element_type=preferred, **kw)
    assert_tensor(got, np.asarray(want), preferred or dtype, signed_zeros=False)


@pytest.mark.parametrize(
    "case",
    zoo("2d_stride_pad", "2d_everything", "depthwise", "batch_groups_4", "nhwc_groups"),
    ids=lambda c: c[0],
)
def test_random_floats_against_reference(case, strategy):
    _, ls, rs, kw = case
    rng = np.random.default_rng(5)
    lhs = rng.standard_normal(ls).astype(np.float32)
    rhs = rng.standard_normal(rs).astype(np.float32)
    want = np.asarray(convolution_reference(lhs, rhs, **kw))
    assert_tensor(xo.convolution(lhs, rhs, **kw), want, "f32", exact=False, rtol=2e-5, atol=2e-5)


def test_parallel_kernels_match_serial(monkeypatch):
    """The prange variants (forced on small inputs) give the serial results bit for bit."""
    rng = np.random.default_rng(6)
    cases = zoo("2d_stride_pad", "2d_everything", "batch_groups_4", "nhwc_groups")
    inputs = [
        (rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32), kw)
        for _, ls, rs, kw in cases
    ]
    for strategy in STRATEGIES:
        monkeypatch.setattr(C, "_FORCE_STRATEGY", strategy)
        monkeypatch.setattr(config, "PARALLEL_THRESHOLD", 1 << 60)
        serial = [np.asarray(xo.convolution(x, w, **kw)) for x, w, kw in inputs]
        monkeypatch.setattr(config, "PARALLEL_THRESHOLD", 0)
        for (x, w, kw), want in zip(inputs, serial):
            np.testing.assert_array_equal(np.asarray(xo.convolution(x, w, **kw)), want)


def test_large_problem_picks_strategies_and_agrees():
    """Sizes where the cost model picks each strategy."""
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, (4, 16, 20, 20)).astype(np.float32)
    for w_shape, kw in [
        ((8, 16, 3, 3), dict(padding=[(1, 1)] * 2)),
        ((2, 16, 3, 3), dict(padding=[(1, 1)] * 2)),
        ((8, 16, 3, 3), dict(lhs_dilation=[2, 2], padding=[(2, 2)] * 2)),
    ]:
        w = rng.integers(-2, 3, w_shape).astype(np.float32)
        want = np.asarray(convolution_reference(x, w, **kw))
        assert_tensor(xo.convolution(x, w, **kw), want, "f32")
    assert (
        C._strategy(
            _attrs(x, np.zeros((2, 16, 3, 3), np.float32), padding=[(1, 1)] * 2), 16, 2, 1, 9, 400
        )
        == "window_sum"
    )
    assert (
        C._strategy(
            _attrs(x, np.zeros((32, 16, 3, 3), np.float32), padding=[(1, 1)] * 2), 16, 32, 1, 9, 400
        )
        == "im2col"
    )
    # a kernel wider than the output (the shape of a kernel gradient): im2row
    assert (
        C._strategy(_attrs(x, np.zeros((8, 16, 18, 18), np.float32)), 16, 8, 1, 18 * 18, 9)
        == "im2row"
    )


def _attrs(x, w, **kw):
    return C._attributes(
        "convolution",
        xo.as_dtype(x.dtype),
        x.shape,
        xo.as_dtype(w.dtype),
        w.shape,
        kw.get("window_strides"),
        kw.get("padding"),
        kw.get("lhs_dilation"),
        kw.get("rhs_dilation"),
        None,
        None,
        1,
        1,
        None,
        None,
    )


# ---------------------------------------------------------------------------------------
# The oracle itself against independent formulas
# ---------------------------------------------------------------------------------------


def xla_loops(x, w, strides, padding, lhs_dilation, rhs_dilation, reversal, fgc, bgc):
    """XLA's pseudo-code for Conv, generalised to every attribute, in canonical layout
    (N, C, *spatial) x (O, C/fgc, *kernel) -> (N/bgc, O, *spatial), Python-int exact."""
    n_img, _, *in_sp = x.shape
    n_out, c_g, *k_sp = w.shape
    out_sp = []
    for s, k, st, (lo, hi), ld, rd in zip(
        in_sp, k_sp, strides, padding, lhs_dilation, rhs_dilation
    ):
        padded = lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
        dk = 0 if k == 0 else (k - 1) * rd + 1
        out_sp.append(0 if padded <= 0 or dk > padded else (padded - dk) // st + 1)
    nb = n_img // bgc
    out = np.zeros((nb, n_out, *out_sp), object)
    for b, o in itertools.product(range(nb), range(n_out)):
        fgroup = o // (n_out // fgc)
        img = (o // (n_out // bgc)) * nb + b
        for opos in itertools.product(*map(range, out_sp)):
            acc = 0
            for cg in range(c_g):
                c = fgroup * c_g + cg
                for tap in itertools.product(*map(range, k_sp)):
                    idx = []
                    for d, t in enumerate(tap):
                        t_read = k_sp[d] - 1 - t if reversal[d] else t
                        q = opos[d] * strides[d] + t_read * rhs_dilation[d] - padding[d][0]
                        if q < 0 or q % lhs_dilation[d] or q // lhs_dilation[d] >= in_sp[d]:
                            break
                        idx.append(q // lhs_dilation[d])
                    else:
                        acc += int(x[(img, c, *idx)]) * int(w[(o, cg, *tap)])
            out[(b, o, *opos)] = acc
    return out


@pytest.mark.parametrize("case", ZOO, ids=ZOO_IDS)
def test_reference_against_xla_loops(case):
    _, ls, rs, kw = case
    lhs, rhs = sample("i64", ls, 0).numpy(), sample("i64", rs, 1).numpy()
    rank = len(ls)
    n = rank - 2
    dn = C._dimension_numbers("test", kw.get("dimension_numbers"), rank)
    x = np.transpose(
        lhs, [dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions]
    )
    w = np.transpose(
        rhs,
        [
            dn.kernel_output_feature_dimension,
            dn.kernel_input_feature_dimension,
            *dn.kernel_spatial_dimensions,
        ],
    )
    want = xla_loops(
        x,
        w,
        kw.get("window_strides", [1] * n),
        kw.get("padding", [(0, 0)] * n),
        kw.get("lhs_dilation", [1] * n),
        kw.get("rhs_dilation", [1] * n),
        kw.get("window_reversal", [False] * n),
        kw.get("feature_group_count", 1),
        kw.get("batch_group_count", 1),
    )
    got = np.asarray(convolution_reference(lhs, rhs, **kw))
    axes = [dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions]
    np.testing.assert_array_equal(np.transpose(got, axes), want.astype(np.int64))


@pytest.mark.parametrize("pad", [(0, 0), (1, 2)])
def test_reference_against_scipy_correlate(pad):
    signal = pytest.importorskip("scipy.signal")
    rng = np.random.default_rng(8)
    x = rng.integers(-3, 4, (2, 3, 6, 7)).astype(np.float64)
    w = rng.integers(-3, 4, (4, 3, 3, 2)).astype(np.float64)
    xp = np.pad(x, [(0, 0), (0, 0), pad, pad])
    want = np.array(
        [
            [
                sum(
                    signal.correlate(xp[n, c], w[o, c], mode="valid", method="direct")
                    for c in range(3)
                )
                for o in range(4)
            ]
            for n in range(2)
        ]
    )
    got = convolution_reference(x, w, padding=[pad, pad])
    assert_tensor(got, want, "f64")


def test_reference_literal_semantics_small():
    """One output element computed by hand: 1-D, stride 2, rhs_dilation 2, pad (1, 0)."""
    x = np.array([[[1, 2, 3, 4, 5]]], np.int64)  # padded: [0, 1, 2, 3, 4, 5]
    w = np.array([[[10, 100]]], np.int64)  # taps at 0 and 2
    out = convolution_reference(x, w, [2], [(1, 0)], None, [2])
    # windows start at 0, 2: [0, 2] -> 0*10 + 2*100; [2, 4] -> 2*10 + 4*100
    assert_tensor(out, [[[200, 420]]], "i64")
    assert_tensor(xo.convolution(x, w, [2], [(1, 0)], None, [2]), [[[200, 420]]], "i64")


# ---------------------------------------------------------------------------------------
# Element types and exactness
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", xo.all_dtypes(), ids=lambda d: d.name)
def test_every_element_type(dtype):
    a = np.array([[[1, 0, 1, 1]]])
    b = np.array([[[1, 1]]])
    want = np.array([[[1, 1, 2]]])
    if dtype.name in ("i2", "f4E2M1FN", "ui2"):
        want = np.array([[[1, 1, 2]]]) if dtype.name != "i2" else np.array([[[1, 1, -2]]])
    if dtype.kind == "bool":
        want = want > 0
    if dtype.name == "f8E8M0FNU":  # powers of two only, no zero
        a, b, want = np.array([[[2, 4]]]), np.array([[[4]]]), np.array([[[8, 16]]])
    got = xo.convolution(xo.tensor(a, dtype), xo.tensor(b, dtype))
    assert got.dtype is dtype
    assert_tensor(got, xo.tensor(want, dtype).numpy())


def test_integer_accumulation_is_exact_and_wraps(strategy):
    x = xo.tensor(np.full((1, 4, 3), 127), "i8")
    w = xo.tensor(np.full((1, 4, 3), 127), "i8")
    assert_tensor(xo.convolution(x, w, preferred_element_type="i32"), [[[12 * 127 * 127]]], "i32")
    assert_tensor(xo.convolution(x, w), [[[np.int64(12 * 127 * 127).astype(np.int8)]]], "i8")
    # values too large for the float64 path: int64 matmul, wrapping mod 2**64
    v = 2**40 + 3
    big = xo.tensor(np.full((1, 2, 2), v), "i64")
    want = (4 * v * v + 2**63) % 2**64 - 2**63
    assert_tensor(xo.convolution(big, big), np.array([[[want]]], np.int64), "i64")
    u = xo.tensor(np.full((1, 1, 1), 2**63 + 5, np.uint64), "ui64")
    three = xo.tensor(np.full((1, 1, 1), 3, np.uint64), "ui64")
    want = (3 * (2**63 + 5)) % 2**64
    assert_tensor(xo.convolution(u, three), np.array([[[want]]], np.uint64), "ui64")


def test_i1_is_or_of_ands(strategy):
    x = xo.tensor([[[True, False, True, False, False]]])
    w = xo.tensor([[[True, True]]])
    assert_tensor(xo.convolution(x, w), [[[True, True, True, False]]], "i1")


def test_bf16_accumulates_in_f32_and_rounds_once(strategy):
    # 256 + 1 + 1 in bf16 steps would stay 256; accumulated in f32 it is 258 (exact in bf16)
    x = xo.tensor([[[256.0, 1.0, 1.0]]], "bf16")
    w = xo.tensor([[[1.0, 1.0, 1.0]]], "bf16")
    assert_tensor(xo.convolution(x, w), [[[258.0]]], "bf16")
    assert_tensor(xo.convolution(x, w, preferred_element_type="f32"), [[[258.0]]], "f32")


def test_nan_and_inf_propagate_through_padding(strategy):
    # the spec multiplies padding zeros by the kernel: 0 * inf = NaN
    x = xo.tensor(np.ones((1, 1, 3), np.float32))
    w = xo.tensor(np.array([[[np.inf, 1.0]]], np.float32))
    got = xo.convolution(x, w, padding=[(1, 0)])
    want = convolution_reference(x, w, padding=[(1, 0)])
    assert_tensor(got, np.asarray(want), "f32")
    assert np.isnan(np.asarray(got)[0, 0, 0]) and np.isinf(np.asarray(got)[0, 0, 1])


def test_inputs_may_be_views_and_numpy():
    x = xo.transpose(xo.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)), [0, 1, 2])
    xt = xo.transpose(xo.tensor(np.arange(24.0, dtype=np.float32).reshape(4, 3, 2)), [2, 1, 0])
    w = np.ones((1, 3, 2), np.float32)
    assert_tensor(xo.convolution(xt, w), np.asarray(convolution_reference(xt, w)), "f32")
    assert xo.convolution(x, w).shape == (2, 1, 3)


# ---------------------------------------------------------------------------------------
# dimension_numbers forms
# ---------------------------------------------------------------------------------------

NHWC = ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))


@pytest.mark.parametrize(
    "form",
    [
        "NHWC,HWIO,NHWC",
        "nhwc, hwio -> nhwc",
        ("NHWC", "HWIO", "NHWC"),
        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        "#stablehlo.conv<[b,0,1,f]x[0,1,i,o]->[b,0,1,f]>",
        NHWC,
        NHWC._asdict(),
        dict(
            input_batch_dimension=0,
            input_feature_dimension=3,
            input_spatial_dimensions=[1, 2],
            kernel_input_feature_dimension=2,
            kernel_output_feature_dimension=3,
            kernel_spatial_dimensions=np.array([0, 1]),
            output_batch_dimension=0,
            output_feature_dimension=3,
            output_spatial_dimensions=(1, 2),
        ),
    ],
)
def test_dimension_number_forms_agree(form):
    assert C._dimension_numbers("t", form, 4) == NHWC
    x, w = sample("f32", (2, 5, 4, 3), 0), sample("f32", (2, 3, 3, 4), 1)
    want = xo.convolution(x, w, dimension_numbers=NHWC, padding=[(1, 0), (0, 1)])
    assert_tensor(
        xo.convolution(x, w, dimension_numbers=form, padding=[(1, 0), (0, 1)]),
        np.asarray(want),
        "f32",
    )


def test_default_and_named_layouts():
    assert C._dimension_numbers("t", None, 4) == C._dimension_numbers("t", "NCHW,OIHW,NCHW", 4)
    assert C._dimension_numbers("t", None, 3) == C._dimension_numbers("t", "NCH,OIH,NCH", 3)
    assert C._dimension_numbers("t", None, 5) == C._dimension_numbers("t", "NCDHW,OIDHW,NCDHW", 5)
    assert C._dimension_numbers("t", None, 2) == C._dimension_numbers("t", "NC,OI,NC", 2)
    assert C._dimension_numbers("t", None, 4) == C._dimension_numbers(
        "t", "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]", 4
    )
    # spatial dims are numbered in the kernel spec's order (as jax.lax does)
    assert C._dimension_numbers("t", "NWHC,HWIO,NHWC", 4).input_spatial_dimensions == (2, 1)
    assert str(NHWC) == "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("NCHW,OIHW", "3 comma-separated"),
        ("NCHW,OIHW,NCH", "spatial letters differ"),
        ("NCHW,OHWX,NCHW", "has no 'I'"),
        ("NCCW,OIHW,NCHW", "repeats"),
        ("NC1W,OI1W,NC1W", "letters"),
        ("[b, 0, 1, f]x[0, 1, i, o]", "form"),
        ("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, f]", "different"),
        ("[b, 0, 1, f]x[0, 1, i, x]->[b, 0, 1, f]", "unknown entry"),
        ("[b, 0, 2, f]x[0, 2, i, o]->[b, 0, 2, f]", "0..1"),
        ("[b, 0, 1, b]x[0, 1, i, o]->[b, 0, 1, f]", "exactly once"),
        (42, "must be None"),
        (dict(input_batch_dimension=0), "missing"),
    ],
)
def test_bad_dimension_numbers(bad, fragment):
    x, w = sample("f32", (1, 2, 3, 3), 0), sample("f32", (1, 2, 2, 2), 1)
    with raises_spec("convolution", "I8-I16") as e:
        xo.convolution(x, w, dimension_numbers=bad)
    assert fragment in str(e.value)


# ---------------------------------------------------------------------------------------
# XLA aliases: Conv (SAME / VALID) and ConvWithGeneralPadding
# ---------------------------------------------------------------------------------------


def test_conv_with_general_padding():
    x, w = sample("f32", (2, 3, 6, 5), 0), sample("f32", (4, 3, 3, 2), 1)
    want = convolution_reference(x, w, [2, 1], [(1, 0), (2, 1)])
    assert_tensor(xo.conv_with_general_padding(x, w, [2, 1], [(1, 0), (2, 1)]), np.asarray(want))


@pytest.mark.parametrize(
    "size, k, stride, rdil",
    [(5, 3, 1, 1), (6, 3, 2, 1), (7, 4, 3, 1), (5, 2, 2, 2), (4, 5, 1, 1), (1, 3, 2, 1)],
)
def test_conv_same_and_valid(size, k, stride, rdil):
    x, w = sample("f32", (1, 2, size, size), 0), sample("f32", (3, 2, k, k), 1)
    same = xo.conv(x, w, [stride, stride], "SAME", rhs_dilation=[rdil, rdil])
    assert same.shape[2:] == (-(-size // stride),) * 2
    dk = (k - 1) * rdil + 1
    total = max((-(-size // stride) - 1) * stride + dk - size, 0)
    pads = [(total // 2, total - total // 2)] * 2
    want = convolution_reference(x, w, [stride] * 2, pads, None, [rdil] * 2)
    assert_tensor(same, np.asarray(want))
    valid = xo.conv(x, w, [stride, stride], "valid", rhs_dilation=[rdil, rdil])
    assert_tensor(
        valid, np.asarray(convolution_reference(x, w, [stride] * 2, None, None, [rdil] * 2))
    )


def test_conv_errors_name_conv():
    x, w = sample("f32", (1, 2, 4, 4), 0), sample("f32", (3, 2, 2, 2), 1)
    with raises_spec("conv", "I4"):
        xo.conv(x, w, [1, 1], "FULL")
    with raises_spec("conv", "C3"):
        xo.conv(x, w, [0, 1], "SAME")
    with raises_spec("conv_with_general_padding", "C14"):
        xo.conv_with_general_padding(x, sample("f32", (3, 1, 2, 2), 1), [1, 1], [(0, 0)] * 2)


# ---------------------------------------------------------------------------------------
# Cross-checks with jax.lax and PyTorch
# ---------------------------------------------------------------------------------------

# A representative subset (each jax call compiles). jax rejects what the spec allows in
# "0d" (no spatial dims), "kernel_spatial_zero" and "cropped_away" (negative padding
# larger than the input): those are checked against the XLA loops only.
JAX_CASES = zoo(
    "1d_stride_pad",
    "2d_negative_pad",
    "2d_lhs_dilation",
    "2d_rhs_dilation",
    "2d_everything",
    "3d_dilated",
    "4d",
    "feature_groups",
    "depthwise",
    "batch_groups_4",
    "nhwc_groups",
    "batch_last_bgc",
    "empty_spatial",
    "window_bigger_than_input",
)


def _jax_dn(dn):
    from jax import lax

    return lax.ConvDimensionNumbers(
        (dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions),
        (
            dn.kernel_output_feature_dimension,
            dn.kernel_input_feature_dimension,
            *dn.kernel_spatial_dimensions,
        ),
        (dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions),
    )


def _jax_conv(lhs, rhs, kw):
    """jax.lax.conv_general_dilated for our attributes (window reversal = flipped kernel)."""
    jax = pytest.importorskip("jax")
    from jax import lax

    rank = lhs.ndim
    n = rank - 2
    dn = C._dimension_numbers("t", kw.get("dimension_numbers"), rank)
    rev = kw.get("window_reversal", [False] * n)
    flips = [dn.kernel_spatial_dimensions[d] for d in range(n) if rev[d]]
    rhs = np.flip(rhs, flips) if flips else rhs
    return lax.conv_general_dilated(
        jax.numpy.asarray(lhs),
        jax.numpy.asarray(np.ascontiguousarray(rhs)),
        kw.get("window_strides", [1] * n),
        kw.get("padding", [(0, 0)] * n),
        kw.get("lhs_dilation", [1] * n),
        kw.get("rhs_dilation", [1] * n),
        _jax_dn(dn),
        kw.get("feature_group_count", 1),
        kw.get("batch_group_count", 1),
        precision=lax.Precision.HIGHEST,
    )


@pytest.mark.parametrize("case", JAX_CASES, ids=[z[0] for z in JAX_CASES])
def test_against_jax(case):
    _, ls, rs, kw = case
    lhs, rhs = sample("f32", ls, 0).numpy(), sample("f32", rs, 1).numpy()
    want = np.asarray(_jax_conv(lhs, rhs, kw))
    assert_tensor(xo.convolution(lhs, rhs, **kw), want, "f32", signed_zeros=False)


def test_against_jax_random_and_jax_dimension_numbers():
    pytest.importorskip("jax")
    rng = np.random.default_rng(9)
    lhs = rng.standard_normal((3, 5, 9, 4)).astype(np.float32)  # N H W C
    rhs = rng.standard_normal((3, 2, 4, 8)).astype(np.float32)  # H W I O
    kw = dict(
        window_strides=[2, 1],
        padding=[(1, 2), (0, 1)],
        rhs_dilation=[1, 2],
        lhs_dilation=[2, 1],
        dimension_numbers="NHWC,HWIO,NHWC",
        feature_group_count=1,
    )
    want = np.asarray(_jax_conv(lhs, rhs, kw))
    jdn = _jax_dn(C._dimension_numbers("t", "NHWC,HWIO,NHWC", 4))
    got = xo.convolution(lhs, rhs, **{**kw, "dimension_numbers": jdn})
    assert_tensor(got, want, "f32", exact=False, rtol=1e-5, atol=1e-5)


# Gradient cases: (id, lhs shape, rhs shape, attributes)
GRAD_CASES = [
    ("plain", (2, 3, 6, 6), (4, 3, 3, 3), dict(padding=[(1, 1), (1, 1)])),
    (
        "dilations",
        (2, 3, 5, 6),
        (4, 3, 2, 3),
        dict(
            lhs_dilation=[2, 1],
            rhs_dilation=[1, 2],
            window_strides=[1, 2],
            padding=[(1, 1), (2, -1)],
        ),
    ),
    ("reversal", (1, 2, 5, 5), (3, 2, 3, 2), dict(window_reversal=[True, False])),
    (
        "feature_groups",
        (2, 6, 5, 5),
        (6, 2, 3, 3),
        dict(feature_group_count=3, padding=[(1, 1)] * 2),
    ),
    ("batch_groups", (4, 3, 5, 5), (6, 3, 2, 2), dict(batch_group_count=2, window_strides=[2, 1])),
    (
        "nhwc",
        (2, 5, 4, 3),
        (2, 3, 3, 4),
        dict(dimension_numbers="NHWC,HWIO,NHWC", padding=[(1, 0), (0, 1)]),
    ),
    ("3d", (1, 2, 4, 3, 4), (2, 2, 2, 2, 2), dict(padding=[(1, 0)] * 3, window_strides=[2, 1, 1])),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[g[0] for g in GRAD_CASES])
def test_gradients_against_jax_vjp(case):
    jax = pytest.importorskip("jax")
    _, ls, rs, kw = case
    lhs, rhs = sample("f32", ls, 0).numpy(), sample("f32", rs, 1).numpy()
    out, vjp = jax.vjp(
        lambda a, b: _jax_conv_traced(a, b, kw), jax.numpy.asarray(lhs), jax.numpy.asarray(rhs)
    )
    g = sample("f32", out.shape, 2).numpy()
    want_lhs, want_rhs = vjp(jax.numpy.asarray(g))
    got_lhs = convolution_grad_lhs(g, rhs, lhs.shape, **kw)
    got_rhs = convolution_grad_rhs(g, lhs, rhs.shape, **kw)
    assert_tensor(got_lhs, np.asarray(want_lhs), "f32", signed_zeros=False)
    assert_tensor(got_rhs, np.asarray(want_rhs), "f32", signed_zeros=False)


def _jax_conv_traced(lhs, rhs, kw):
    from jax import lax

    rank = lhs.ndim
    n = rank - 2
    dn = C._dimension_numbers("t", kw.get("dimension_numbers"), rank)
    rev = kw.get("window_reversal", [False] * n)
    flips = tuple(dn.kernel_spatial_dimensions[d] for d in range(n) if rev[d])
    if flips:
        rhs = lax.rev(rhs, flips)
    return lax.conv_general_dilated(
        lhs,
        rhs,
        kw.get("window_strides", [1] * n),
        kw.get("padding", [(0, 0)] * n),
        kw.get("lhs_dilation", [1] * n),
        kw.get("rhs_dilation", [1] * n),
        _jax_dn(dn),
        kw.get("feature_group_count", 1),
        kw.get("batch_group_count", 1),
        precision=lax.Precision.HIGHEST,
    )


@pytest.mark.parametrize(
    "stride, pad, dil, groups",
    [(1, 1, 1, 1), (2, 1, 1, 1), (2, 0, 2, 1), (1, 1, 1, 3), (3, 2, 2, 3)],
)
def test_gradients_against_torch_autograd(stride, pad, dil, groups):
    torch = pytest.importorskip("torch")
    x = sample("f32", (2, 6, 9, 8), 0).numpy()
    w = sample("f32", (6, 6 // groups, 3, 3), 1).numpy()
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad, dilation=dil, groups=groups)
    kw = dict(
        window_strides=[stride] * 2,
        padding=[(pad, pad)] * 2,
        rhs_dilation=[dil] * 2,
        feature_group_count=groups,
    )
    y = xo.convolution(x, w, **kw)
    assert_tensor(y, ty.detach().numpy(), "f32")
    g = sample("f32", y.shape, 2).numpy()
    ty.backward(torch.tensor(g))
    assert_tensor(
        convolution_grad_lhs(g, w, x.shape, **kw), tx.grad.numpy(), "f32", signed_zeros=False
    )
    assert_tensor(
        convolution_grad_rhs(g, x, w.shape, **kw), tw.grad.numpy(), "f32", signed_zeros=False
    )


def test_gradient_of_empty_cotangent_is_zero():
    x, w = np.ones((0, 2, 4, 4), np.float32), np.ones((3, 2, 2, 2), np.float32)
    g = np.ones((0, 3, 3, 3), np.float32)
    assert_tensor(convolution_grad_lhs(g, w, x.shape), np.zeros(x.shape, np.float32))
    assert_tensor(convolution_grad_rhs(g, x, w.shape), np.zeros(w.shape, np.float32))


# ---------------------------------------------------------------------------------------
# One negative test per constraint label
# ---------------------------------------------------------------------------------------

X = np.ones((2, 4, 5, 5), np.float32)
W = np.ones((6, 4, 3, 3), np.float32)
DICT = NHWC._replace(
    input_batch_dimension=0,
    input_feature_dimension=1,
    input_spatial_dimensions=(2, 3),
    kernel_input_feature_dimension=1,
    kernel_output_feature_dimension=0,
    kernel_spatial_dimensions=(2, 3),
    output_batch_dimension=0,
    output_feature_dimension=1,
    output_spatial_dimensions=(2, 3),
)

NEGATIVE = [
    ("C1", X, W[0], {}),
    ("C2", X, W, dict(window_strides=[1])),
    ("C3", X, W, dict(window_strides=[1, 0])),
    ("C4", X, W, dict(padding=[(1, 1)])),
    ("C4", X, W, dict(padding=[1, 1])),
    ("C5", X, W, dict(lhs_dilation=[1, 1, 1])),
    ("C6", X, W, dict(lhs_dilation=[0, 1])),
    ("C7", X, W, dict(rhs_dilation=[2])),
    ("C8", X, W, dict(rhs_dilation=[1, -1])),
    ("C9", X, W, dict(window_reversal=[True])),
    ("C10", np.ones((3, 4, 5, 5), np.float32), W, dict(batch_group_count=2)),
    ("C11", X, np.ones((6, 1, 3, 3), np.float32), dict(feature_group_count=3)),
    ("C12", X, W, dict(dimension_numbers=DICT._replace(input_spatial_dimensions=(2,)))),
    ("C13", X, W, dict(dimension_numbers=DICT._replace(input_feature_dimension=0))),
    ("C13", X, W, dict(dimension_numbers=DICT._replace(input_batch_dimension=4))),
    ("C13", np.ones((3,), np.float32), np.ones((3,), np.float32), {}),
    ("C14", X, np.ones((6, 3, 3, 3), np.float32), {}),
    (
        "C15",
        np.ones((4, 4, 5, 5), np.float32),
        np.ones((3, 4, 3, 3), np.float32),
        dict(batch_group_count=2),
    ),
    ("C16", X, np.ones((5, 2, 3, 3), np.float32), dict(feature_group_count=2)),
    ("C17", X, W, dict(dimension_numbers=DICT._replace(kernel_spatial_dimensions=(2, 3, 1)))),
    ("C18", X, W, dict(dimension_numbers=DICT._replace(kernel_input_feature_dimension=0))),
    ("C19", X, W, dict(dimension_numbers=DICT._replace(output_spatial_dimensions=()))),
    ("C20", X, W, dict(dimension_numbers=DICT._replace(output_feature_dimension=2))),
    ("C21", X, W, dict(feature_group_count=0)),
    ("C22", X, W, dict(batch_group_count=-1)),
    (
        "C23",
        np.ones((2, 4, 5, 5), np.float32),
        np.ones((4, 2, 3, 3), np.float32),
        dict(feature_group_count=2, batch_group_count=2),
    ),
    ("C24", X, W, dict(precision_config=["DEFAULT"])),
    ("C24", X, W, dict(precision_config=["DEFAULT", "FAST"])),
    ("C27", X, W.astype(np.float64), {}),
    ("C27", X, W, dict(preferred_element_type="i32")),
    ("C27", X, W, dict(preferred_element_type="not-a-type")),
    ("C28", X, W, dict(preferred_element_type="!quant.uniform<i8:f32, 0.5>")),
    ("I3", X, W, dict(window_strides=[1.5, 1])),
    ("I4", X, W, dict(padding="SAME")),
    ("I4", X, W, dict(padding=[(0.5, 1), (1, 1)])),
    ("I5", X, W, dict(lhs_dilation="2")),
    ("I6", X, W, dict(rhs_dilation=[[1, 1]])),
    ("I7", X, W, dict(window_reversal=[2, 0])),
    ("I8", X, W, dict(dimension_numbers={**DICT._asdict(), "input_batch_dimension": "b"})),
    ("I10", X, W, dict(dimension_numbers={**DICT._asdict(), "input_spatial_dimensions": 2})),
    ("I17", X, W, dict(feature_group_count=1.0)),
    ("I18", X, W, dict(batch_group_count=None)),
]


@pytest.mark.parametrize(
    "label, lhs, rhs, kw", NEGATIVE, ids=[f"{n[0]}-{i}" for i, n in enumerate(NEGATIVE)]
)
def test_constraint_violations(label, lhs, rhs, kw):
    with raises_spec("convolution", label):
        xo.convolution(lhs, rhs, **kw)


def test_messages_give_shapes():
    with pytest.raises(xo.SpecError) as e:
        xo.convolution(X, np.ones((6, 3, 3, 3), np.float32))
    assert "f32[2,4,5,5]" in str(e.value) and "f32[6,3,3,3]" in str(e.value)
    with pytest.raises(xo.SpecError) as e:
        xo.convolution(np.ones((3, 4, 5, 5), np.float32), W, batch_group_count=2)
    assert "= 3 must be divisible by batch_group_count 2" in str(e.value)
    with pytest.raises(xo.SpecError) as e:
        xo.convolution(X, W, padding=[(1, 1)])
    assert "[2, 2], got [1, 2]" in str(e.value)
