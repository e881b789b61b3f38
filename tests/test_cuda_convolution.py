"""CUDA kernel of ``convolution`` (xops/kernels/cuda/convolution.py) against the CPU op.

Every attribute on tiny shapes (each launch at most a few hundred threads: the simulator
runs a Python thread per CUDA thread): integer results bit for bit; float results within
``2 * n * eps * sum |lhs| |rhs|`` per element (n terms per output; the device sums in a
fixed order, the CPU's BLAS in its own); error labels and messages as on the CPU; and
forward + backward of small conv2d layers, gradients included, equal to the CPU's.
"""

import numpy as np
import pytest

import xops as xo
import xops.nn.functional as F
from cuda_support import cu, needs_cuda, same
from xops.kernels.cuda import convolution as CV
from xops.ops._convolution_attrs import _dimension_numbers

pytestmark = needs_cuda

_rng = np.random.default_rng(17)


@pytest.fixture(params=["planar", "split", "general"])
def kernel(request, monkeypatch):
    """Run a test with the planar kernel (the default for 1 and 2 spatial dims), with its
    sums split over the kernel rows wherever it can (the way of few, long sums), and with
    the general kernel (any number of spatial dims)."""
    monkeypatch.setattr(CV, "_PLANAR", request.param != "general")
    if request.param == "split":
        monkeypatch.setattr(CV, "_SPLIT_BELOW", 10**9)
        monkeypatch.setattr(CV, "_SPLIT_MIN_WORK", 1)
        monkeypatch.setattr(CV, "_SPLIT_MIN_SUM", 0)
    return request.param


def _ints(shape, lo=-4, hi=5, dtype=np.int32):
    return _rng.integers(lo, hi, shape, endpoint=False).astype(dtype)


