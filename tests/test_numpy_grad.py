"""Gradients through xops.numpy: finite differences (tests/gradcheck.py) for the
composed functions and for the NumPy/LAPACK-backed primitives (second order where the
rule is built from xops ops)."""

import numpy as np
import pytest
from gradcheck import check_grads, check_vjp

import xops as xo
import xops.numpy as xnp

rng = np.random.default_rng(0)
X = rng.uniform(-0.9, 0.9, (3, 4))
P = rng.uniform(1.2, 2.0, (3, 4))


def _spd(n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


UNARY = {  # name -> input
    "asin": X,
    "acos": X,
    "atan": X,
    "asinh": X,
    "acosh": P,
    "atanh": X,
    "sinh": X,
    "cosh": X,
    "log2": P,
    "log10": P,
    "expm1": X,
    "log1p": P,
    "reciprocal": P,
    "square": X,
    "tan": X,
    "exp": X,
    "sqrt": P,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients(name):
    check_grads(getattr(xnp, name), [UNARY[name]], order=2)


@pytest.mark.parametrize(
    "name", ["hypot", "logaddexp", "atan2", "remainder", "copysign", "maximum", "divide", "pow"]
)
def test_binary_gradients(name):
    a, b = P, rng.uniform(0.5, 1.5, (4,))  # broadcast: b's gradient is summed back
    check_grads(getattr(xnp, name), [a, b], order=2 if name != "copysign" else 1)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: xnp.sum(x, axis=0),
        lambda x: xnp.prod(x, axis=1, keepdims=True),
        lambda x: xnp.mean(x),
        lambda x: xnp.var(x, axis=1, correction=1),
        lambda x: xnp.std(x, axis=0),
        lambda x: xnp.max(x, axis=1),
        lambda x: xnp.min(x),
        lambda x: xnp.cumulative_sum(x, axis=1, include_initial=True),
        lambda x: xnp.cumulative_prod(x, axis=0),
        lambda x: xnp.cumulative_prod(xnp.where(x > 0.3, 0.0, x), axis=1),  # zeros: exact path
        lambda x: xnp.sort(x, axis=1, descending=True),
        lambda x: xnp.clip(x, min=-0.5, max=0.5),
        lambda x: xnp.take(x, xnp.asarray([2, 0, 2]), axis=1),
        lambda x: xnp.take_along_axis(x, xnp.asarray([[0], [3], [1]]), axis=1),
        lambda x: xnp.roll(x, 2, axis=1),
        lambda x: xnp.tile(x, (2, 1)),
        lambda x: xnp.repeat(x, 2, axis=0),
        lambda x: xnp.flip(x),
        lambda x: xnp.moveaxis(x, 0, 1),
        lambda x: xnp.diff(x, n=2),
        lambda x: xnp.where(x > 0, x, 2.0 * x),
        lambda x: xnp.tril(x, k=1),
        lambda x: xnp.stack([x, x * 2], axis=1),
        lambda x: xnp.concat([x, x], axis=None),
        lambda x: xnp.einsum("ij,kj->ik", x, x),
        lambda x: xnp.einsum("ij->j", x),
        lambda x: xnp.tensordot(x, x, axes=([1], [1])),
        lambda x: xnp.vecdot(x, x),
        lambda x: xnp.linalg.vector_norm(x, ord=3, axis=1),
        lambda x: xnp.linalg.matrix_norm(x),
        lambda x: xnp.unique_values(x),
        lambda x: xnp.linalg.outer(x[0], x[1]),
        lambda x: xnp.linalg.cross(x[:, :3], x[:, 1:]),
        lambda x: x.T @ x,
    ],
    ids=lambda f: "",
)
def test_composed_gradients(fn):
    check_grads(fn, [X], order=1)


def _eigh_sign_free(x):  # eigenvectors are defined up to sign: use v * v
    w, v = xnp.linalg.eigh(x + x.mT)
    return w, v * v


def _svd_sign_free(x):
    u, s, vh = xnp.linalg.svd(x, full_matrices=False)
    return s, u * u, vh * vh


