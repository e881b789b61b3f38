"""batch_norm_training / batch_norm_inference / batch_norm_grad: the spec's examples,
the spec-shaped NumPy references over a shape zoo, finite differences, PyTorch,
serial-vs-parallel bit identity and every constraint label."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
import xops.kernels.normalization as K
import xops.ops.normalization as N
from xops.ops.normalization import (
    batch_norm_grad_reference,
    batch_norm_inference_reference,
    batch_norm_training_reference,
)
from xops.tensor import _wrap
from conftest import assert_tensor, raises_spec

# ---------------------------------------------------------------------------------------
# The kernels' plan: rows of equal width per tile that partition the operand
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "outer,C,inner",
    [
        (64, 32, 1024),
        (1, 8, 5000),
        (3, 5, 2500),
        (7, 3, 1023),
        (2, 3, 70000),
        (1, 3000, 64),
        (5000, 20, 1),
        (2, 3, 4),
        (1, 1, 1),
        (3000, 1, 1),
        (3, 300, 7),
        (2, 2000, 1),
        (4, 5, 63),
        (0, 3, 4),
        (2, 0, 4),
        (2, 3, 0),
    ],
)
def test_plan_partitions_the_operand_by_feature(outer, C, inner):
    p = K.plan(outer, C, inner)
    feature = np.full(outer * C * inner, -1)
    x = np.arange(outer * C * inner).reshape(outer, C, inner)
    assert not (len(p.runs) and len(p.tiles))
    for t, (o0, o1, c0, c1, i0, i1) in enumerate(p.runs):
        assert o1 > o0 and c1 > c0 and i1 > i0
        assert tuple(p.parts[t]) == (c0, c1 - c0, (o1 - o0) * (i1 - i0))
        block = x[o0:o1, c0:c1, i0:i1]
        assert (feature[block] == -1).all()
        feature[block] = np.arange(c0, c1)[None, :, None]
    for t, (r0, r1, w, c0, fb, iw) in enumerate(p.tiles):
        assert r1 > r0 and w % (fb * iw) == 0
        assert tuple(p.parts[t]) == (c0, fb, (r1 - r0) * w // fb)
        cols = c0 + (np.arange(w) % (fb * iw)) // iw
        for r in range(r0, r1):
            assert (feature[p.starts[r] : p.starts[r] + w] == -1).all()
            feature[p.starts[r] : p.starts[r] + w] = cols
    want = np.broadcast_to(np.arange(C)[None, :, None], (outer, C, inner)).reshape(-1)
    np.testing.assert_array_equal(feature, want)
    assert len(p.starts) == (p.tiles[-1, 1] if len(p.tiles) else 0)


@pytest.mark.parametrize(
    "shape,dtype,fused",
    [
        ((2, 16, 8, 8), "f32", True),  # the main job's first batch norm
        ((32, 32, 4, 4), "f32", True),  # its second: runs of exactly FUSED_RUN
        ((5, 10, 37), "f64", True),
        ((4, 9, 15), "f32", False),  # runs shorter than FUSED_RUN
        ((4, 5, 63), "f32", False),  # fewer than FUSED_FEATURES features
        ((64, 8, 32, 32), "f32", False),  # features over 128 KiB
        ((2, 16, 8, 8), "bf16", False),  # narrow floats widen to float64 first
    ],
)
def test_which_operands_take_the_fused_kernels(shape, dtype, fused):
    """The shape rule the ZOO's fused cases rely on (no plan: the fused kernels)."""
    x = xo.tensor(np.ones(shape), dtype)
    assert (N._view(x, 1)[1] is None) == fused


@pytest.mark.parametrize(
    "shape,fused",
    [
        ((64, 8, 32, 32), True),  # 256 KiB features (the batchnorm_bwd benchmark's size)
        ((128, 8, 32, 32), True),  # 512 KiB: the largest
        ((129, 8, 32, 32), False),
    ],
)
def test_batch_norm_grad_fuses_larger_features(shape, fused, monkeypatch):
    """batch_norm_grad's fused kernel takes features up to _FUSED_GRAD_BYTES (f32 here;
    _FUSED_BYTES by default, 512 KiB set here), the training and inference kernels only
    up to _FUSED_BYTES."""
    monkeypatch.setattr(N, "_FUSED_GRAD_BYTES", 1 << 19)
    x = xo.tensor(np.ones(shape, np.float32))
    assert (N._view(x, 1, N._FUSED_GRAD_BYTES)[1] is None) == fused
    assert N._view(x, 1)[1] is not None