def _floats(shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _both(x, w, **kw):
    """(CUDA result, CPU result) of convolution(x, w, **kw)."""
    return xo.convolution(cu(x), cu(w), **kw), xo.convolution(xo.tensor(x), xo.tensor(w), **kw)


def _close(dev, ref, x, w, **kw):
    """Float results: same type and shape; |dev - cpu| <= 2 n eps sum|x||w| elementwise
    (n = the number of products summed per output element)."""
    assert dev.device == "cuda:0" and dev.dtype == ref.dtype and dev.shape == ref.shape
    kw = dict(kw, preferred_element_type=None)
    mag = xo.convolution(
        xo.tensor(np.abs(x).astype(np.float64)), xo.tensor(np.abs(w).astype(np.float64)), **kw
    ).numpy()
    n = w.size // max(ref.shape[_feature_dim(kw, ref.ndim)], 1)  # taps * input features
    eps = np.finfo(ref.numpy().dtype).eps
    err = np.abs(dev.numpy().astype(np.float64) - ref.numpy().astype(np.float64))
    assert (err <= 2 * n * eps * mag).all(), (err.max(), dev.numpy(), ref.numpy())


def _feature_dim(kw, rank):
    return _dimension_numbers("t", kw.get("dimension_numbers"), rank).output_feature_dimension


def _check(x, w, **kw):
    dev, ref = _both(x, w, **kw)
    if ref.dtype.kind == "float":
        _close(dev, ref, x, w, **kw)
    else:
        same(dev, ref)
    return dev, ref


# -- every attribute, 2-d NCHW x OIHW unless the case names a layout ----------------------

CASES_2D = {
    "plain": {},
    "strides": {"window_strides": [2, 1]},
    "padding": {"padding": [(1, 2), (2, 0)]},
    "negative padding": {"padding": [(-1, 1), (1, -2)]},
    "lhs dilation": {"lhs_dilation": [2, 3]},
    "rhs dilation": {"rhs_dilation": [2, 1]},
    "reversal": {"window_reversal": [True, False]},
    "everything": {
        "window_strides": [2, 1],
        "padding": [(1, -1), (2, 0)],
        "lhs_dilation": [1, 2],
        "rhs_dilation": [2, 1],
        "window_reversal": [True, True],
    },
}


@pytest.mark.parametrize("case", list(CASES_2D))
def test_attributes_2d_f32(case, kernel):
    kw = CASES_2D[case]
    dev, ref = _check(_floats((2, 2, 5, 4)), _floats((3, 2, 2, 3)), **kw)
    assert ref.size > 0


@pytest.mark.parametrize("case", ["everything", "negative padding"])
def test_attributes_2d_integers_bit_exact(case, kernel):
    _check(_ints((2, 2, 5, 4)), _ints((3, 2, 2, 3)), **CASES_2D[case])


def test_feature_groups_and_depthwise(kernel):
    _check(_floats((2, 4, 4, 3)), _floats((6, 2, 2, 2)), feature_group_count=2)
    _check(_ints((1, 4, 3, 3)), _ints((8, 2, 2, 2)), feature_group_count=2)  # 4 per thread
    _check(_ints((1, 3, 4, 4)), _ints((3, 1, 3, 3)), feature_group_count=3, padding=[(1, 1)] * 2)


def test_batch_groups(kernel):
    dev, ref = _check(_floats((4, 2, 4, 3)), _floats((6, 2, 2, 2)), batch_group_count=2)
    assert ref.shape == (2, 6, 3, 2)
    _check(_ints((4, 1, 3, 3)), _ints((4, 1, 2, 2)), batch_group_count=2)  # 2 per thread
    _check(_ints((6, 1, 3, 3)), _ints((3, 1, 2, 2)), batch_group_count=3, window_strides=[1, 2])


@pytest.mark.parametrize(
    "dn, xs, ws",
    [
        ("NHWC,HWIO,NHWC", (2, 5, 4, 3), (2, 3, 3, 2)),
        ("[f, 1, b, 0]x[i, 0, o, 1]->[0, f, 1, b]", (3, 4, 2, 5), (3, 3, 2, 2)),
        (
            {  # a dict with the spec's fields: HWNC input, OHIW kernel, WCNH output
                "input_batch_dimension": 2,
                "input_feature_dimension": 3,
                "input_spatial_dimensions": (0, 1),
                "kernel_input_feature_dimension": 2,
                "kernel_output_feature_dimension": 0,
                "kernel_spatial_dimensions": (1, 3),
                "output_batch_dimension": 2,
                "output_feature_dimension": 1,
                "output_spatial_dimensions": (3, 0),
            },
            (5, 4, 2, 2),
            (3, 2, 2, 3),
        ),
    ],
)
def test_dimension_numbers(dn, xs, ws, kernel):
    kw = {"dimension_numbers": dn, "window_strides": [2, 1], "padding": [(1, 0), (0, 2)]}
    _check(_ints(xs), _ints(ws), **kw)
    _check(_floats(xs), _floats(ws), rhs_dilation=[1, 2], window_reversal=[False, True], **kw)


def test_one_three_and_zero_spatial_dims(kernel):
    _check(
        _floats((2, 3, 7)),
        _floats((4, 3, 3)),
        window_strides=[2],
        padding=[(2, 1)],
        rhs_dilation=[2],
        lhs_dilation=[2],
        window_reversal=[True],
    )
    _check(
        _ints((1, 2, 3, 4, 3)),
        _ints((2, 2, 2, 3, 2)),
        window_strides=[1, 2, 1],
        padding=[(1, 0), (0, 1), (-1, 1)],
        window_reversal=[False, True, True],
    )
    dev, ref = _check(_ints((3, 4)), _ints((5, 4)))  # no spatial dims: a matrix product
    assert ref.shape == (3, 5)
    # four spatial dims (any number works: the kernel's loops are flattened)
    _check(_ints((1, 2, 2, 3, 2, 3)), _ints((2, 2, 2, 2, 1, 2)), padding=[(0, 1)] * 4)


def test_empty_operands():
    dev, ref = _both(_floats((0, 2, 4, 4)), _floats((3, 2, 2, 2)))
    assert dev.shape == ref.shape == (0, 3, 3, 3)
    dev, ref = _check(_floats((2, 0, 4, 4)), _floats((3, 0, 2, 2)))  # nothing to sum: zeros
    assert ref.size > 0 and not dev.numpy().any()
    dev, ref = _check(_ints((1, 2, 3)), _ints((2, 2, 0)))  # an empty window
    assert ref.shape == (1, 2, 4) and not dev.numpy().any()


def test_planar_and_general_kernels_sum_in_one_order(monkeypatch):
    x, w = _floats((2, 2, 5, 4)), _floats((4, 2, 2, 3))
    planar = xo.convolution(cu(x), cu(w), **CASES_2D["everything"]).numpy()
    monkeypatch.setattr(CV, "_PLANAR", False)
    general = xo.convolution(cu(x), cu(w), **CASES_2D["everything"]).numpy()
    np.testing.assert_array_equal(planar, general)


# -- element types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, preferred, lo, hi",
    [
        (np.int8, None, -128, 128),  # wraps at 8 bits
        (np.int8, "i32", -128, 128),
        (np.int8, "ui32", -128, 128),  # signed operands, unsigned result: wraps mod 2**32
        (np.uint8, "ui16", 0, 256),  # wraps mod 2**16
        (np.uint8, "i16", 0, 256),
        (np.int16, None, -(2**15), 2**15),
        (np.int64, None, -(2**62), 2**62),  # products wrap mod 2**64 as on the CPU
        (np.uint64, None, 0, 2**64 - 1),
        (np.uint32, "ui64", 0, 2**32 - 1),
    ],
)
def test_integers_bit_exact(dtype, preferred, lo, hi):
    x = _rng.integers(lo, hi, (2, 4, 5), dtype=dtype)
    w = _rng.integers(lo, hi, (4, 2, 3), dtype=dtype)
    dev, ref = _check(
        x, w, feature_group_count=2, padding=[(1, 1)], preferred_element_type=preferred
    )
    assert dev.dtype == ref.dtype == xo.as_dtype(preferred or dtype)


