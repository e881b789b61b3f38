"""reduce on the device with any body and several inputs (xops/kernels/cuda/reduction.py,
``_generic``): the CPU's generic tree written with xops ops, each level one body call on
device tensors. Compared with the CPU op: bit for bit where the body's ops are exact
(add, multiply, subtract, maximum, compare, select, integer ops: the same pairs in the same
order), within the device kernels' tolerance for exp / log_plus_one. Tiny shapes: the
simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import cu, needs_cuda

import xops as xo

pytestmark = needs_cuda

rng = np.random.default_rng(29)


def _bits(t):
    a = t.numpy()
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _argmax(av, ai, bv, bi):  # ties (and a NaN against a NaN) to the lower index
    pick_a = xo.or_(
        xo.compare(av, bv, "GT"), xo.and_(xo.compare(av, bv, "EQ"), xo.compare(ai, bi, "LT"))
    )
    return xo.select(pick_a, av, bv), xo.select(pick_a, ai, bi)


def _logaddexp(a, b):
    m = xo.maximum(a, b)
    return xo.add(m, xo.log_plus_one(xo.exponential(xo.negate(xo.abs(xo.subtract(a, b))))))


# reduced dims trailing, leading, in the middle, all of them; odd extents (7, 5, 3) leave
# elements out at several levels of the tree
DIMS = ([2], [1], [0, 2], [0, 1, 2])


@pytest.mark.parametrize("dims", DIMS)
def test_bodies_of_exact_ops_bit_for_bit(dims):
    x = rng.standard_normal((3, 7, 5)).astype(np.float32)
    x[0, 2, 1] = np.nan
    x[1, 3, 4] = -0.0
    cases = (
        (lambda a, b: xo.add(a, xo.multiply(b, b)), 0.0),  # a sum of squares
        (xo.subtract, 1.5),  # not associative: the order shows
        (lambda a, b: xo.maximum(a, xo.negate(b)), -np.inf),
    )
    for body, init in cases:
        dev = xo.reduce(cu(x), init, dims, body)
        ref = xo.reduce(xo.tensor(x), init, dims, body)
        assert dev.device == "cuda:0" and dev.dtype == ref.dtype and dev.shape == ref.shape
        np.testing.assert_array_equal(_bits(dev), _bits(ref))
    n = rng.integers(-1000, 1000, (4, 9)).astype(np.int32)
    for body in (xo.subtract, lambda a, b: xo.xor(a, xo.shift_left(b, 1))):
        dev = xo.reduce(cu(n), cu(7, "i32"), [1], body)
        np.testing.assert_array_equal(dev.numpy(), xo.reduce(xo.tensor(n), 7, [1], body).numpy())


@pytest.mark.parametrize("dims", DIMS)
def test_logaddexp_body_within_the_kernels_tolerance(dims):
    x = (rng.standard_normal((3, 7, 5)) * 4).astype(np.float32)
    dev = xo.reduce(cu(x), -np.inf, dims, _logaddexp).numpy()
    ref = xo.reduce(xo.tensor(x), -np.inf, dims, _logaddexp).numpy()
    np.testing.assert_allclose(dev, ref, rtol=4e-7, atol=0)


def test_variadic_argmax_and_init_values():
    x = rng.integers(0, 4, (3, 7)).astype(np.float32)  # many ties
    x[1, 2] = x[1, 5] = np.nan
    idx = np.broadcast_to(np.arange(7, dtype=np.int64), x.shape).copy()
    for dims in ([1], [0]):
        dv, di = xo.reduce([cu(x), cu(idx)], [-np.inf, 0], dims, _argmax)
        cv, ci = xo.reduce([xo.tensor(x), xo.tensor(idx)], [-np.inf, 0], dims, _argmax)
        assert dv.device == di.device == "cuda:0"
        np.testing.assert_array_equal(_bits(dv), _bits(cv))
        np.testing.assert_array_equal(di.numpy(), ci.numpy())
    # empty reduced extent: the init values; an empty result
    e = xo.reduce(cu(np.zeros((0, 3), np.float32)), 2.5, [0], xo.subtract)
    assert e.device == "cuda:0" and e.numpy().tolist() == [2.5, 2.5, 2.5]
    z = xo.reduce(cu(np.zeros((3, 0), np.float32)), 2.5, [0], xo.subtract)
    assert z.shape == (0,) and z.device == "cuda:0"


def test_body_errors_as_on_the_cpu():
    x = cu(np.ones((2, 3), np.float32))
    cpu = xo.tensor(np.ones((2, 3), np.float32))

    def message(t, body):
        with pytest.raises(xo.SpecError) as e:
            xo.reduce(t, xo.tensor(0.0, device=t.device), [1], body)
        return str(e.value)

    for body in (
        lambda a, b: xo.convert(xo.add(a, b), "i32"),  # a result type f32 is not promoted to
        lambda a, b: (a, b),  # two results for one input (C6)
        lambda a, b: xo.and_(a, b),  # the body's op rejects f32
    ):
        assert message(x, body) == message(cpu, body)
    const = xo.tensor([1.0, 2.0])  # a CPU tensor closed over: the devices differ
    with pytest.raises(xo.SpecError, match=r"different devices"):
        xo.reduce(x, 0.0, [1], lambda a, b: xo.add(a, xo.multiply(b, const[0])))


def test_gradients_of_generic_bodies_on_the_device():
    # the rule re-runs the tree on the tape: on the device, a Python init value included
    x = rng.standard_normal((3, 5)).astype(np.float32)
    for body, init in ((_logaddexp, -np.inf), (lambda a, b: xo.add(a, xo.multiply(b, b)), 0.0)):

        def f(t):
            return xo.reduce(xo.reduce(t, init, [1], body), 0.0, [0], xo.add)

        dev, ref = xo.grad(f)(cu(x)), xo.grad(f)(xo.tensor(x))
        assert dev.device == "cuda:0"
        np.testing.assert_allclose(dev.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)