@pytest.mark.parametrize("dtype,shape", [("f32", (16, 8, 48, 64)), ("f64", (8, 8, 48, 64))])
def test_grad_of_features_fused_only_for_the_gradient(dtype, shape, monkeypatch):
    """196 KiB features with the fused gradient kernel taking them (second pass in
    reverse run order) against the float64 reference and against the tile kernels on
    the same operands."""
    monkeypatch.setattr(N, "_FUSED_GRAD_BYTES", 1 << 19)
    x, s, o, g = _data(shape, 1, dtype, seed=9)
    assert N._view(x, 1)[1] is not None and N._view(x, 1, N._FUSED_GRAD_BYTES)[1] is None
    _, mean, var = xo.batch_norm_training(x, s, o, 1e-3, 1)
    fused = xo.batch_norm_grad(x, s, mean, var, g, 1e-3, 1)
    wx, ws, wo = batch_norm_grad_reference(
        _f64(x), _f64(s), _f64(mean), _f64(var), _f64(g), _eps_in(dtype, 1e-3), 1
    )
    gscale = np.sqrt(x.size // shape[1]) * np.abs(_f64(g)).max() + 1
    _close(fused[1], ws, dtype, gscale, ulps=2)
    _close(fused[2], wo, dtype, gscale, ulps=2)
    xscale = np.abs(wx).max() + np.abs(_f64(s)).max() / np.sqrt(_f64(var).min() + 1e-3)
    _close(fused[0], wx, dtype, xscale, ulps=4)
    monkeypatch.setattr(N, "_FUSED_GRAD_BYTES", N._FUSED_BYTES)  # the run tiles
    tiles = xo.batch_norm_grad(x, s, mean, var, g, 1e-3, 1)
    for a, b in zip(fused, tiles):  # float64 sums in another order: last bits at most
        tol = 4 * _ULP[dtype] * np.abs(_f64(b)).max()
        np.testing.assert_allclose(_f64(a), _f64(b), rtol=0, atol=tol)


def test_grad_sums_of_short_runs_centre_in_float64():
    """Row tiles (runs shorter than FUSED_RUN) centre ``x - mean`` in float64, as the
    other paths: in f32, 1 - 2^-26 and -1 - 2^-26 round to 1 and -1 and grad_scale
    would be 0 instead of -2^-25 / sqrt(var + eps)."""
    x = xo.tensor(np.array([[1.0], [-1.0]], np.float32))
    one, m = xo.tensor(np.ones(1, np.float32)), xo.tensor(np.array([2.0**-26], np.float32))
    assert N._view(x, 1)[1] is not None  # the row tiles
    _, gs, go = xo.batch_norm_grad(x, one, m, one, xo.tensor(np.ones((2, 1), np.float32)), 0.0, 1)
    assert gs.numpy()[0] == np.float32(-(2.0**-25)) and go.numpy()[0] == 2.0


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_fused_short_variants_and_given_statistics_are_bit_identical(dtype):
    """The fused kernels' variants for runs shorter than STEP_RUN (four-chunk steps
    pruned) give the full kernels' bits, and batch_norm_inference on a fused operand
    (the training kernel, statistics given) gives normalize's (the tile path's) bits."""
    x, s, o, g = _data((3, 9, 37), 1, dtype, seed=5)  # runs of 37: one partial chunk each
    flat, C, inner = np.ascontiguousarray(x._value).reshape(-1), 9, 37
    s64, o64 = (np.asarray(t._value, np.float64) for t in (s, o))
    outs = []
    for body in (K._train_features, K._TRAIN_SHORT[0]):
        out, stats = np.empty_like(flat), np.empty((2, C), flat.dtype)
        body(np.int64(0), np.int64(C), flat, C, inner, s64, o64, 1e-3, False, out, stats)
        outs.append((out, stats))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    mean, var = (np.asarray(v, np.float64) for v in outs[0][1])
    gflat = np.ascontiguousarray(g._value).reshape(-1)
    grads = []
    for body in (K._grad_features, K._GRAD_SHORT[0]):
        out, sums = np.empty_like(flat), np.empty((2, C))
        body(np.int64(0), np.int64(C), flat, gflat, C, inner, mean, var, s64, 1e-3, out, sums)
        grads.append((out, sums))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    m, v = (xo.tensor(a, dtype) for a in outs[0][1])
    assert N._view(x, 1)[1] is None  # the fused kernels take it
    got = xo.batch_norm_inference(x, s, o, m, v, 1e-3, 1)
    want = np.empty_like(flat)
    a = s64 / np.sqrt(var + _eps_in(dtype, 1e-3))
    K.normalize(flat, C, inner, K.plan(3, C, inner), mean, a, o64, want)
    np.testing.assert_array_equal(np.asarray(got).reshape(-1).view(np.uint8), want.view(np.uint8))
    assert not np.array_equal(want, flat)  # (it did normalise)


# ---------------------------------------------------------------------------------------
# The spec's examples (seed 004), f64, exact
# ---------------------------------------------------------------------------------------

X_SPEC = [[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]]


def test_spec_example_training():
    one = xo.tensor([1.0, 1.0], "f64")
    out, mean, var = xo.batch_norm_training(
        xo.tensor(X_SPEC, "f64"), one, one, epsilon=0.0, feature_index=2
    )
    assert_tensor(out, [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]], "f64")
    assert_tensor(mean, [2.0, 3.0], "f64")
    assert_tensor(var, [1.0, 1.0], "f64")