def test_boolean_is_or_of_and(kernel):
    x = _rng.integers(0, 2, (2, 2, 5)).astype(bool)
    w = _rng.integers(0, 2, (3, 2, 2)).astype(bool)
    dev, ref = _check(x, w, padding=[(1, 0)])
    assert dev.dtype == xo.as_dtype("i1") and ref.numpy().any() and not ref.numpy().all()
    x = _rng.random((1, 2, 4, 4)) < 0.2
    dev, ref = _check(x, _rng.random((2, 2, 3, 2)) < 0.3, padding=[(1, 1), (0, 0)])
    assert ref.numpy().any() and not ref.numpy().all()


def test_float_types_and_preferred_element_type():
    x, w = _floats((2, 3, 4, 4), np.float64), _floats((2, 3, 3, 2), np.float64)
    _check(x, w, padding=[(1, 1), (0, 1)])
    _check(x, w, preferred_element_type="f32")  # f64 operands round to f32 first
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    dev, ref = _check(x32, w32, preferred_element_type="f64")  # exact products in f64
    assert dev.dtype == xo.as_dtype("f64")
    # integer-valued floats sum exactly in any order: equal bit for bit
    xi, wi = _ints((2, 3, 4, 4)).astype(np.float32), _ints((2, 3, 3, 2)).astype(np.float32)
    dev, ref = _both(xi, wi, padding=[(1, 1), (0, 1)], rhs_dilation=[1, 2])
    np.testing.assert_array_equal(dev.numpy(), ref.numpy())


def test_precision_config_and_the_xla_wrappers():
    x, w = _ints((1, 2, 5, 5)), _ints((2, 2, 3, 3))
    dev, ref = _check(x, w, precision_config=["HIGHEST", "DEFAULT"])
    for fn, args in (
        (xo.conv, ([2, 1], "SAME")),
        (xo.conv_with_general_padding, ([1, 2], [(1, 0), (0, 1)])),
    ):
        same(fn(cu(x), cu(w), *args), fn(xo.tensor(x), xo.tensor(w), *args))


# -- errors: the CPU op's labels and messages ---------------------------------------------


