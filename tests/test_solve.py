"""cholesky and triangular_solve against the spec's examples, the textbook references
in xops.ops.solve and NumPy, over a zoo (batch dims, lower/upper, left/right, every
transpose mode, unit diagonal, f32/f64/c64/c128, narrow floats via f32), every
constraint label, and the gradient rules (finite differences and jax.vjp)."""

import itertools

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec
from gradcheck import check_grads
from xops.ops.solve import cholesky_reference, triangular_solve_reference

MODES = ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]
TOL = {"f32": 2e-4, "c64": 2e-4, "f64": 1e-11, "c128": 1e-11}


def _np(dt):
    return xo.as_dtype(dt).np


def _spd(rng, batch, n, dt):
    """Well-conditioned Hermitian positive definite matrices."""
    m = rng.standard_normal(batch + (n, n))
    if np.dtype(_np(dt)).kind == "c":
        m = m + 1j * rng.standard_normal(batch + (n, n))
    a = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)
    return a.astype(_np(dt))


def _spoil(a, lower, value=np.nan):
    """a with the triangle cholesky / triangular_solve must not read set to value."""
    a = a.copy()
    n = a.shape[-1]
    hidden = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    a[..., hidden] = value
    return a


# ---------------------------------------------------------------------------------------
# cholesky
# ---------------------------------------------------------------------------------------


def test_cholesky_spec_example():
    a = xo.tensor([[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]])
    out = xo.cholesky(a, lower=True)
    assert_tensor(out, [[1.0, 0.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 6.0]], "f32")
    # (the spec prints an f64 result type for this f32 input: a misprint, C1 says same type)
    assert_tensor(xo.cholesky(a), [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 0.0, 6.0]])


