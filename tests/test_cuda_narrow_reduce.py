"""bf16 and f16 in reduce, reduce_window, select_and_scatter, the batch norm ops and
convolution on the device (xops/kernels/cuda: reduction, windows, normalization,
convolution), each result compared with the CPU op's.

The device computes these types where the CPU does and rounds at the CPU's rounding
points: reduce, the window ops and convolution in float32 (the init value too), each
result rounded once; the batch norm ops in float64, statistics rounded to the narrow type
before batch_norm_training normalises with them. What is compared, and how:

* bit for bit (NaN: at the same positions): reduce with maximum / minimum, every reduce
  whose float32 partial sums or products are exact (small integers, powers of two),
  reduce_window and select_and_scatter (the CPU kernels' fold order, so every body), and
  convolutions of small integers (exact sums);
* within one unit in the last place of the narrow type (the float32 rounding order of a
  sum differs from the CPU's before the one rounding): reduce add / multiply and
  convolution of random values; the batch norm ops (float64 sums in another order)
  within one ulp of the narrow type relative to each result's largest magnitude.

Tiny shapes: the simulator runs a Python thread per CUDA thread.
"""

import ml_dtypes
import numpy as np
import pytest
from cuda_support import cu, needs_cuda, same

import xops as xo

pytestmark = needs_cuda

NARROW = ("bf16", "f16")
_EPS = {"bf16": 2.0**-8, "f16": 2.0**-11}  # half an ulp at 1 (unit roundoff)
_rng = np.random.default_rng(23)
GE = lambda a, b: xo.compare(a, b, "GE")  # noqa: E731  (select bodies as users write them)


def _narrow(a, dt):
    """A CPU tensor of type ``dt`` holding ``a`` (float values, rounded once)."""
    return xo.convert(xo.tensor(np.asarray(a, np.float32)), dt)