@pytest.mark.parametrize(
    "xs, ws, xdt, wdt, kw",
    [
        ((1, 2, 4, 4), (3, 2, 2, 2), np.float32, np.float64, {}),  # C27
        ((1, 2, 4, 4), (3, 3, 2, 2), np.float32, np.float32, {}),  # C14
        ((2, 4, 4, 4), (4, 2, 2, 2), np.float32, np.float32, {"feature_group_count": 3}),
        (
            (2, 4, 4),
            (4, 2, 2),
            np.int32,
            np.int32,
            {"feature_group_count": 2, "batch_group_count": 2},
        ),
        ((1, 2, 4, 4), (3, 2, 2, 2), np.int32, np.int32, {"window_strides": [1, 0]}),  # C3
        ((1, 2, 4, 4), (3, 2, 2, 2), np.int32, np.int32, {"padding": [(1, 1)]}),  # C4
        ((1, 2, 4, 4), (3, 2, 2, 2), np.int32, np.int32, {"dimension_numbers": "NCHW,OIHW"}),
        ((1, 2, 4, 4), (3, 2, 2, 2), np.int8, np.int8, {"preferred_element_type": "f32"}),
    ],
)
def test_errors_match_the_cpu(xs, ws, xdt, wdt, kw):
    x, w = np.zeros(xs, xdt), np.zeros(ws, wdt)
    with pytest.raises(xo.SpecError) as cpu:
        xo.convolution(xo.tensor(x), xo.tensor(w), **kw)
    with pytest.raises(xo.SpecError) as dev:
        xo.convolution(cu(x), cu(w), **kw)
    assert str(dev.value) == str(cpu.value) and str(cpu.value).startswith("convolution (")


def test_device_errors():
    x, w = np.ones((1, 2, 3, 3), np.float32), np.ones((1, 2, 2, 2), np.float32)
    with pytest.raises(xo.SpecError, match=r"convolution \(device\): operands live on differ"):
        xo.convolution(cu(x), xo.tensor(w))
    with pytest.raises(xo.SpecError, match=r"convolution \(device\): operands live on differ"):
        xo.convolution(cu(x), w)  # a NumPy array is a CPU operand
    with pytest.raises(xo.SpecError, match=r"convolution \(device\): has no cuda kernel for i4"):
        xo.convolution(cu(x, "i4"), cu(w, "i4"))  # (every float type has a kernel)


# -- autodiff: both cotangents are convolutions, so backward runs on the device ------------


def _forward_backward(x, w, bias, device, **kw):
    x = xo.tensor(x, device=device, requires_grad=True)
    w = xo.tensor(w, device=device, requires_grad=True)
    out = F.conv2d(x, w, None if bias is None else xo.tensor(bias, device=device), **kw)
    c = xo.tensor(np.linspace(-1, 1, out.size, dtype=np.float32).reshape(out.shape), device=device)
    loss = xo.reduce(out * c, xo.tensor(0.0, device=device), list(range(out.ndim)), xo.add)
    loss.backward()
    return out, loss, x.grad, w.grad