@pytest.mark.parametrize("dt", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_zoo(dt, lower):
    rng = np.random.default_rng(0)
    for batch, n in [((), 1), ((), 4), ((3,), 5), ((2, 2), 3), ((0,), 3), ((2,), 0)]:
        a = _spd(rng, batch, n, dt)
        got = xo.cholesky(xo.tensor(_spoil(a, lower)), lower=lower)
        assert got.dtype == dt and got.shape == a.shape
        want = np.zeros_like(a)
        for idx in np.ndindex(*batch):
            want[idx] = cholesky_reference(
                a[idx].astype(np.complex128 if dt[0] == "c" else np.float64), lower
            )
        assert_tensor(got, want, exact=False, rtol=TOL[dt], atol=TOL[dt])
        v = np.asarray(got)  # the other triangle is exactly zero; the factor reproduces a
        k = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
        assert (v[..., k] == 0).all()
        h = np.conj(np.swapaxes(v, -1, -2))
        np.testing.assert_allclose(
            v @ h if lower else h @ v, a, rtol=TOL[dt] * 10, atol=TOL[dt] * 10 * n
        )


def test_cholesky_complex_diagonal_imaginary_part_is_ignored():
    a = _spd(np.random.default_rng(1), (), 3, "c128")
    b = a + 1j * np.diag([5.0, -2.0, 7.0])
    assert_tensor(xo.cholesky(xo.tensor(b), True), np.asarray(xo.cholesky(xo.tensor(a), True)))


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_cholesky_narrow_floats_via_f32(dt):
    a = _spd(np.random.default_rng(2), (2,), 3, "f64")
    x = xo.tensor(a, dt)
    got = xo.cholesky(x, lower=True)
    want = np.linalg.cholesky(np.asarray(x).astype(np.float32))  # f32, rounded once
    assert got.dtype == dt
    assert_tensor(got, want.astype(xo.as_dtype(dt).np))


def test_cholesky_not_positive_definite_gives_nans_for_that_matrix_only():
    good = _spd(np.random.default_rng(3), (), 3, "f64")
    bad = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    out = np.asarray(xo.cholesky(xo.tensor(np.stack([good, bad, good])), lower=True))
    assert np.isnan(out[1]).all()
    np.testing.assert_allclose(out[0], np.linalg.cholesky(good), rtol=1e-12)
    np.testing.assert_allclose(out[2], out[0])


def test_cholesky_constraints():
    with raises_spec("cholesky", "I1"):
        xo.cholesky(xo.tensor([[1, 0], [0, 1]], "i32"))
    with raises_spec("cholesky", "I2"):
        xo.cholesky(xo.tensor(np.eye(2)), lower=1)
    with raises_spec("cholesky", "C2"):
        xo.cholesky(xo.tensor([1.0, 2.0]))
    with raises_spec("cholesky", "C3"):
        xo.cholesky(xo.tensor(np.ones((2, 3))))


# ---------------------------------------------------------------------------------------
# triangular_solve
# ---------------------------------------------------------------------------------------


def test_triangular_solve_spec_example():
    a = xo.tensor([[1.0, 0.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 6.0]])
    b = xo.tensor([[2.0, 0.0, 0.0], [4.0, 8.0, 0.0], [6.0, 10.0, 12.0]])
    out = xo.triangular_solve(
        a, b, left_side=True, lower=True, unit_diagonal=False, transpose_a="NO_TRANSPOSE"
    )
    assert_tensor(out, 2 * np.eye(3), "f32")


def _tri(rng, batch, n, dt, lower):
    t = rng.standard_normal(batch + (n, n)) * 0.3
    if np.dtype(_np(dt)).kind == "c":
        t = t + 1j * rng.standard_normal(batch + (n, n)) * 0.3
    t = t + np.eye(n) * 2.0  # well conditioned
    return _spoil(t.astype(_np(dt)), lower)


@pytest.mark.parametrize("dt", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("left,lower", list(itertools.product([True, False], [True, False])))
def test_triangular_solve_zoo(dt, left, lower):
    rng = np.random.default_rng(4)
    for (batch, n, k), mode, unit in itertools.product(
        [((), 4, 3), ((2,), 3, 1), ((2, 3), 2, 4), ((), 1, 1)], MODES, [False, True]
    ):
        a = _tri(rng, batch, n, dt, lower)
        if unit:  # the diagonal must not be read either
            a[..., np.arange(n), np.arange(n)] = np.nan
        bshape = batch + ((n, k) if left else (k, n))
        b = (
            rng.standard_normal(bshape) + (1j * rng.standard_normal(bshape) if dt[0] == "c" else 0)
        ).astype(_np(dt))
        got = xo.triangular_solve(xo.tensor(a), xo.tensor(b), left, lower, unit, mode)
        assert got.dtype == dt and got.shape == b.shape
        want = np.empty(bshape, np.complex128 if dt[0] == "c" else np.float64)
        for idx in np.ndindex(*batch):
            want[idx] = triangular_solve_reference(
                a[idx].astype(want.dtype), b[idx], left, lower, unit, mode
            )
        assert_tensor(got, want.astype(_np(dt)), exact=False, rtol=TOL[dt] * 10, atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_triangular_solve_narrow_floats_via_f32(dt):
    rng = np.random.default_rng(5)
    a = xo.tensor(_tri(rng, (), 3, "f64", True), dt)
    b = xo.tensor(rng.standard_normal((3, 2)), dt)
    got = xo.triangular_solve(a, b, True, True, False, "NO_TRANSPOSE")
    import scipy.linalg

    want = scipy.linalg.solve_triangular(
        np.asarray(a).astype(np.float32),
        np.asarray(b).astype(np.float32),
        lower=True,
        check_finite=False,
    )
    assert got.dtype == dt
    assert_tensor(got, want.astype(xo.as_dtype(dt).np), exact=False, rtol=1e-2, atol=1e-2)


def test_triangular_solve_zero_diagonal_gives_inf_not_an_error():
    a = xo.tensor([[0.0, 0.0], [1.0, 1.0]])
    out = np.asarray(
        xo.triangular_solve(a, xo.tensor([[1.0], [1.0]]), True, True, False, "NO_TRANSPOSE")
    )
    assert not np.isfinite(out).all()


def test_triangular_solve_empty():
    out = xo.triangular_solve(
        xo.tensor(np.zeros((0, 3, 3))),
        xo.tensor(np.zeros((0, 3, 2))),
        True,
        True,
        False,
        "NO_TRANSPOSE",
    )
    assert out.shape == (0, 3, 2)
    out = xo.triangular_solve(
        xo.tensor(np.zeros((2, 2))), xo.tensor(np.zeros((0, 2))), False, True, False, "TRANSPOSE"
    )
    assert out.shape == (0, 2)


def test_triangular_solve_constraints():
    a, b = xo.tensor(np.eye(3)), xo.tensor(np.ones((3, 2)))
    ts = xo.triangular_solve
    with raises_spec("triangular_solve", "I1"):
        ts(xo.tensor(np.eye(3, dtype=np.int32)), b, True, True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "I2"):
        ts(a, xo.tensor(np.ones((3, 2), np.int64)), True, True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "I3"):
        ts(a, b, "yes", True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "I4"):
        ts(a, b, True, None, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "I5"):
        ts(a, b, True, True, 0, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "I6"):
        ts(a, b, True, True, False, "CONJUGATE")
    with raises_spec("triangular_solve", "C1"):
        ts(xo.tensor(np.eye(3, dtype=np.float32)), b, True, True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "C2"):
        ts(a, xo.tensor(np.ones(3)), True, True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "C2"):
        ts(xo.tensor(np.ones(3)), xo.tensor(np.ones(3)), True, True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "C2"):  # no broadcasting of a against b
        ts(a, xo.tensor(np.ones((2, 3, 2))), True, True, False, "NO_TRANSPOSE")
    with raises_spec("triangular_solve", "C3"):
        ts(
            xo.tensor(np.ones((2, 3, 3))),
            xo.tensor(np.ones((4, 3, 2))),
            True,
            True,
            False,
            "NO_TRANSPOSE",
        )
    with raises_spec("triangular_solve", "C3"):
        ts(a, b, False, True, False, "NO_TRANSPOSE")  # right side: b's last dim must be 3
    with raises_spec("triangular_solve", "C3"):
        ts(xo.tensor(np.ones((3, 2))), b, True, True, False, "NO_TRANSPOSE")


# ---------------------------------------------------------------------------------------
# Gradients: finite differences (tests/gradcheck.py: JAX's bilinear pairing for complex
# values), first and second order; jax.vjp cross-checks the complex convention
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_gradient_finite_differences_first_and_second_order(lower):
    a = _spd(np.random.default_rng(6), (2,), 4, "f64")
    check_grads(lambda x: xo.cholesky(x, lower), [a], order=2, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "left,lower,unit",
    [(True, True, False), (False, False, True), (True, False, True), (False, True, False)],
)
@pytest.mark.parametrize("mode", MODES)
def test_triangular_solve_gradient_finite_differences(left, lower, unit, mode):
    rng = np.random.default_rng(7)
    a = np.nan_to_num(_tri(rng, (2,), 3, "f64", lower), nan=0.7)
    b = rng.standard_normal((2, 3, 2) if left else (2, 2, 3))
    check_grads(lambda x, y: xo.triangular_solve(x, y, left, lower, unit, mode), [a, b])


def test_triangular_solve_second_order():
    rng = np.random.default_rng(8)
    a = np.nan_to_num(_tri(rng, (), 3, "f64", True), nan=0.3)
    b = rng.standard_normal((3, 2))
    check_grads(
        lambda x, y: xo.triangular_solve(x, y, True, True, False, "TRANSPOSE"), [a, b], order=2
    )


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_complex_gradient_finite_differences(lower):
    a = _spd(np.random.default_rng(11), (2,), 3, "c128")
    check_grads(lambda x: xo.cholesky(x, lower), [a], order=2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("left,lower,unit", [(True, True, False), (False, False, True)])
def test_triangular_solve_complex_gradient_finite_differences(left, lower, unit, mode):
    rng = np.random.default_rng(12)
    a = _tri(rng, (2,), 3, "c128", lower)
    a = np.where(np.isnan(a), 0.3 + 0.1j, a)
    bs = (2, 3, 2) if left else (2, 2, 3)
    b = rng.standard_normal(bs) + 1j * rng.standard_normal(bs)
    check_grads(lambda x, y: xo.triangular_solve(x, y, left, lower, unit, mode), [a, b], order=2)


def _jax_cotangents(jfn, args, out_ct):
    import jax

    out, fn = jax.vjp(jfn, *args)
    return [np.asarray(c) for c in fn(out_ct)]


@pytest.mark.parametrize("left,lower,unit", [(True, True, False), (False, False, True)])
@pytest.mark.parametrize("mode", MODES)
def test_triangular_solve_complex_gradient_matches_jax(left, lower, unit, mode):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    rng = np.random.default_rng(9)
    a = _tri(rng, (2,), 3, "c128", lower)
    a = np.where(np.isnan(a), 0.5 + 0.25j, a)  # values the op must ignore
    bs = (2, 3, 2) if left else (2, 2, 3)
    b = rng.standard_normal(bs) + 1j * rng.standard_normal(bs)
    u = rng.standard_normal(bs) + 1j * rng.standard_normal(bs)

    def jfn(x, y):
        n = x.shape[-1]
        k = (-1 if lower else 1) if unit else 0
        t = jnp.tril(x, k) if lower else jnp.triu(x, k)  # the entries xops reads
        if unit:
            t = t + jnp.eye(n)
        return jax.lax.linalg.triangular_solve(
            t,
            y,
            left_side=left,
            lower=lower,
            transpose_a=mode != "NO_TRANSPOSE",
            conjugate_a=mode == "ADJOINT",
        )

    with jax.enable_x64(True):
        want = _jax_cotangents(jfn, (a, b), u)
    _, fn = xo.vjp(
        lambda x, y: xo.triangular_solve(x, y, left, lower, unit, mode), xo.tensor(a), xo.tensor(b)
    )
    got = fn(xo.tensor(u))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_complex_gradient_matches_jax(lower):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    rng = np.random.default_rng(10)
    a = _spd(rng, (2,), 3, "c128")
    u = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)

    def jfn(x):
        # the Hermitian matrix xops reads: one triangle, a real diagonal
        t = jnp.tril(x, -1) if lower else jnp.triu(x, 1)
        diag = jnp.real(jnp.diagonal(x, 0, -2, -1))[..., None] * jnp.eye(x.shape[-1])
        h = t + jnp.conj(jnp.swapaxes(t, -1, -2)) + diag
        L = jax.lax.linalg.cholesky(h, symmetrize_input=False)
        return L if lower else jnp.conj(jnp.swapaxes(L, -1, -2))

    with jax.enable_x64(True):
        (want,) = _jax_cotangents(jfn, (a,), u)
    _, fn = xo.vjp(lambda x: xo.cholesky(x, lower), xo.tensor(a))
    (got,) = fn(xo.tensor(u))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)