def _qr_positive_diagonal(x):  # fix the signs so that diag(R) > 0
    q, r = xnp.linalg.qr(x)
    d = xnp.sign(xnp.linalg.diagonal(r))
    return q * d[..., None, :], r * d[..., :, None]


@pytest.mark.parametrize(
    "name",
    [
        "inv",
        "det",
        "solve",
        "cholesky",
        "logabsdet",
        "eigh",
        "eigvalsh",
        "svd",
        "svdvals",
        "qr",
        "pinv",
        "matrix_power",
    ],
)
def test_linalg_gradients(name):
    a = _spd(3, (2,))
    b = rng.standard_normal((2, 3, 2))
    tall, wide = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    fns = {
        "inv": (xnp.linalg.inv, [a]),
        "det": (xnp.linalg.det, [a]),
        "solve": (xnp.linalg.solve, [a, b]),
        "cholesky": (lambda x: xnp.linalg.cholesky(x + x.mT), [a]),
        "logabsdet": (lambda x: xnp.linalg.slogdet(x).logabsdet, [a]),
        "eigh": (_eigh_sign_free, [a]),
        "eigvalsh": (lambda x: xnp.linalg.eigvalsh(x + x.mT), [a]),
        "svd": (_svd_sign_free, [tall]),
        "svdvals": (xnp.linalg.svdvals, [wide]),
        "qr": (_qr_positive_diagonal, [tall]),
        "pinv": (xnp.linalg.pinv, [tall]),
        "matrix_power": (lambda x: xnp.linalg.matrix_power(x, -2), [a]),
    }
    fn, args = fns[name]
    check_vjp(fn, args, rtol=1e-5, atol=1e-6)


def test_fft_gradients():
    x = rng.standard_normal((3, 6))
    for fn in (
        lambda t: xnp.real(xnp.fft.fft(t, n=8, norm="ortho")),
        lambda t: xnp.fft.irfft(xnp.fft.rfft(t) * 2.0, n=6),
        lambda t: xnp.abs(xnp.fft.fftn(t, axes=(0, 1))),
        lambda t: xnp.fft.fftshift(t, axes=1),
    ):
        check_grads(fn, [x])


def test_no_gradient_rule_is_an_error_not_a_zero():
    x = xo.tensor(np.eye(2) * 2.0, requires_grad=True)
    w = xnp.linalg.eig(x).eigenvalues
    with pytest.raises(xo.SpecError, match="eig"):
        xnp.sum(xnp.real(w)).backward()


def test_grad_through_methods_and_operators():
    x = xo.tensor(X, requires_grad=True)
    loss = ((x * 2 - 1) ** 2).mean() + x.std(axis=0).sum() + (x @ x.T).max()
    loss.backward()
    g = np.asarray(x.grad)

    def ref(v):
        return ((v * 2 - 1) ** 2).mean() + v.std(axis=0).sum() + (v @ v.T).max()

    eps = 1e-6
    num = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        d = np.zeros_like(X)
        d[i] = eps
        num[i] = (ref(X + d) - ref(X - d)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "name",
    [
        "asin",
        "acos",
        "atan",
        "asinh",
        "atanh",
        "sinh",
        "cosh",
        "log2",
        "log10",
        "reciprocal",
        "inv",
        "det",
        "solve",
    ],
)
def test_complex_gradients_jax_convention(name):
    z = rng.uniform(-0.5, 0.5, (3, 3)) + 1j * rng.uniform(-0.5, 0.5, (3, 3))
    if name in ("inv", "det"):
        check_vjp(getattr(xnp.linalg, name), [z + 2 * np.eye(3)])
    elif name == "solve":
        check_vjp(xnp.linalg.solve, [z + 2 * np.eye(3), z[:, :2] + 0.5])
    else:
        check_vjp(getattr(xnp, name), [z])


def test_complex_rules_that_are_missing_raise():
    z = xo.tensor(np.eye(2) * (1 + 1j), requires_grad=True)
    with pytest.raises(xo.SpecError, match="eigh"):
        xnp.sum(xnp.linalg.eigvalsh(z)).backward()
