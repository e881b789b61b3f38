"""A layer's bias as one recorded op (``nn.functional.bias_add``, and a convolution
layer's convolution with its bias, ``nn.functional.conv_bias``): the composite's values
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
    assert conv(xo.tensor(np.ones((1, 1, 5, 5), np.float32)))._node.op == "conv_bias"
    conv64 = xo.nn.Conv2d(1, 2, 3).to(dtype="f64")  # (f64: the convolution, then bias_add)
    assert conv64(xo.tensor(np.ones((1, 1, 5, 5))))._node.op == "bias_add"


CONVS = [  # (x shape, weight shape, padding, stride, dilation, groups)
    ((2, 3, 9, 9), (8, 3, 3, 3), 1, 1, 1, 1),  # the blocked kernel, one block
    ((2, 1, 28, 28), (16, 1, 3, 3), 1, 1, 1, 1),  # the digits' first layer
    ((3, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1, 1),  # its second
    ((2, 3, 9, 9), (5, 3, 3, 3), 0, 1, 1, 1),  # 5 features: a padded block
    ((2, 3, 9, 9), (4, 3, 5, 5), 2, 1, 1, 1),  # 5 x 5: the composite
    ((2, 4, 9, 9), (6, 2, 3, 3), 1, 2, 1, 2),  # strides, groups: the composite
    ((1, 2, 10, 11), (3, 2, 3, 3), 0, 1, 2, 1),  # dilated: the composite
]


@pytest.mark.parametrize("case", range(len(CONVS)), ids=lambda i: f"conv{i}")
def test_conv_bias_matches_the_composite(case, monkeypatch):
    from xops.ops import _convolution_direct as D

    xs, ws, pad, stride, dil, groups = CONVS[case]
    rng = np.random.default_rng(case)
    xv, wv = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    bv = rng.standard_normal(ws[0]).astype(np.float32)
    bv[0] = -0.0
    xv.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    fused_calls = []
    real = D._blocked
    # (the bias: _blocked's eighth argument, given only where it is fused)
    monkeypatch.setattr(
        D, "_blocked", lambda *a: fused_calls.append(len(a) == 8 and a[7] is not None) or real(*a)
    )
    results = []
    for fused in (True, False):
        x, w, b = _leaf(xv), _leaf(wv), _leaf(bv)
        if fused:
            out = F.conv2d(x, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)
            assert out._node.op == "conv_bias"
        else:
            y = F.conv2d(x, w, None, stride=stride, padding=pad, dilation=dil, groups=groups)
            out = _composite(y, b, 1)
        gv = np.random.default_rng(9).standard_normal(out.shape).astype(np.float32)
        loss = xo.reduce(xo.multiply(out, xo.tensor(gv)), 0.0, [0, 1, 2, 3], xo.add)
        loss.backward()
        results.append((out, x.grad, w.grad, b.grad))
    for got, want in zip(*results):
        assert got.type == want.type
        np.testing.assert_array_equal(got.numpy().view(np.uint32), want.numpy().view(np.uint32))
    blocked = ws[2:] == (3, 3) and stride == dil == groups == 1 and D._vector_lanes() > 0
    assert (True in fused_calls) == blocked  # (the bias in the kernel where it runs)
    # against NumPy: the bias lands on every position of its feature
    ref = F.conv2d(xo.tensor(xv), xo.tensor(wv), None, stride, pad, dil, groups).numpy()
    np.testing.assert_array_equal(results[0][0].numpy(), ref + bv[None, :, None, None])


def test_conv_bias_errors_and_other_biases_are_the_composite():
    x = xo.tensor(np.ones((1, 2, 5, 5), np.float32))
    w = xo.tensor(np.ones((3, 2, 3, 3), np.float32))
    with pytest.raises(xo.SpecError, match="broadcast_in_dim"):
        F.conv2d(x, w, xo.tensor(np.ones(4, np.float32)))
    with pytest.raises(xo.SpecError, match="convolution"):
        F.conv2d(x, xo.tensor(np.ones((3, 3, 3, 3), np.float32)), xo.tensor(np.ones(3, np.float32)))
    one = F.conv2d(x, w, xo.tensor(np.full(1, 0.5, np.float32)))  # (one value for every feature)
    np.testing.assert_array_equal(one.numpy(), np.full((1, 3, 3, 3), 18.5, np.float32))


def test_conv_bias_second_derivative():
    # f(b) = sum(conv(x, w) + b)^2 over a 1x1 output: f'(b) = 2 (c + b), f'' = 2 per output
    x = xo.tensor(np.ones((2, 1, 3, 3), np.float32))
    w = xo.tensor(np.ones((2, 1, 3, 3), np.float32))

    def f(b):
        h = F.conv2d(x, w, b)
        return xo.reduce(xo.multiply(h, h), 0.0, [0, 1, 2, 3], xo.add)

    b = xo.tensor(np.array([1.0, -2.0], np.float32))
    np.testing.assert_allclose(xo.grad(f)(b).numpy(), [2 * 2 * 10.0, 2 * 2 * 7.0])
    np.testing.assert_allclose(
        xo.grad(lambda t: xo.reduce(xo.grad(f)(t), 0.0, [0], xo.add))(b).numpy(), [4.0, 4.0]
    )


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