@pytest.mark.parametrize(
    "kw",
    [
        {"padding": 1},  # nn.Conv2d(..., padding=1)
        {"stride": 2, "padding": 1},
        {"stride": 2, "dilation": 2, "groups": 2, "padding": (1, 0)},
    ],
)
def test_conv2d_forward_and_backward_equal_the_cpu(kw, kernel):
    x, w = _floats((2, 2, 5, 5)), _floats((4, 2 // kw.get("groups", 1), 3, 3))
    dev = _forward_backward(x, w, None, "cuda", **kw)
    ref = _forward_backward(x, w, None, "cpu", **kw)
    for d, r in zip(dev, ref):
        assert d.device == "cuda:0" and d.shape == r.shape
        np.testing.assert_allclose(d.numpy(), r.numpy(), rtol=1e-5, atol=1e-5)


def test_gradients_with_batch_groups_and_lhs_dilation():
    x, w = _floats((4, 2, 3, 3)), _floats((4, 2, 2, 2))
    kw = {"batch_group_count": 2, "lhs_dilation": [2, 1], "padding": [(1, 0), (0, 1)]}
    grads = []
    for dev in ("cuda", "cpu"):
        xt = xo.tensor(x, device=dev, requires_grad=True)
        wt = xo.tensor(w, device=dev, requires_grad=True)
        out = xo.convolution(xt, wt, window_reversal=[True, False], **kw)
        xo.reduce(out * out, xo.tensor(0.0, device=dev), [0, 1, 2, 3], xo.add).backward()
        grads.append((out, xt.grad, wt.grad))
    for d, r in zip(*grads):
        np.testing.assert_allclose(d.numpy(), r.numpy(), rtol=1e-5, atol=1e-5)


def test_gradient_of_an_empty_cotangent_stays_on_the_device():
    from xops.ops.convolution import convolution_grad_lhs, convolution_grad_rhs

    g = cu(np.zeros((2, 3, 0, 0), np.float32))  # convolution((2, 2, 1, 1), (3, 2, 2, 2))
    gl = convolution_grad_lhs(g, cu(np.ones((3, 2, 2, 2), np.float32)), (2, 2, 1, 1))
    gr = convolution_grad_rhs(g, cu(np.ones((2, 2, 1, 1), np.float32)), (3, 2, 2, 2))
    for t, shape in ((gl, (2, 2, 1, 1)), (gr, (3, 2, 2, 2))):
        assert t.device == "cuda:0" and t.shape == shape and not t.numpy().any()


# -- complex: the same kernels in complex arithmetic ---------------------------------------


def _complex(shape, dt):
    v = _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)
    return v.astype(dt)


def _close_complex(dev, ref, x, w, **kw):
    """Each part within 2 (2n) eps sum|x||w| (n products an output, each of two terms)."""
    assert dev.device == "cuda:0" and dev.dtype == ref.dtype and dev.shape == ref.shape
    kw = dict(kw, preferred_element_type=None)
    mag = xo.convolution(xo.tensor(np.abs(x)), xo.tensor(np.abs(w)), **kw).numpy()
    n = w.size // max(ref.shape[_feature_dim(kw, ref.ndim)], 1)
    eps = np.finfo(ref.numpy().real.dtype).eps
    d, r = dev.numpy(), ref.numpy()
    for pd, pr in ((d.real, r.real), (d.imag, r.imag)):
        assert (np.abs(pd.astype(np.float64) - pr) <= 4 * n * eps * mag).all()


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("case", ["plain", "everything"])
def test_complex_operands(case, dt, kernel):
    x, w = _complex((2, 3, 6, 5), dt), _complex((4, 3, 3, 2), dt)
    _close_complex(*_both(x, w, **CASES_2D[case]), x, w, **CASES_2D[case])


def test_complex_gradients_and_preferred_element_type():
    """Both cotangents of a c64 convolution (convolutions themselves) on the device
    against the CPU's, and c64 operands with a c128 result (widened on the device
    first, as the CPU does)."""
    x, w = _complex((2, 2, 5, 5), np.complex64), _complex((3, 2, 3, 3), np.complex64)
    g = _complex((2, 3, 5, 5), np.complex64)
    kw = {"padding": [(1, 1), (1, 1)]}
    (_, pull_dev), (_, pull_cpu) = (
        xo.vjp(lambda a, b: xo.convolution(a, b, **kw), cu(x), cu(w)),
        xo.vjp(lambda a, b: xo.convolution(a, b, **kw), xo.tensor(x), xo.tensor(w)),
    )
    for d, r in zip(pull_dev(cu(g)), pull_cpu(xo.tensor(g))):
        assert d.device == "cuda:0" and d.dtype == r.dtype and d.shape == r.shape
        np.testing.assert_allclose(d.numpy(), r.numpy(), rtol=1e-5, atol=1e-5)
    dev, ref = _both(x, w, preferred_element_type="c128", **kw)
    assert dev.dtype == ref.dtype == xo.complex128
    np.testing.assert_allclose(dev.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
