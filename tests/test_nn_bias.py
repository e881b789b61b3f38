"""A layer's bias as one recorded op (``nn.functional.bias_add``): the composite's values
and gradients bit for bit, one tape node, second derivatives, and the composite where the
fused op does not apply."""

import numpy as np
import pytest

import xops as xo
import xops.nn  # noqa: F401  (xo.nn: a subpackage)
from xops.nn import functional as F


def _composite(y, b, dim):
    return xo.add(y, xo.broadcast_in_dim(b, [dim], y.shape))


def _leaf(v):
    t = xo.tensor(v)
    t.requires_grad = True
    return t


CASES = [((4, 3, 5, 6), 1), ((7, 10), 1), ((2, 1, 3), 1), ((1, 4, 1, 2), 1), ((5, 3), 0)]
CASES += [((5, 3), (0, 1)), ((4, 3, 2), (1, 1))]  # (dim, bias size 1): expanded along dim


@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_add_matches_the_composite(shape, dim, dtype):
    dim, size = dim if isinstance(dim, tuple) else (dim, shape[dim])
    rng = np.random.default_rng(len(shape) + dim)
    yv = rng.standard_normal(shape).astype(dtype)
    bv = rng.standard_normal(size).astype(dtype)
    gv = rng.standard_normal(shape).astype(dtype)
    results = []
    for fn in (F._add_channel_bias, _composite):
        y, b = _leaf(yv), _leaf(bv)
        out = fn(y, b, dim)
        loss = xo.reduce(xo.multiply(out, xo.tensor(gv)), 0.0, list(range(len(shape))), xo.add)
        loss.backward()
        results.append((out, y.grad, b.grad))
    (fused, gy, gb), (ref, ry, rb) = results
    for got, want in ((fused, ref), (gy, ry), (gb, rb)):
        assert got.type == want.type
        np.testing.assert_array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))
    # the bias gradient is g summed over the other dims
    other = tuple(d for d in range(len(shape)) if d != dim or size != shape[dim])
    want = gv.sum(axis=other).reshape(size)
    np.testing.assert_allclose(gb.numpy(), want, rtol=1e-5, atol=1e-5)


def test_bias_add_is_one_node_and_layers_use_it():
    y, b = _leaf(np.ones((2, 3, 4, 4), np.float32)), _leaf(np.zeros(3, np.float32))
    out = F._add_channel_bias(y, b, 1)
    assert out._node.op == "bias_add" and out._node.inputs == [y, b]
    lin = xo.nn.Linear(4, 2)
    assert lin(xo.tensor(np.ones((3, 4), np.float32)))._node.op == "bias_add"
    conv = xo.nn.Conv2d(1, 2, 3)
    assert conv(xo.tensor(np.ones((1, 1, 5, 5), np.float32)))._node.op == "bias_add"


def test_bias_add_second_derivative():
    """The rule is made of xops ops, so it nests: f(b) = sum((y + b)^3) has
    f'(b)_k = 3 sum_i (y_ik + b_k)^2 and (sum f')'(b)_k = 6 sum_i (y_ik + b_k)."""
    yv = np.arange(6, dtype=np.float64).reshape(2, 3)
    y = xo.tensor(yv)

    def f(b):
        h = F._add_channel_bias(y, b, 1)
        return xo.reduce(xo.multiply(xo.multiply(h, h), h), 0.0, [0, 1], xo.add)

    def total_slope(b):
        return xo.reduce(xo.grad(f)(b), 0.0, [0], xo.add)

    b = xo.tensor(np.array([1.0, -1.0, 0.5]))
    h = yv + b.numpy()
    np.testing.assert_allclose(xo.grad(f)(b).numpy(), 3 * (h**2).sum(axis=0))
    np.testing.assert_allclose(xo.grad(total_slope)(b).numpy(), 6 * h.sum(axis=0))


def test_bias_add_checks_as_the_composite():
    """Shapes the composite rejects raise its SpecError (broadcast_in_dim's label)."""
    y = xo.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(xo.SpecError, match="broadcast_in_dim"):
        F._add_channel_bias(y, xo.tensor(np.ones((4,), np.float32)), 1)
    out = F._add_channel_bias(y, xo.tensor(np.full((1,), 2.0, np.float32)), 0)  # size 1
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 3.0, np.float32))
