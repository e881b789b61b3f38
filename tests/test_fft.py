"""fft against the spec's example, NumPy's FFT over a zoo (all four types, 1-3 dims,
batch dims, odd and even lengths, f32/f64), every constraint label, and the gradient
rules (finite differences and jax.vjp)."""

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec
from gradcheck import check_grads


def test_spec_example():
    out = xo.fft(xo.tensor([1, 0, 0, 0], "c64"), "FFT", [4])
    assert_tensor(out, np.ones(4, np.complex64), "c64")


def _data(rng, shape, complex_, dtype):
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _reference(x, t, lengths):
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    fn = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}[t]
    return fn(x.astype(np.complex128 if t != "RFFT" else np.float64), s=lengths, axes=axes)


SHAPES = [  # (real-side shape, number of transformed dims)
    ((8,), 1),
    ((7,), 1),
    ((1,), 1),
    ((2,), 1),
    ((3, 6), 1),
    ((2, 3, 5), 1),
    ((4, 6), 2),
    ((3, 5), 2),
    ((2, 4, 3), 2),
    ((2, 3, 4), 3),
    ((3, 3, 3), 3),
    ((2, 1, 2, 5), 3),
]


@pytest.mark.parametrize("t", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("precision", ["single", "double"])
def test_against_numpy(t, precision):
    rng = np.random.default_rng(0)
    single = precision == "single"
    real_np, cplx_np = (np.float32, np.complex64) if single else (np.float64, np.complex128)
    tol = dict(rtol=2e-5, atol=2e-5) if precision == "single" else dict(rtol=1e-12, atol=1e-12)
    for shape, L in SHAPES:
        lengths = list(shape[-L:])
        if t == "IRFFT":
            in_shape = shape[:-1] + (shape[-1] // 2 + 1,)
            x = _data(rng, in_shape, True, cplx_np)
            want_dt = real_np
        elif t == "RFFT":
            x = _data(rng, shape, False, real_np)
            want_dt = cplx_np
        else:
            x = _data(rng, shape, True, cplx_np)
            want_dt = cplx_np
        got = xo.fft(xo.tensor(x), t, lengths)
        want = _reference(x, t, lengths)
        assert got.dtype.np == want_dt, (shape, L)
        assert_tensor(got, want.astype(want_dt), exact=False, **tol)


def test_inverse_pairs_round_trip():
    rng = np.random.default_rng(1)
    x = _data(rng, (3, 4, 5), True, np.complex128)
    y = xo.fft(xo.fft(xo.tensor(x), "FFT", [4, 5]), "IFFT", [4, 5])  # IFFT is normalised
    assert_tensor(y, x, exact=False, rtol=1e-12, atol=1e-12)
    r = _data(rng, (2, 6, 7), False, np.float64)
    back = xo.fft(xo.fft(xo.tensor(r), "RFFT", [6, 7]), "IRFFT", [6, 7])
    assert_tensor(back, r, exact=False, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [4, 5])
def test_irfft_ignores_imaginary_parts_of_dc_and_nyquist(n):
    rng = np.random.default_rng(2)
    x = _data(rng, (3, n // 2 + 1), True, np.complex128)
    clean = x.copy()
    clean[:, 0] = clean[:, 0].real
    if n % 2 == 0:
        clean[:, -1] = clean[:, -1].real
    a = xo.fft(xo.tensor(x), "IRFFT", [n])
    b = xo.fft(xo.tensor(clean), "IRFFT", [n])
    assert_tensor(a, np.asarray(b), exact=False, rtol=1e-14, atol=1e-14)
    if n % 2:  # for odd n the last bin is an ordinary one: its imaginary part counts
        assert not np.allclose(np.asarray(a), np.fft.irfft(x.real, n))


def test_irfft_multidim_ignores_dc_after_the_outer_transforms():
    # spec: IFFT over the outer axes first, then IRFFT (real) on the innermost
    rng = np.random.default_rng(3)
    x = _data(rng, (4, 3), True, np.complex128)
    got = np.asarray(xo.fft(xo.tensor(x), "IRFFT", [4, 4]))
    inner = np.fft.ifft(x, axis=0)
    np.testing.assert_allclose(got, np.fft.irfft(inner, 4, axis=1), rtol=1e-13, atol=1e-13)


def test_empty_and_size_one():
    assert_tensor(
        xo.fft(xo.tensor(np.zeros((0, 4), np.complex64)), "FFT", [4]),
        np.zeros((0, 4), np.complex64),
    )
    assert_tensor(
        xo.fft(xo.tensor(np.zeros((3, 0), np.float32)), "RFFT", [0]), np.zeros((3, 0), np.complex64)
    )
    assert_tensor(
        xo.fft(xo.tensor(np.zeros((2, 0), np.complex128)), "IRFFT", [0]),
        np.zeros((2, 0), np.float64),
    )
    assert_tensor(
        xo.fft(xo.tensor(np.array([2.5 + 1j], np.complex64)), "IFFT", [1]),
        np.array([2.5 + 1j], np.complex64),
    )


def test_batched_large_input_uses_all_cores_same_result():
    rng = np.random.default_rng(4)
    x = _data(rng, (256, 512), True, np.complex64)
    got = xo.fft(xo.tensor(x), "FFT", [512])
    assert_tensor(
        got,
        np.fft.fft(x.astype(np.complex128)).astype(np.complex64),
        exact=False,
        rtol=1e-4,
        atol=1e-4,
    )


def test_constraints():
    c = xo.tensor(np.zeros((2, 4), np.complex64))
    r = xo.tensor(np.zeros((2, 4), np.float32))
    with raises_spec("fft", "I2"):
        xo.fft(c, "DCT", [4])
    with raises_spec("fft", "I3"):
        xo.fft(c, "FFT", [-4])
    with raises_spec("fft", "C1"):
        xo.fft(c, "FFT", [1, 2, 4])
    with raises_spec("fft", "C2"):
        xo.fft(r, "FFT", [4])
    with raises_spec("fft", "C2"):
        xo.fft(c, "RFFT", [4])
    with raises_spec("fft", "C2"):
        xo.fft(r, "IRFFT", [6])
    with raises_spec("fft", "C2"):
        xo.fft(xo.tensor(np.zeros(4), "bf16"), "RFFT", [4])
    with raises_spec("fft", "C3"):
        xo.fft(xo.tensor(np.zeros((1, 1, 1, 1), np.complex64)), "FFT", [1, 1, 1, 1])
    with raises_spec("fft", "C3"):
        xo.fft(c, "FFT", [])
    with raises_spec("fft", "C4"):
        xo.fft(r, "RFFT", [5])
    with raises_spec("fft", "C4"):
        xo.fft(c, "FFT", [8])
    with raises_spec("fft", "C4"):
        xo.fft(xo.tensor(np.zeros((3, 3), np.complex64)), "IRFFT", [2, 4])
    with raises_spec("fft", "C5"):
        xo.fft(c, "IRFFT", [4])  # last dim must be 4 // 2 + 1 = 3


# ---------------------------------------------------------------------------------------
# Gradients: JAX's convention for complex cotangents (tests/gradcheck.py pairs complex
# values bilinearly, Re sum(a * b)); jax.vjp cross-checks the convention itself.
# ---------------------------------------------------------------------------------------


def _rand_like(rng, a):
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
    return rng.standard_normal(a.shape)


GRAD_CASES = [
    ("FFT", (3, 4), [4]),
    ("IFFT", (2, 3, 5), [3, 5]),
    ("RFFT", (2, 6), [6]),
    ("RFFT", (3, 4, 5), [4, 5]),
    ("IRFFT", (2, 4), [6]),
    ("IRFFT", (3, 3), [3, 5]),
    ("IRFFT", (2, 2, 3), [2, 2, 4]),
]


def _grad_input(t, shape, seed=0):
    rng = np.random.default_rng(seed)
    return _data(rng, shape, t != "RFFT", np.complex128 if t != "RFFT" else np.float64)


@pytest.mark.parametrize("t,shape,lengths", GRAD_CASES)
def test_gradient_finite_differences_first_and_second_order(t, shape, lengths):
    check_grads(lambda v: xo.fft(v, t, lengths), [_grad_input(t, shape)], order=2)


@pytest.mark.parametrize("t,shape,lengths", GRAD_CASES)
def test_gradient_matches_jax(t, shape, lengths):
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        x = _grad_input(t, shape)
        jt = getattr(jax.lax.FftType, t)
        out, fn = jax.vjp(lambda v: jax.lax.fft(v, jt, tuple(lengths)), x)
        u = _rand_like(np.random.default_rng(1), out).astype(np.asarray(out).dtype)
        (want,) = fn(u)
        _, xfn = xo.vjp(lambda v: xo.fft(v, t, lengths), xo.tensor(x))
        (got,) = xfn(xo.tensor(u))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_real_loss_gradient_through_rfft():
    # |RFFT(x)|^2 summed with Hermitian weights is n * ||x||^2 (Parseval): gradient 2 n x
    x = np.random.default_rng(5).standard_normal(8)
    w = np.array([1, 2, 2, 2, 1], np.float64)

    def energy(v):
        y = xo.fft(v, "RFFT", [8])
        p = xo.add(xo.multiply(xo.real(y), xo.real(y)), xo.multiply(xo.imag(y), xo.imag(y)))
        return xo.dot_general(
            p, xo.tensor(w), lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[0]
        )

    g = xo.grad(energy)(xo.tensor(x))
    np.testing.assert_allclose(np.asarray(g), 2 * 8 * x, rtol=1e-12)


def test_second_order_through_rfft():
    # the Hessian of the Parseval energy above is 2 n I: a Hessian-vector product
    x = np.random.default_rng(5).standard_normal(8)
    q = np.random.default_rng(6).standard_normal(8)
    w = xo.tensor(np.array([1, 2, 2, 2, 1], np.float64))

    def dot(a, b):
        return xo.dot_general(a, b, lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[0])

    def energy(v):
        y = xo.fft(v, "RFFT", [8])
        return dot(
            xo.add(xo.multiply(xo.real(y), xo.real(y)), xo.multiply(xo.imag(y), xo.imag(y))), w
        )

    hv = xo.grad(lambda v: dot(xo.grad(energy)(v), xo.tensor(q)))(xo.tensor(x))
    np.testing.assert_allclose(np.asarray(hv), 16 * q, rtol=1e-12)


def test_fft_ops_are_primitives_on_the_tape():
    assert xo.fft.op_name == "fft"
    assert xo.cholesky.op_name == "cholesky" and xo.triangular_solve.op_name == "triangular_solve"