def test_spec_example_inference():
    one = xo.tensor([1.0, 1.0], "f64")
    out = xo.batch_norm_inference(
        xo.tensor(X_SPEC, "f64"),
        one,
        one,
        xo.tensor([2.0, 3.0], "f64"),
        one,
        epsilon=0.0,
        feature_index=2,
    )
    assert_tensor(out, [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]], "f64")


def test_spec_example_grad():
    one = xo.tensor([1.0, 1.0], "f64")
    g = xo.tensor(np.full((2, 2, 2), 0.1))
    gx, gs, go = xo.batch_norm_grad(
        xo.tensor(X_SPEC, "f64"),
        one,
        xo.tensor([2.0, 3.0], "f64"),
        one,
        g,
        epsilon=0.0,
        feature_index=2,
    )
    assert_tensor(gx, np.zeros((2, 2, 2)), "f64", signed_zeros=False)
    assert_tensor(gs, [0.0, 0.0], "f64", signed_zeros=False)
    assert_tensor(go, [0.4, 0.4], "f64", exact=False, rtol=1e-15)


def test_spec_references_on_the_examples():
    x = np.array(X_SPEC)
    one = np.ones(2)
    out, mean, var = batch_norm_training_reference(x, one, one, 0.0, 2)
    np.testing.assert_array_equal(out, [[[0, 0], [2, 2]], [[2, 2], [0, 0]]])
    np.testing.assert_array_equal(mean, [2, 3])
    np.testing.assert_array_equal(var, [1, 1])
    gx, gs, go = batch_norm_grad_reference(
        x, one, np.array([2.0, 3.0]), one, np.full((2, 2, 2), 0.1), 0.0, 2
    )
    np.testing.assert_allclose(gx, 0, atol=1e-16)
    np.testing.assert_allclose(go, [0.4, 0.4])


# ---------------------------------------------------------------------------------------
# Against the references over a zoo of shapes, feature dims and element types
# ---------------------------------------------------------------------------------------

ZOO = [  # (shape, feature_index)
    ((5, 3), 1),  # rank 2, features last (BatchNorm1d)
    ((5, 3), 0),  # features first
    ((2, 3, 4), 1),
    ((2, 3, 4), 2),
    ((2, 3, 4), 0),
    ((3, 1, 4, 5), 1),  # a single channel
    ((2, 3, 4, 5), 3),  # rank 4, features last (NHWC)
    ((2, 3, 4, 5, 2), 2),  # rank 5, middle
    ((7, 1), 1),  # one feature, 7 samples
    ((1, 7), 0),  # 7 features, one sample each: variance 0
    ((4,), 0),  # rank 1: every feature is its own batch
    ((6, 8, 40, 40), 1),  # inner 1600 > TILE_COLS: two column chunks per feature
    ((5000, 20), 1),  # 100000 elements, features last: several row blocks
    ((3, 5, 2500), 1),  # three column chunks, odd row count
    ((4, 3000), 0),  # one long run per feature (outer = 1)
    ((3, 300, 7), 1),  # short runs, many features: 146 features per row
    ((3000, 1), 1),  # one feature, inner = 1: rows of 1024 slices + leftover
    ((2, 3, 70000), 1),  # runs longer than a tile: pieces of one run
    ((4, 5, 63), 1),  # just below the long-run length
    ((2, 16, 8, 8), 1),  # fused per-feature kernels: runs of exactly LONG_RUN
    ((3, 9, 300), 1),  # fused: one four-chunk step and a ragged tail per run
    ((3, 8, 4, 4), 1),  # fused: runs of exactly FUSED_RUN (no four-chunk step)
    ((5, 10, 37), 1),  # fused: short runs, one partial chunk each
    ((4, 9, 15), 1),  # runs one shorter than FUSED_RUN: row tiles
]
DTYPES = ["f32", "f64", "bf16", "f16"]
EPS = {"f32": 1e-3, "f64": 1e-5, "bf16": 1e-2, "f16": 1e-3}
_ULP = {"f32": 2.0**-23, "f64": 2.0**-52, "bf16": 2.0**-7, "f16": 2.0**-10}


def _data(shape, fi, dtype, seed=0):
    """Operand (mean 3, std 2), scale, offset and a cotangent, rounded to ``dtype``."""
    rng = np.random.default_rng(seed)
    C = shape[fi]
    dt = xo.as_dtype(dtype)
    t = lambda a: xo.tensor(a, dt)  # noqa: E731
    return (
        t(3.0 + 2.0 * rng.standard_normal(shape)),
        t(rng.uniform(0.5, 2.0, C)),
        t(rng.standard_normal(C)),
        t(rng.standard_normal(shape)),
    )