def _exact(dev, ref):
    """Same type, shape and bits; NaN wherever the CPU has NaN (any payload)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy(), ref.numpy()
    nan = np.isnan(b.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(a.astype(np.float32)), nan)
    np.testing.assert_array_equal(a.view(np.uint16)[~nan], b.view(np.uint16)[~nan])


def _ulps(dev, ref, ulps=1.0, relative_to_max=False):
    """Same type and shape; |dev - ref| within ``ulps`` units in the last place of the
    narrow type at ref (or at ref's largest magnitude)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy().astype(np.float64), ref.numpy().astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(b)
    scale = np.abs(b[ok]).max(initial=0.0) if relative_to_max else np.abs(b[ok])
    tol = ulps * 2 * _EPS[ref.dtype.name] * scale
    np.testing.assert_array_less(np.abs(a[ok] - b[ok]), tol + 1e-30)


def _ints(shape, lo=-4, hi=5):
    return _rng.integers(lo, hi, shape).astype(np.float32)


# -- reduce -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", NARROW)
def test_reduce_bodies_exact_and_within_one_ulp(dt):
    # (few, small launches: the simulator's block tree with barriers is slow)
    x = _rng.standard_normal((2, 3, 4)).astype(np.float32) * 3
    x[0, 0, :2] = [0.0, -0.0]
    h = _narrow(x, dt)
    d = h.to("cuda")
    for init, dims in ((-1.5, [0, 2]), (2.0, [0, 1, 2])):
        i_h = xo.tensor(init, dt)
        for body in (xo.maximum, xo.minimum):  # exact: the order does not matter
            _exact(xo.reduce(d, i_h.to("cuda"), dims, body), xo.reduce(h, i_h, dims, body))
        for body in (xo.add, xo.multiply):
            _ulps(xo.reduce(d, i_h.to("cuda"), dims, body), xo.reduce(h, i_h, dims, body))
    # exact float32 partial results (small integers, powers of two): bit for bit
    k = _narrow(_ints((2, 6)), dt)
    p = _narrow(2.0 ** _rng.integers(-3, 4, (2, 6)) * _rng.choice([-1, 1], (2, 6)), dt)
    for t, body, init, dims in (
        (k, xo.add, 3.0, [1]),
        (p, xo.multiply, -0.5, [1]),
        (k, xo.add, -0.0, [0]),
    ):
        i_h = xo.tensor(init, dt)
        _exact(xo.reduce(t.to("cuda"), i_h.to("cuda"), dims, body), xo.reduce(t, i_h, dims, body))


def test_reduce_rounds_once_from_float32():
    """300 ones plus 1: a bf16 accumulator would stick at 256; the float32 one gives 301,
    rounded once to bf16 (300)."""
    h = _narrow(np.ones(300), "bf16")
    got = xo.reduce(h.to("cuda"), xo.tensor(1.0, "bf16").to("cuda"), [0], xo.add)
    _exact(got, xo.reduce(h, xo.tensor(1.0, "bf16"), [0], xo.add))
    assert got.numpy().astype(np.float32) == np.float32(ml_dtypes.bfloat16(301.0))


def test_reduce_special_values_weak_init_and_empty():
    x = np.array([[np.inf, 1.0, -2.0], [np.nan, 0.5, 3.0], [-np.inf, np.inf, 1.0]], np.float32)
    for dt in NARROW:
        h = _narrow(x, dt)
        d = h.to("cuda")
        for body, init in ((xo.add, 0.0), (xo.maximum, -np.inf), (xo.minimum, np.inf)):
            i_h = xo.tensor(init, dt)
            _exact(xo.reduce(d, i_h.to("cuda"), [1], body), xo.reduce(h, i_h, [1], body))
        e = _narrow(np.zeros((0, 3)), dt)
        i_h = xo.tensor(1.5, dt)
        _exact(xo.reduce(e.to("cuda"), i_h.to("cuda"), [0], xo.add), xo.reduce(e, i_h, [0], xo.add))
    h = _narrow(_ints((2, 5)), "bf16")  # the sum method's weak Python init value
    _exact(h.to("cuda").sum(axis=1), h.sum(axis=1))


def test_reduce_multiply_body_of_the_other_types():
    """The multiply body (added with the narrow types): integers wrap (bit-exact, the
    order does not matter), i1 is and, floats within the rounding order."""
    i8 = _rng.integers(-9, 10, (2, 7)).astype(np.int8)  # products far past 127: wrapped
    u32 = _rng.integers(1, 2**31, (2, 5)).astype(np.uint32)
    for a, init in ((i8, 3), (u32, 7)):
        dt = a.dtype
        same(
            xo.reduce(cu(a), cu(init, dt), [1], xo.multiply),
            xo.reduce(xo.tensor(a), xo.tensor(init, dt), [1], xo.multiply),
        )
    bl = np.array([[True, True, False], [True, True, True]])
    same(
        xo.reduce(cu(bl), cu(True), [1], xo.multiply),
        xo.reduce(xo.tensor(bl), xo.tensor(True), [1], xo.multiply),
    )
    f = _rng.uniform(0.5, 2.0, (3, 6))
    same(
        xo.reduce(cu(f), cu(-1.5, "f64"), [1], xo.multiply),
        xo.reduce(xo.tensor(f), xo.tensor(-1.5, "f64"), [1], xo.multiply),
        rtol=1e-14,
    )


def test_reduce_narrow_errors():
    d = _narrow(np.ones((2, 3)), "bf16").to("cuda")
    with pytest.raises(xo.SpecError, match=r"reduce \(C5\)"):
        xo.reduce(d, xo.tensor(0.0, "bf16").to("cuda"), [1, 1], xo.add)
    with pytest.raises(xo.SpecError, match=r"^and \(I1\).*bf16"):  # (the body's op, as the CPU)
        xo.reduce(d, xo.tensor(0.0, "bf16").to("cuda"), [1], xo.and_)
    i4 = xo.tensor(np.arange(6).reshape(2, 3) - 2, "i4")  # (the generic tree: i4's adds)
    got = xo.reduce(i4.to("cuda"), xo.tensor(5, "i4").to("cuda"), [1], xo.add)
    want = xo.reduce(i4, xo.tensor(5, "i4"), [1], xo.add)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- reduce_window and select_and_scatter ----------------------------------------------------


@pytest.mark.parametrize("dt", NARROW)
def test_reduce_window_max_pool_and_sums_bit_for_bit(dt):
    x = _rng.standard_normal((2, 2, 5, 6)).astype(np.float32) * 4
    x[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    h = _narrow(x, dt)
    d = h.to("cuda")
    cases = [
        (xo.maximum, -np.inf, dict(window_strides=[1, 1, 2, 2])),  # max pooling 2x2
        (xo.add, 0.0, dict(window_strides=[1, 1, 1, 2], padding=[[0, 0]] * 2 + [[1, 1]] * 2)),
        (xo.minimum, np.inf, dict(base_dilations=[1, 1, 2, 1], window_dilations=[1, 1, 1, 2])),
        (xo.multiply, 1.0, dict(window_strides=[1, 1, 2, 1])),
        (xo.add, 0.75, dict(padding=[[0, 0], [0, 0], [2, -1], [0, 1]])),
    ]
    for body, init, attrs in cases:
        i_h = xo.tensor(init, dt)
        got = xo.reduce_window(d, i_h.to("cuda"), [1, 1, 2, 2], body=body, **attrs)
        _exact(got, xo.reduce_window(h, i_h, [1, 1, 2, 2], body=body, **attrs))
    # a long sum: float32 accumulation, rounded once (a bf16 accumulator would differ)
    ones = _narrow(np.ones((1, 300)), dt)
    i_h = xo.tensor(0.0, dt)
    got = xo.reduce_window(ones.to("cuda"), i_h.to("cuda"), [1, 300], body=xo.add)
    _exact(got, xo.reduce_window(ones, i_h, [1, 300], body=xo.add))


@pytest.mark.parametrize("dt", NARROW)
def test_select_and_scatter_bit_for_bit(dt):
    x = _narrow(_ints((2, 6, 6), -3, 4), dt)  # ties: the first in window order wins
    src = _narrow(_rng.standard_normal((2, 3, 3)) * 2, dt)
    i_h = xo.tensor(0.5, dt)
    for attrs in (
        dict(window_dimensions=[1, 2, 2], window_strides=[1, 2, 2]),  # max pooling's gradient
        dict(
            window_dimensions=[1, 3, 3], window_strides=[1, 2, 2], padding=[[0, 0], [1, 0], [1, 0]]
        ),
    ):
        got = xo.select_and_scatter(
            x.to("cuda"), src.to("cuda"), i_h.to("cuda"), select=GE, scatter=xo.add, **attrs
        )
        _exact(got, xo.select_and_scatter(x, src, i_h, select=GE, scatter=xo.add, **attrs))
    # overlapping windows: several source values add up in float32, rounded once
    src = _narrow(_rng.standard_normal((2, 5, 5)), dt)
    attrs = dict(window_dimensions=[1, 2, 2], window_strides=[1, 1, 1])
    got = xo.select_and_scatter(
        x.to("cuda"), src.to("cuda"), i_h.to("cuda"), select=GE, scatter=xo.add, **attrs
    )
    _exact(got, xo.select_and_scatter(x, src, i_h, select=GE, scatter=xo.add, **attrs))


def test_window_ops_narrow_errors():
    d = _narrow(np.ones((2, 4)), "bf16").to("cuda")
    i = xo.tensor(0.0, "bf16").to("cuda")
    with pytest.raises(xo.SpecError, match=r"^and \(I1\).*bf16"):  # (the body's op, as the CPU)
        xo.reduce_window(d, i, [1, 2], body=xo.and_)
    with pytest.raises(xo.SpecError, match=r"reduce_window \(C4\)"):
        xo.reduce_window(d, i, [1, 2, 3], body=xo.add)
    src = _narrow(np.ones((2, 2)), "bf16").to("cuda")
    with pytest.raises(xo.SpecError, match=r"^and \(I1\).*bf16"):  # (the CPU's error)
        xo.select_and_scatter(d, src, i, [1, 2], [1, 2], select=GE, scatter=xo.and_)


# -- batch norm ---------------------------------------------------------------------------------


def _bn_data(shape, fi, dt):
    c = shape[fi]
    b = [1] * len(shape)
    b[fi] = c
    x = _rng.standard_normal(shape) * np.linspace(0.5, 3, c).reshape(b) + np.arange(c).reshape(b)
    arrays = (x, _rng.standard_normal(c), _rng.standard_normal(c), _rng.standard_normal(shape))
    return [_narrow(a, dt) for a in arrays]


def _bn_close(devs, refs):
    assert len(devs) == len(refs)
    for d, r in zip(devs, refs):
        _ulps(d, r, 1.0, relative_to_max=True)


@pytest.mark.parametrize(
    "dt, shape, fi, eps", [("bf16", (2, 3, 4), 1, 1e-3), ("f16", (5, 2), 1, 0.1)]
)
def test_batch_norm_ops(dt, shape, fi, eps):
    x, s, o, g = _bn_data(shape, fi, dt)
    d = [t.to("cuda") for t in (x, s, o, g)]
    dev = xo.batch_norm_training(d[0], d[1], d[2], eps, fi)
    ref = xo.batch_norm_training(x, s, o, eps, fi)
    _bn_close(dev, ref)
    mean, var = ref[1], ref[2]
    dm, dv = mean.to("cuda"), var.to("cuda")
    _bn_close(
        [xo.batch_norm_inference(d[0], d[1], d[2], dm, dv, eps, fi)],
        [xo.batch_norm_inference(x, s, o, mean, var, eps, fi)],
    )
    _bn_close(
        xo.batch_norm_grad(d[0], d[1], dm, dv, d[3], eps, fi),
        xo.batch_norm_grad(x, s, mean, var, g, eps, fi),
    )


def test_batch_norm_training_normalises_with_rounded_statistics():
    """Features whose mean is not a bf16 value: the output uses the rounded mean (the
    CPU's, the spec's composition), so its values match the CPU's to the bit here."""
    x = _narrow([[1.0, 2.0], [2.0, 5.0], [4.0, 7.0]], "bf16")  # means 7/3, 14/3
    one, zero = _narrow([1.0, 1.0], "bf16"), _narrow([0.0, 0.0], "bf16")
    dev = xo.batch_norm_training(x.to("cuda"), one.to("cuda"), zero.to("cuda"), 0.0, 1)
    ref = xo.batch_norm_training(x, one, zero, 0.0, 1)
    for a, b in zip(dev, ref):
        _exact(a, b)


def test_batch_norm_narrow_errors():
    x, s, o, _ = _bn_data((2, 3), 1, "bf16")
    with pytest.raises(xo.SpecError, match=r"batch_norm_training \(device\).*different devices"):
        xo.batch_norm_training(x.to("cuda"), s, o.to("cuda"), 1e-3, 1)
    with pytest.raises(xo.SpecError, match=r"batch_norm_training \(C3\)"):
        xo.batch_norm_training(
            x.to("cuda"), _narrow([1.0], "bf16").to("cuda"), o.to("cuda"), 1e-3, 1
        )


# -- convolution -----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", NARROW)
def test_convolution_narrow(dt):
    # small integers: every float32 partial sum is exact, so the results match bit for bit
    x, w = _narrow(_ints((1, 2, 5, 5)), dt), _narrow(_ints((3, 2, 2, 2)), dt)
    dx, dw = x.to("cuda"), w.to("cuda")
    for attrs in (
        {},
        dict(window_strides=[2, 1], padding=[[1, 0], [0, 1]]),
        dict(lhs_dilation=[2, 1], rhs_dilation=[1, 2]),
    ):
        _exact(xo.convolution(dx, dw, **attrs), xo.convolution(x, w, **attrs))
    # feature groups, a transposed layout and f32 results of narrow operands
    wg = _narrow(_ints((4, 1, 3, 1)), dt)
    _exact(
        xo.convolution(dx, wg.to("cuda"), feature_group_count=2),
        xo.convolution(x, wg, feature_group_count=2),
    )
    got = xo.convolution(dx, dw, preferred_element_type="f32")
    ref = xo.convolution(x, w, preferred_element_type="f32")
    assert got.dtype.name == "f32"
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    # random values: within one ulp of the narrow type (float32 sums in another order)
    r, v = (
        _narrow(_rng.standard_normal((1, 2, 4, 4)), dt),
        _narrow(_rng.standard_normal((2, 2, 3, 3)), dt),
    )
    _ulps(
        xo.convolution(r.to("cuda"), v.to("cuda"), padding=[[1, 1], [1, 1]]),
        xo.convolution(r, v, padding=[[1, 1], [1, 1]]),
        relative_to_max=True,
    )


def test_convolution_narrow_results_of_wider_operands():
    """f32 operands with a bf16 result: each operand is rounded to bf16 first, then the
    float32 sum is rounded once (the CPU's order of roundings)."""
    x = _rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    w = _rng.standard_normal((1, 1, 2, 2)).astype(np.float32)
    for dt in NARROW:
        got = xo.convolution(cu(x), cu(w), preferred_element_type=dt)
        ref = xo.convolution(xo.tensor(x), xo.tensor(w), preferred_element_type=dt)
        _ulps(got, ref, relative_to_max=True)
    xi = np.round(x * 4)
    got = xo.convolution(cu(xi), cu(np.round(w * 4)), preferred_element_type="bf16")
    _exact(
        got,
        xo.convolution(xo.tensor(xi), xo.tensor(np.round(w * 4)), preferred_element_type="bf16"),
    )


def test_convolution_narrow_errors():
    x, w = np.ones((1, 2, 3, 3), np.float32), np.ones((1, 2, 2, 2), np.float32)
    bx, bw = _narrow(x, "bf16"), _narrow(w, "bf16")
    with pytest.raises(xo.SpecError, match=r"convolution \(device\): operands live on differ"):
        xo.convolution(bx.to("cuda"), bw)
    with pytest.raises(xo.SpecError, match=r"convolution \(C1\)|convolution \(C"):
        xo.convolution(bx.to("cuda"), _narrow(np.ones((1, 3, 2, 2)), "bf16").to("cuda"))
    i4 = [xo.tensor(t, "i4").to("cuda") for t in (x, w)]  # (no sub-byte integer kernel)
    with pytest.raises(xo.SpecError, match=r"convolution \(device\): has no cuda kernel for i4"):
        xo.convolution(*i4)
