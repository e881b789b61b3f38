"""xo.jvp, xo.jacrev, xo.jacfwd, xo.hessian, xo.stop_gradient: closed-form Jacobians and
Hessians, finite differences, and JAX where it is installed."""

import numpy as np
import pytest

import xops as xo

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 2))
X0 = np.array([0.3, -1.2])


def T(a):
    return xo.tensor(a)


def _lin_tanh(x):  # tanh(A x)
    return xo.tanh(xo.dot_general(T(A), x, lhs_contracting_dimensions=[1],
                                  rhs_contracting_dimensions=[0]))  # fmt: skip


def _jac_lin_tanh(x):
    return (1 - np.tanh(A @ x) ** 2)[:, None] * A


def _scalar(x):  # sum(exp(x) sin(x))
    return xo.reduce(xo.multiply(xo.exponential(x), xo.sine(x)), 0.0, [0], xo.add)


@pytest.mark.parametrize("transform", [xo.jacrev, xo.jacfwd])
def test_jacobians(transform):
    np.testing.assert_allclose(np.asarray(transform(_lin_tanh)(T(X0))), _jac_lin_tanh(X0),
                               rtol=1e-13)  # fmt: skip
    # several arguments, matrix-shaped: out.shape + in.shape
    m = RNG.standard_normal((2, 3))
    ja, jb = transform(lambda a, b: xo.multiply(a, b), argnums=(0, 1))(T(m), T(m + 1))
    assert ja.shape == jb.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(np.asarray(ja).reshape(6, 6), np.diag((m + 1).ravel()))
    np.testing.assert_allclose(np.asarray(jb).reshape(6, 6), np.diag(m.ravel()))
    # a tuple of outputs; has_aux
    (j1, j2), aux = transform(lambda x: ((xo.sine(x), xo.multiply(x, x)), x), has_aux=True)(T(X0))
    np.testing.assert_allclose(np.asarray(j1), np.diag(np.cos(X0)), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(j2), np.diag(2 * X0), rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(aux), X0)


def test_jvp_and_hessian():
    t = np.array([1.0, 2.0])
    out, tan = xo.jvp(_lin_tanh, (T(X0),), (T(t),))
    np.testing.assert_allclose(np.asarray(out), np.tanh(A @ X0), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(tan), _jac_lin_tanh(X0) @ t, rtol=1e-13)
    h = np.asarray(xo.hessian(_scalar)(T(X0)))
    np.testing.assert_allclose(h, np.diag(2 * np.exp(X0) * np.cos(X0)), rtol=1e-13, atol=1e-15)
    # nests: the jacobian of the gradient is the hessian
    jg = xo.jacrev(xo.grad(_scalar))(T(X0))
    np.testing.assert_allclose(np.asarray(jg), h, rtol=1e-13, atol=1e-15)
    # jvp of a gradient (a Hessian-vector product) by finite differences
    _, hv = xo.jvp(xo.grad(_scalar), (T(X0),), (T(t),))
    np.testing.assert_allclose(np.asarray(hv), h @ t, rtol=1e-12)


def test_stop_gradient():
    g = xo.grad(lambda x: xo.reduce(xo.multiply(x, xo.stop_gradient(x)), 0.0, [0], xo.add))
    np.testing.assert_array_equal(np.asarray(g(T(X0))), X0)  # d/dx x sg(x) = sg(x)
    tree = xo.stop_gradient({"a": T(X0), "b": [T(X0)]})
    assert not tree["a"].requires_grad and not tree["b"][0].requires_grad


def test_transforms_vs_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def fj(x, y):
        return jnp.sin(x) * jnp.exp(y[:2]) + x**3

    def fx(x, y):
        return xo.add(xo.multiply(xo.sine(x), xo.exponential(xo.slice(y, [0], [2], [1]))),
                      xo.power(x, T(np.array([3.0, 3.0]))))  # fmt: skip

    y0 = np.array([0.5, -0.1, 2.0])
    for mine, theirs in ((xo.jacrev, jax.jacrev), (xo.jacfwd, jax.jacfwd)):
        got = mine(fx, argnums=(0, 1))(T(X0), T(y0))
        want = theirs(fj, argnums=(0, 1))(X0, y0)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13)
    h = xo.hessian(lambda x: xo.reduce(fx(x, T(y0)), 0.0, [0], xo.add))(T(X0))
    np.testing.assert_allclose(np.asarray(h), jax.hessian(lambda x: fj(x, y0).sum())(X0),
                               rtol=1e-12)  # fmt: skip
