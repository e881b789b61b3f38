"""The gradient rules of the CHLO math primitives (xops.stablehlo.chlo_math) against
central finite differences in float64, and the op without a rule naming itself."""

import numpy as np
import pytest

import xops as xo
from xops.stablehlo import chlo_math as cm

# points inside each function's domain, away from poles and branch points
UNARY = [
    ("asin", [-0.5, 0.3]),
    ("acos", [-0.5, 0.3]),
    ("atan", [-2.0, 0.7]),
    ("asinh", [-2.0, 0.7]),
    ("acosh", [1.5, 3.0]),
    ("atanh", [-0.5, 0.3]),
    ("sinh", [-1.0, 0.5]),
    ("cosh", [-1.0, 0.5]),
    ("lgamma", [0.7, 2.5]),
    ("erfc", [-0.5, 0.8]),
    ("erf_inv", [-0.5, 0.3]),
]
H = 1e-6


def _central(f, x):
    return (np.asarray(f(x + H)) - np.asarray(f(x - H))) / (2 * H)


@pytest.mark.parametrize("name,points", UNARY)
def test_unary_gradient_matches_finite_differences(name, points):
    op = getattr(cm, name)
    x = np.array(points)
    g = np.asarray(xo.grad(lambda t: op(t).sum())(xo.tensor(x)))
    np.testing.assert_allclose(g, _central(lambda v: op(xo.tensor(v)), x), rtol=1e-7)


def test_digamma_gradient_is_trigamma():
    x = 0.7  # 0-d: the rule's polygamma order is a 0-d constant
    g = float(xo.grad(lambda t: cm.digamma(t))(xo.tensor(x, "f64")))
    np.testing.assert_allclose(g, _central(lambda v: cm.digamma(xo.tensor(v, "f64")), x), rtol=1e-7)


@pytest.mark.parametrize("name,first", [("polygamma", [1.0, 2.0]), ("zeta", [2.5, 3.0])])
def test_binary_gradient_in_the_second_operand(name, first):
    op = getattr(cm, name)
    a, q = xo.tensor(first, "f64"), np.array([1.5, 2.0])
    g = np.asarray(xo.grad(lambda t: op(a, t).sum())(xo.tensor(q)))
    np.testing.assert_allclose(g, _central(lambda v: op(a, xo.tensor(v)), q), rtol=1e-7)


def test_op_without_rule_names_itself():
    with pytest.raises(xo.SpecError, match="chlo.bessel_i1e"):
        xo.grad(lambda t: cm.bessel_i1e(t).sum())(xo.tensor([0.5]))


def test_digamma_gradient_on_a_vector():
    x = np.array([0.7, 1.5, 3.25])
    g = xo.grad(lambda t: xo.reduce(cm.digamma(t), 0.0, [0], xo.add))(xo.tensor(x, "f64"))
    want = [_central(lambda v: cm.digamma(xo.tensor(v, "f64")), v) for v in x]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-7)
