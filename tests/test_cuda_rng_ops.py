"""CUDA kernels of rng, rng_uniform, rng_normal and rng_bernoulli (xops/kernels/cuda/rng.py):
the device draws the CPU stream's words (seeded by xo.random_seed), so each result is
compared with the CPU op's after the same seed and call sequence: bit for bit for
UNIFORM (every float width, the rounding that reaches b, the infinite-width formula,
integers of every width, i1), rng_bernoulli and interleaved CPU / CUDA calls; NORMAL
within a stated tolerance (Box-Muller's log / cos / sin are libdevice's on a GPU). Also
where results are made (the default device, CUDA operands) and the same SpecError labels
for bad input. Tiny shapes: the simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import cu, needs_cuda

import xops as xo

from conftest import raises_spec

pytestmark = needs_cuda

SHAPES = ((), (1,), (7,), (2, 3), (0, 3))


def _bits(a):
    return a.reshape(-1).view(np.uint8)


def _both(fn, seed=11):
    """fn() on the CPU and on the default device 'cuda' after the same seed (fn makes
    its operands: inside the default_device block they are CUDA tensors)."""
    xo.random_seed(seed)
    ref = fn()
    xo.random_seed(seed)
    with xo.default_device("cuda"):
        dev = fn()
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    return dev.numpy(), ref.numpy()


def _exact(fn, seed=11):
    dev, ref = _both(fn, seed)
    np.testing.assert_array_equal(_bits(dev), _bits(ref))
    return dev


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16", "f8E5M2", "f8E4M3FN"])
def test_uniform_floats_bit_exact(dtype):
    for i, shape in enumerate(SHAPES):
        lo, hi = (-1.5, 2.0) if i % 2 else (0.0, 1.0)
        out = _exact(lambda: xo.rng(xo.tensor(lo, dtype), xo.tensor(hi, dtype), shape, "UNIFORM"))
        assert ((out >= lo) & (out < hi)).all()
    _exact(lambda: xo.rng_uniform(xo.tensor(-4.0, dtype), xo.tensor(-3.0, dtype), [9]))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f8E4M3FN"])
def test_uniform_rounding_that_reaches_b_is_kept_below_it(dtype):
    # [1, next value after 1): about half the draws round up to b and are set to a
    np_dt = xo.tensor(1.0, dtype).numpy().dtype
    one = np.ones(1, np_dt)
    b = np.nextafter(one, np.array([2.0], np_dt))[0] if dtype in ("f32", "f16") else None
    if b is None:
        b = one.view(np.uint8 if np_dt.itemsize == 1 else np.uint16) + 1
        b = b.view(np_dt)[0]
    out = _exact(lambda: xo.rng(xo.tensor(1.0, dtype), xo.tensor(b, dtype), [40], "UNIFORM"))
    assert (out.astype(np.float64) == 1.0).all()


def test_uniform_infinite_width():
    big = 1.5e308  # b - a overflows: lo (1 - u) + hi u
    out = _exact(lambda: xo.rng(xo.tensor(-big, "f64"), xo.tensor(big, "f64"), [9], "UNIFORM"))
    assert np.isfinite(out).all() and (np.abs(out) < big).all()


@pytest.mark.parametrize(
    "dtype, lo, hi",
    [
        ("i8", -100, 27),
        ("ui8", 3, 255),
        ("i16", -5, 5),
        ("i32", -(2**31), 2**31 - 1),
        ("ui32", 0, 2**32 - 1),
        ("i64", -(2**63), 2**63 - 1),  # span 2**64 - 1: the sum wraps back into range
        ("ui64", 2**63, 2**64 - 1),
        ("i4", -8, 7),
        ("ui2", 0, 3),
    ],
)
def test_uniform_integers_bit_exact(dtype, lo, hi):
    for shape in ((), (5,), (2, 3)):
        out = _exact(lambda: xo.rng(xo.tensor(lo, dtype), xo.tensor(hi, dtype), shape, "UNIFORM"))
        if dtype not in ("i4", "ui2"):
            assert ((out >= lo) & (out < hi)).all()


def test_uniform_i1_is_false():
    out = _exact(lambda: xo.rng(xo.tensor(False), xo.tensor(True), [2, 3], "UNIFORM"))
    assert not out.any()


# NORMAL: mu + sigma z in float64 with Box-Muller's z, rounded once. libdevice's log, cos
# and sin may differ from the CPU's by an ulp or two, which the sums carry: float64 values
# within 1e-14 (|mu| + sigma (|z| + 1)); rounded types within one ulp of their own type.
NORMAL_TOL = {"f64": 1e-14, "f32": 2.0**-23, "bf16": 2.0**-7, "f16": 2.0**-10}


@pytest.mark.parametrize("dtype", sorted(NORMAL_TOL))
def test_normal_within_tolerance(dtype):
    for shape, (mu, sigma) in zip(SHAPES, [(0.0, 1.0), (1.5, 2.0), (-3.0, 0.5)] * 2):
        fn = lambda: xo.rng(xo.tensor(mu, dtype), xo.tensor(sigma, dtype), shape, "NORMAL")  # noqa: E731
        dev, ref = _both(fn)
        d, r = dev.astype(np.float64), ref.astype(np.float64)
        tol = NORMAL_TOL[dtype] * (abs(mu) + sigma * (np.abs(r - mu) / sigma + 1))
        assert (np.abs(d - r) <= tol).all(), (dtype, d, r)
    dev, ref = _both(lambda: xo.rng_normal(xo.tensor(2.0, "f64"), xo.tensor(0.0, "f64"), [3]))
    np.testing.assert_array_equal(dev, ref)  # sigma 0: mu exactly


def test_bernoulli_bit_exact():
    for p in (0.0, 0.3, 1.0):
        for shape in ((), (9,), (2, 3), (0,)):
            out = _exact(lambda: xo.rng_bernoulli(xo.tensor(p), shape))
            assert out.dtype == np.uint32
            if p in (0.0, 1.0):
                assert (out == p).all()
    _exact(lambda: xo.rng_bernoulli(xo.tensor(0.5, "bf16"), [5]))


def test_interleaved_cpu_and_cuda_calls_share_the_stream():
    def calls(device):
        xo.random_seed(2**64 - 1)
        outs = []
        for i in range(3):
            with xo.default_device(device if i != 1 else "cpu"):
                outs.append(xo.rng_uniform(0.0, 1.0, [5]).numpy())
                outs.append(
                    xo.rng(xo.tensor(0, "i32"), xo.tensor(9, "i32"), [3], "UNIFORM").numpy()
                )
                outs.append(xo.rng_bernoulli(0.5, [3]).numpy())
        return outs

    for d, c in zip(calls("cuda"), calls("cpu")):
        np.testing.assert_array_equal(_bits(d), _bits(c))


def test_where_results_are_made():
    a, b = cu(0.0, "f32"), cu(1.0, "f32")  # CUDA operands: a CUDA result, no default needed
    xo.random_seed(3)
    dev = xo.rng(a, b, [4], "UNIFORM")
    xo.random_seed(3)
    ref = xo.rng(a.to("cpu"), b.to("cpu"), [4], "UNIFORM")
    assert dev.device == "cuda:0"
    np.testing.assert_array_equal(dev.numpy(), ref.numpy())
    assert xo.rng_uniform(0.0, 1.0, [2]).device == "cpu"  # outside a default_device block
    with xo.default_device("cuda"):
        assert xo.rng_normal(0.0, 1.0, cu([2, 1], "i32")).shape == (2, 1)
        assert xo.rng_bernoulli(cu(0.5), [2]).device == "cuda:0"
        assert xo.rng_normal(0.0, 1.0, [2]).device == "cuda:0"


def _bad_calls(t):
    return [
        ("I4", lambda: xo.rng(t(0.0), t(1.0), [2], "POISSON")),
        ("I1", lambda: xo.rng(t([0.0]), t(1.0), [2], "UNIFORM")),
        ("C1", lambda: xo.rng(t(0.0), t(1.0, "f64"), [2], "UNIFORM")),
        ("C2", lambda: xo.rng(t(0, "i32"), t(1, "i32"), [2], "NORMAL")),
        ("C3", lambda: xo.rng(t(0.0), t(1.0), [-1], "UNIFORM")),
        ("I2", lambda: xo.rng(t(1.0), t(1.0), [2], "UNIFORM")),
        ("I2", lambda: xo.rng_normal(t(0.0), t(-1.0), [2])),
        ("I2", lambda: xo.rng_uniform(t(3, "i32"), t(2, "i32"), [2])),
    ]


def test_errors_match_the_cpu():
    for t in (cu, xo.tensor):
        for label, call in _bad_calls(t):
            op = "rng" if label != "I2" else None
            with pytest.raises(xo.SpecError, match=rf"^{op or 'rng[a-z_]*'} \({label}\)"):
                call()
    for mean in (cu(1.5), xo.tensor(1.5), cu([0.5])):
        with raises_spec("rng_bernoulli", "I1"):
            with xo.default_device("cuda"):
                xo.rng_bernoulli(mean, [2])
    with xo.default_device("cuda"), raises_spec("rng_bernoulli", "I2"):
        xo.rng_bernoulli(0.5, [[2]])
    with pytest.raises(xo.SpecError, match=r"^rng \(device\): operands live on different"):
        xo.rng(cu(0.0), xo.tensor(1.0), [2], "UNIFORM")
    from xops.kernels.cuda.narrow import NARROW

    no_kernel = [t for t in ("f8E8M0FNU", "f4E2M1FN", "f6E2M3FN") if t not in NARROW]
    for dtype in no_kernel:  # float types the device computes nothing in
        with pytest.raises(xo.SpecError, match=rf"^rng \(device\).*{dtype}"):
            xo.rng(cu(1.0, dtype), cu(2.0, dtype), [2], "UNIFORM")