def _f64(t):
    return np.asarray(t).astype(np.float64)


def _eps_in(dtype, eps):
    """The spec's constant(epsilon, element_type): the f32 attribute rounded to dtype."""
    return float(np.float32(eps).astype(xo.as_dtype(dtype).np).astype(np.float64))


def _close(got, want, dtype, scale, ulps=4):
    """got (Tensor) within ``ulps`` units of the type's epsilon of ``want`` (float64),
    relative to the magnitude ``scale`` of the quantities the result came from."""
    assert got.dtype == xo.as_dtype(dtype)
    if dtype == "f64":  # the float64 reference carries its own rounding errors (sums)
        ulps = max(ulps, 1 << 14)
    tol = ulps * _ULP[dtype] * (np.abs(want) + scale)
    err = np.abs(_f64(got) - want)
    assert got.shape == np.shape(want)
    worst = np.unravel_index(np.argmax(err - tol), err.shape) if err.ndim else ()
    assert np.all(err <= tol), f"error {err[worst]} > tolerance {tol[worst]} at {worst}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,fi", ZOO, ids=[f"{s}-fi{f}" for s, f in ZOO])
def test_training_against_reference(shape, fi, dtype):
    x, s, o, _ = _data(shape, fi, dtype)
    eps = EPS[dtype]
    out, mean, var = xo.batch_norm_training(x, s, o, eps, fi)
    assert out.shape == shape and mean.shape == var.shape == (shape[fi],)
    # the spec's composition in float64 on the same values: statistics rounded once...
    _, m64, v64 = batch_norm_training_reference(_f64(x), _f64(s), _f64(o), eps, fi)
    _close(mean, m64, dtype, np.abs(m64) + np.sqrt(v64), ulps=1)
    _close(var, v64, dtype, v64, ulps=2)
    # ...and the output is batch_norm_inference with the returned (rounded) statistics
    want = batch_norm_inference_reference(
        _f64(x), _f64(s), _f64(o), _f64(mean), _f64(var), _eps_in(dtype, eps), fi
    )
    _close(out, want, dtype, np.abs(want).max() + 1, ulps=2)
    assert_tensor(out, xo.batch_norm_inference(x, s, o, mean, var, eps, fi).numpy())
    if dtype in ("f32", "f64"):  # the composition evaluated in the element type itself
        r_out, r_mean, r_var = batch_norm_training_reference(
            x.numpy(), s.numpy(), o.numpy(), eps, fi
        )
        _close(out, r_out, dtype, np.abs(r_out).max() + 1, ulps=64)
        _close(mean, r_mean, dtype, np.abs(r_mean) + 1, ulps=64)
        _close(var, r_var, dtype, r_var + 1e-30, ulps=64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,fi", ZOO, ids=[f"{s}-fi{f}" for s, f in ZOO])
def test_inference_against_reference(shape, fi, dtype):
    x, s, o, _ = _data(shape, fi, dtype)
    rng = np.random.default_rng(1)
    C = shape[fi]
    m = xo.tensor(3.0 + 0.1 * rng.standard_normal(C), dtype)
    v = xo.tensor(rng.uniform(1.0, 5.0, C), dtype)
    out = xo.batch_norm_inference(x, s, o, m, v, EPS[dtype], fi)
    want = batch_norm_inference_reference(
        _f64(x), _f64(s), _f64(o), _f64(m), _f64(v), _eps_in(dtype, EPS[dtype]), fi
    )
    _close(out, want, dtype, np.abs(want).max() + 1, ulps=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,fi", ZOO, ids=[f"{s}-fi{f}" for s, f in ZOO])
def test_grad_against_reference(shape, fi, dtype):
    x, s, o, g = _data(shape, fi, dtype)
    eps = EPS[dtype]
    _, mean, var = xo.batch_norm_training(x, s, o, eps, fi)
    gx, gs, go = xo.batch_norm_grad(x, s, mean, var, g, eps, fi)
    wx, ws, wo = batch_norm_grad_reference(
        _f64(x), _f64(s), _f64(mean), _f64(var), _f64(g), _eps_in(dtype, eps), fi
    )
    n = x.size // shape[fi]
    # sums of n terms of size ~|g|: the float64 reference itself carries ~n * 2^-52
    gscale = np.sqrt(n) * np.abs(_f64(g)).max() + 1
    _close(gs, ws, dtype, gscale, ulps=2)
    _close(go, wo, dtype, gscale, ulps=2)
    _close(
        gx,
        wx,
        dtype,
        np.abs(wx).max() + np.abs(_f64(s)).max() / np.sqrt(_f64(var).min() + eps),
        ulps=4,
    )
    if dtype in ("f32", "f64"):
        rx, rs, ro = batch_norm_grad_reference(
            x.numpy(), s.numpy(), mean.numpy(), var.numpy(), g.numpy(), eps, fi
        )
        _close(gx, rx, dtype, np.abs(rx).max() + 1, ulps=256)
        _close(gs, rs, dtype, gscale, ulps=64)
        _close(go, ro, dtype, gscale, ulps=64)


def test_epsilon_is_an_f32_attribute_even_for_f64():
    # 1 / sqrt(0 + float32(0.1)), not 1 / sqrt(0.1)
    one, zero = xo.tensor([1.0], "f64"), xo.tensor([0.0], "f64")
    out = xo.batch_norm_inference(xo.tensor([[1.0]], "f64"), one, zero, zero, zero, 0.1, 1)
    assert out.item() == 1.0 / np.sqrt(np.float64(np.float32(0.1)))
    assert out.item() != 1.0 / np.sqrt(0.1)


def test_epsilon_rounds_to_the_element_type():
    # bf16(1e-2) = 0.010009765625: 1 / sqrt(that) = 9.9951..., rounded to bf16 = 10.0
    one, zero = xo.tensor([1.0], "bf16"), xo.tensor([0.0], "bf16")
    out = xo.batch_norm_inference(xo.tensor([[1.0]], "bf16"), one, zero, zero, zero, 1e-2, 1)
    want = np.float64(1) / np.sqrt(np.float64(np.float32(1e-2).astype(xo.bfloat16.np)))
    assert out.item() == float(np.float32(want).astype(xo.bfloat16.np))


def test_variance_is_numerically_sound_far_from_zero():
    # mean 1e4, std 1e-2 in f32: E[x^2] - E[x]^2 would lose every digit
    rng = np.random.default_rng(3)
    x = (1e4 + 1e-2 * rng.standard_normal((4000, 2))).astype(np.float32)
    _, mean, var = xo.batch_norm_training(
        x, np.ones(2, np.float32), np.zeros(2, np.float32), 0.0, 1
    )
    want = x.astype(np.float64).var(axis=0)
    np.testing.assert_allclose(np.asarray(var), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mean), x.astype(np.float64).mean(axis=0), rtol=1e-7)


def test_constant_feature_has_zero_variance_and_outputs_offset():
    x = np.full((3, 4, 5), 7.25, np.float32)
    s, o = np.full(4, 3.0, np.float32), np.arange(4, dtype=np.float32)
    out, mean, var = xo.batch_norm_training(x, s, o, 1e-5, 1)
    assert_tensor(mean, np.full(4, 7.25, np.float32))
    assert_tensor(var, np.zeros(4, np.float32))
    assert_tensor(out, np.broadcast_to(o[None, :, None], x.shape))


@pytest.mark.parametrize("shape,fi", [((0, 3), 1), ((2, 3, 0), 1), ((0,), 0), ((2, 0, 3), 1)])
def test_empty_batch(shape, fi):
    x = np.zeros(shape, np.float32)
    C = shape[fi]
    s, o = np.ones(C, np.float32), np.zeros(C, np.float32)
    out, mean, var = xo.batch_norm_training(x, s, o, 1e-5, fi)
    assert out.shape == shape
    assert np.isnan(np.asarray(mean)).all() and np.isnan(np.asarray(var)).all()
    gx, gs, go = xo.batch_norm_grad(
        x, s, np.zeros(C, np.float32), np.ones(C, np.float32), x, 1e-5, fi
    )
    assert gx.shape == shape
    assert_tensor(gs, np.zeros(C, np.float32))
    assert_tensor(go, np.zeros(C, np.float32))
    out = xo.batch_norm_inference(x, s, o, o, s, 1e-5, fi)
    assert out.shape == shape


def test_narrow_float8_runs_and_rounds_once():
    x, s, o, g = _data((4, 3, 5), 1, "f8E5M2")
    out, mean, var = xo.batch_norm_training(x, s, o, 1e-2, 1)
    assert out.dtype == mean.dtype == var.dtype == xo.float8_e5m2
    gx, gs, go = xo.batch_norm_grad(x, s, mean, var, g, 1e-2, 1)
    assert gx.dtype == xo.float8_e5m2 and gx.shape == (4, 3, 5)


# ---------------------------------------------------------------------------------------
# batch_norm_grad is the derivative of batch_norm_training (through its own batch
# statistics): central differences in float64 along random directions
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,fi", [((6, 3), 1), ((2, 3, 4), 0), ((3, 2, 4, 5), 1), ((2, 3, 5), 2), ((2, 8, 70), 1)]
)
def test_grad_is_the_derivative_of_training(shape, fi):
    x, s, o, w = (np.asarray(t, np.float64) for t in _data(shape, fi, "f64", seed=5))
    eps = 1e-3

    def loss(x_, s_, o_):
        return float(np.sum(w * np.asarray(xo.batch_norm_training(x_, s_, o_, eps, fi)[0])))

    _, mean, var = xo.batch_norm_training(x, s, o, eps, fi)
    gx, gs, go = (np.asarray(t) for t in xo.batch_norm_grad(x, s, mean, var, w, eps, fi))
    rng = np.random.default_rng(7)
    h = 1e-6
    for _ in range(3):
        vx, vs, vo = (
            rng.standard_normal(x.shape),
            rng.standard_normal(s.shape),
            rng.standard_normal(o.shape),
        )
        fd = (
            loss(x + h * vx, s + h * vs, o + h * vo) - loss(x - h * vx, s - h * vs, o - h * vo)
        ) / (2 * h)
        ad = np.sum(gx * vx) + np.sum(gs * vs) + np.sum(go * vo)
        np.testing.assert_allclose(ad, fd, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------
# PyTorch cross-check (NCHW, f32)
# ---------------------------------------------------------------------------------------


def test_against_torch():
    torch = pytest.importorskip("torch")
    x, s, o, g = (t.numpy() for t in _data((8, 4, 5, 6), 1, "f32", seed=11))
    eps = 1e-5
    out, mean, var = xo.batch_norm_training(x, s, o, eps, 1)
    tx, ts, to = (torch.from_numpy(a).requires_grad_() for a in (x, s, o))
    ty = torch.nn.functional.batch_norm(tx, None, None, ts, to, training=True, eps=eps)
    np.testing.assert_allclose(np.asarray(out), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(mean), x.mean(axis=(0, 2, 3), dtype=np.float64), rtol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(var), torch.from_numpy(x).var(dim=(0, 2, 3), unbiased=False).numpy(), rtol=1e-5
    )
    ty.backward(torch.from_numpy(g))
    gx, gs, go = xo.batch_norm_grad(x, s, mean, var, g, eps, 1)
    np.testing.assert_allclose(np.asarray(gx), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gs), ts.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(go), to.grad.numpy(), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------
# Parallel kernels: bit-identical to the serial ones, for any thread count
# ---------------------------------------------------------------------------------------

PAR_CASES = [
    ((6, 8, 40, 40), 1, "f32"),  # the fused per-feature kernels
    ((40, 12, 4, 4), 1, "f64"),  # fused, short runs
    ((3, 9, 300), 1, "f64"),
    ((5000, 20), 1, "f64"),
    ((3, 5, 2500), 1, "f32"),
    ((2, 3, 4, 5), 3, "bf16"),
    ((7, 9), 0, "f64"),
]


def _all_three(x, s, o, g, fi):
    out, mean, var = xo.batch_norm_training(x, s, o, 1e-3, fi)
    inf = xo.batch_norm_inference(x, s, o, mean, var, 1e-3, fi)
    return [out, mean, var, inf, *xo.batch_norm_grad(x, s, mean, var, g, 1e-3, fi)]


@pytest.mark.parametrize("shape,fi,dtype", PAR_CASES, ids=[str(c) for c in PAR_CASES])
def test_parallel_is_bit_identical_to_serial(shape, fi, dtype, monkeypatch):
    import numba

    args = _data(shape, fi, dtype, seed=2)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 << 62)
    serial = _all_three(*args, fi)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            for got, want in zip(_all_three(*args, fi), serial):
                assert_tensor(got, want.numpy())
    finally:
        numba.set_num_threads(before)


