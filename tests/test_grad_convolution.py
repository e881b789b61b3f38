"""Gradients of convolution (both operands, every attribute) against finite differences,
and of a small CNN (convolution, batch norm, max pooling, dense, softmax cross-entropy)."""

import numpy as np
import pytest

import xops as xo
from gradcheck import check_grads

ZOO = {  # lhs shape, rhs shape, attributes
    "plain": ((2, 3, 5, 5), (4, 3, 3, 3), {}),
    "strides+padding": (
        (1, 2, 6, 5),
        (3, 2, 3, 2),
        dict(window_strides=[2, 1], padding=[(1, 2), (0, 1)]),
    ),
    "negative padding": ((1, 2, 6, 6), (2, 2, 2, 2), dict(padding=[(-1, 0), (1, -1)])),
    "lhs dilation": (
        (1, 2, 4, 4),
        (2, 2, 3, 3),
        dict(lhs_dilation=[2, 1], padding=[(1, 1), (1, 1)]),
    ),
    "rhs dilation": ((1, 2, 7, 6), (2, 2, 2, 3), dict(rhs_dilation=[2, 2])),
    "window reversal": ((1, 2, 5, 5), (2, 2, 3, 2), dict(window_reversal=[True, False])),
    "feature groups": ((2, 4, 5, 5), (6, 2, 3, 3), dict(feature_group_count=2)),
    "batch groups": ((4, 2, 5, 5), (4, 2, 3, 3), dict(batch_group_count=2)),
    "NHWC/HWIO": ((2, 5, 5, 3), (3, 3, 3, 4), dict(dimension_numbers="NHWC,HWIO,NHWC")),
    "1-D": ((2, 3, 9), (4, 3, 3), dict(window_strides=[2], padding=[(1, 1)])),
    "3-D": ((1, 2, 4, 4, 3), (2, 2, 2, 2, 2), dict(padding=[(1, 0), (0, 1), (1, 1)])),
}


@pytest.mark.parametrize("name", list(ZOO))
def test_convolution_gradients(name):
    sa, sb, attrs = ZOO[name]
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    check_grads(
        lambda x, w: xo.convolution(x, w, **attrs), [a, b], order=2 if name == "plain" else 1
    )


def test_aliases_record_too():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    check_grads(lambda x, w: xo.conv(x, w, [1, 1], "SAME"), [a, b])
    check_grads(lambda x, w: xo.conv_with_general_padding(x, w, [2, 1], [(1, 0), (0, 1)]), [a, b])


def test_preferred_element_type_cotangents_keep_the_operand_type():
    x = xo.tensor(np.ones((1, 1, 3, 3)), "bf16", requires_grad=True)
    w = xo.tensor(np.ones((1, 1, 2, 2)), "bf16", requires_grad=True)
    y = xo.convolution(x, w, preferred_element_type="f32")
    y.backward(xo.tensor(np.ones(y.shape, np.float32)))
    assert x.grad.dtype == "bf16" and w.grad.dtype == "bf16"
    assert w.grad.tolist() == [[[[4.0, 4.0], [4.0, 4.0]]]]


def _small_cnn(x, w1, scale, offset, w2, labels):
    """conv -> batch norm -> relu -> max pool -> dense -> softmax cross-entropy (mean)."""
    h = xo.convolution(x, w1, padding=[(1, 1), (1, 1)])
    h, _, _ = xo.batch_norm_training(h, scale, offset, 1e-3, 1)
    h = xo.maximum(h, 0.0)
    h = xo.reduce_window(h, -np.inf, [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum)
    h = xo.reshape(h, [h.shape[0], h.size // h.shape[0]])
    logits = h @ w2
    m = xo.reduce(logits, -np.inf, [1], xo.maximum)
    z = logits - xo.broadcast_in_dim(m, [0], logits.shape)
    lse = xo.log(xo.reduce(xo.exponential(z), 0.0, [1], xo.add))
    picked = xo.reduce(xo.multiply(z, labels), 0.0, [1], xo.add)
    return xo.reduce(lse - picked, 0.0, [0], xo.add) / float(logits.shape[0])


def test_small_cnn_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 1, 6, 6))
    w1 = rng.standard_normal((3, 1, 3, 3)) * 0.5
    scale, offset = 1 + 0.1 * rng.standard_normal(3), 0.1 * rng.standard_normal(3)
    w2 = rng.standard_normal((27, 5)) * 0.3
    labels = np.eye(5)[rng.integers(0, 5, 4)]
    f = lambda x, w1, s, o, w2: _small_cnn(x, w1, s, o, w2, labels)  # noqa: E731
    check_grads(f, [x, w1, scale, offset, w2], rtol=1e-4)