_THREADS_CHILD = """
import hashlib, numpy as np, xops as xo
h = hashlib.sha256()
rng = np.random.default_rng(4)
cases = [((16, 32, 32, 32), 1), ((2, 8, 20000), 1), ((16, 3, 40, 40), 1), ((400, 12, 30), 1)]
cases.append(((5000, 40), 1))
for shape, fi in cases:
    x = xo.tensor((3 + 2 * rng.standard_normal(shape)).astype(np.float32))
    g = xo.tensor(rng.standard_normal(shape).astype(np.float32))
    s = xo.tensor(rng.uniform(0.5, 2, shape[fi]).astype(np.float32))
    o = xo.tensor(rng.standard_normal(shape[fi]).astype(np.float32))
    out, mean, var = xo.batch_norm_training(x, s, o, 1e-5, fi)
    for t in (out, mean, var, *xo.batch_norm_grad(x, s, mean, var, g, 1e-5, fi)):
        h.update(np.asarray(t).tobytes())
print(h.hexdigest())
"""


def _child_digest(threads):
    """The child script's digest in a fresh process with NUMBA_NUM_THREADS=threads."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-c", _THREADS_CHILD]
    env = {**os.environ, "NUMBA_NUM_THREADS": threads}
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_results_do_not_depend_on_the_thread_count():
    """Fresh processes with NUMBA_NUM_THREADS=1 and 2 (the kernels' parallel variants:
    the operands are above the parallel threshold) give the same bytes: fused
    per-feature kernels, run tiles (features too large to fuse, few features) and row
    tiles (short runs)."""
    assert _child_digest("1") == _child_digest("2")


# ---------------------------------------------------------------------------------------
# One negative test per constraint label
# ---------------------------------------------------------------------------------------

F = np.ones((2, 3, 4), np.float32)
V3 = np.ones(3, np.float32)


@pytest.mark.parametrize(
    "label,args",
    [
        ("I1", (np.ones((2, 3), np.int32), V3, V3, 1e-5, 1)),
        ("I2", (F, np.ones((3, 1), np.float32), V3, 1e-5, 1)),
        ("I3", (F, V3, np.ones(3, np.int32), 1e-5, 1)),
        ("I4", (F, V3, V3, "1e-5", 1)),
        ("I4", (F, V3, V3, 1j, 1)),
        ("I5", (F, V3, V3, 1e-5, 1.0)),
        ("C1", (F, V3, V3, 1e-5, 3)),
        ("C1", (F, V3, V3, 1e-5, -1)),
        ("C2", (F, np.ones(3), V3, 1e-5, 1)),
        ("C3", (F, np.ones(4, np.float32), V3, 1e-5, 1)),
        ("C4", (F, V3, np.ones(2, np.float32), 1e-5, 1)),
    ],
)
def test_training_constraints(label, args):
    with raises_spec("batch_norm_training", label):
        xo.batch_norm_training(*args)


def test_training_output_constraints_hold():
    # C5-C7 constrain the results: sizes of batch_mean/batch_var, output type
    out, mean, var = xo.batch_norm_training(F, V3, V3, 1e-5, 1)
    assert mean.shape == var.shape == (3,) and out.shape == F.shape
    assert out.dtype == mean.dtype == var.dtype == xo.float32


@pytest.mark.parametrize(
    "label,args",
    [
        ("I1", (np.ones((2, 3), np.complex64), V3, V3, V3, V3, 1e-5, 1)),
        ("I2", (F, np.float32(1), V3, V3, V3, 1e-5, 1)),
        ("I3", (F, V3, np.ones((1, 3), np.float32), V3, V3, 1e-5, 1)),
        ("I4", (F, V3, V3, np.ones(3, np.int8), V3, 1e-5, 1)),
        ("I5", (F, V3, V3, V3, np.ones((3, 3), np.float32), 1e-5, 1)),
        ("I6", (F, V3, V3, V3, V3, None, 1)),
        ("I7", (F, V3, V3, V3, V3, 1e-5, "1")),
        ("C1", (F, V3, V3, V3, V3, 1e-5, 5)),
        ("C2", (F, V3, V3, V3, np.ones(3), 1e-5, 1)),
        ("C3", (F, np.ones(2, np.float32), V3, V3, V3, 1e-5, 1)),
        ("C4", (F, V3, np.ones(4, np.float32), V3, V3, 1e-5, 1)),
        ("C5", (F, V3, V3, np.ones(1, np.float32), V3, 1e-5, 1)),
        ("C6", (F, V3, V3, V3, np.ones(6, np.float32), 1e-5, 1)),
    ],
)
def test_inference_constraints(label, args):
    with raises_spec("batch_norm_inference", label):
        xo.batch_norm_inference(*args)


@pytest.mark.parametrize(
    "label,args",
    [
        ("I1", (np.ones((2, 3, 4), np.int64), V3, V3, V3, F, 1e-5, 1)),
        ("I2", (F, np.ones((3, 2), np.float32), V3, V3, F, 1e-5, 1)),
        ("I3", (F, V3, np.ones(3, np.int32), V3, F, 1e-5, 1)),
        ("I4", (F, V3, V3, np.ones((3, 1), np.float32), F, 1e-5, 1)),
        ("I5", (F, V3, V3, V3, np.ones((2, 3, 4), np.int32), 1e-5, 1)),
        ("I6", (F, V3, V3, V3, F, True, 1)),
        ("I7", (F, V3, V3, V3, F, 1e-5, None)),
        ("C1", (F, V3, V3, V3, F, 1e-5, 3)),
        ("C2", (F, V3, V3, V3, F.astype(np.float64), 1e-5, 1)),
        ("C3", (F, V3, V3, V3, np.ones((2, 3, 5), np.float32), 1e-5, 1)),
        ("C4", (F, V3, np.ones(2, np.float32), V3, F, 1e-5, 1)),
        (
            "C5",
            (F, np.ones(2, np.float32), np.ones(2, np.float32), np.ones(2, np.float32), F, 1e-5, 1),
        ),
    ],
)
def test_grad_constraints(label, args):
    with raises_spec("batch_norm_grad", label):
        xo.batch_norm_grad(*args)


def test_checked_signatures_reuse_only_what_passed():
    """A signature that passed the checks skips them next time (N._CHECKED); bad input
    still raises the same errors: a failing call is never kept, and any change of
    element type, shape, epsilon (its sign too) or feature_index is another signature."""
    x = xo.tensor(F)
    v = xo.tensor(V3)
    N._CHECKED.clear()
    xo.batch_norm_grad(x, v, v, v, x, 1e-5, 1)
    xo.batch_norm_grad(x, v, v, v, x, 1e-5, 1)
    assert len(N._CHECKED) == 1
    for _ in range(2):  # (not kept after the first failure)
        with raises_spec("batch_norm_grad", "C2"):
            xo.batch_norm_grad(x, v, v, v, xo.tensor(F.astype(np.float64)), 1e-5, 1)
        with raises_spec("batch_norm_grad", "C5"):
            xo.batch_norm_grad(x, v, v, v, x, 1e-5, 2)
        with raises_spec("batch_norm_grad", "C4"):
            xo.batch_norm_grad(x, v, xo.tensor(np.ones(4, np.float32)), v, x, 1e-5, 1)
        with raises_spec("batch_norm_training", "C3"):
            xo.batch_norm_training(xo.tensor(np.ones((2, 4, 4), np.float32)), v, v, 1e-5, 1)
    xo.batch_norm_training(x, v, v, 1e-5, 1)
    with raises_spec("batch_norm_training", "C1"):
        xo.batch_norm_training(x, v, v, 1e-5, 3)
    assert len(N._CHECKED) == 2
    # var + eps = -0.0 + 0.0 = +0 but -0.0 + -0.0 = -0: 1/sqrt gives +inf, then -inf
    one, zero, neg = (xo.tensor(np.array([a], np.float32)) for a in (1.0, 0.0, -0.0))
    x1 = xo.tensor(np.ones((1, 1), np.float32))
    for eps, want in ((0.0, np.inf), (-0.0, -np.inf), (0.0, np.inf)):
        assert xo.batch_norm_inference(x1, one, zero, zero, neg, eps, 1).item() == want
    # the tape gets the parsed epsilon (f32(0.1), not 0.1) from a reused signature too
    s64, v64 = np.array([2.0, 3.0]), np.array([0.01, 0.02])
    args = [xo.tensor(a) for a in (s64, np.zeros(2), np.zeros(2), v64)]
    want = np.broadcast_to(s64 / np.sqrt(v64 + np.float64(np.float32(0.1))), (3, 2))
    f = xo.grad(lambda t: xo.batch_norm_inference(t, *args, 0.1, 1).sum())
    for _ in range(2):  # the second call reuses the signature
        np.testing.assert_allclose(np.asarray(f(xo.tensor(np.ones((3, 2))))), want, rtol=1e-15)
    assert not np.allclose(want, s64 / np.sqrt(v64 + 0.1), rtol=1e-10, atol=0)


def test_constraint_messages_give_the_shapes():
    with pytest.raises(
        xo.SpecError,
        match=r"size\(scale\)=4 must equal dim\(operand, "
        r"feature_index=1\)=3 for operand f32\[2,3,4\]",
    ):
        xo.batch_norm_training(F, np.ones(4, np.float32), V3, 1e-5, 1)


def test_fused_kernels_get_read_only_operands(monkeypatch):
    """The fused per-feature kernels see every operand read-only, whether it arrived
    writable (a layer's fresh output) or not: Numba compiles a signature per flag, and
    the main job compiled both kernels twice (0.9 s of its cold start)."""
    seen = []
    launch = K._launch
    monkeypatch.setattr(K, "_launch", lambda *a: seen.append(a[3:]) or launch(*a))
    rng = np.random.default_rng(3)
    v = rng.standard_normal((8, 16, 6, 6)).astype(np.float32)
    for writeable in (True, False):
        x = _wrap(v.copy(), xo.tensor(v)._dtype)
        x._value.flags.writeable = writeable  # (as some ops' results come)
        one, zero = xo.tensor(np.ones(16, np.float32)), xo.tensor(np.zeros(16, np.float32))
        out, mean, var = xo.batch_norm_training(x, one, zero, 1e-5, 1)
        xo.batch_norm_grad(x, one, mean, var, out, 1e-5, 1)
    fused = [args for args in seen if args[0].ndim == 1]  # (the flat operand)
    assert len(fused) == 4
    for args in fused:
        assert all(not b.flags.writeable for b in args[:2] if isinstance(b, np.ndarray))
    want = (v - v.mean((0, 2, 3), keepdims=True)) / np.sqrt(v.var((0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
