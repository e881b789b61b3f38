"""CUDA kernels of cholesky, triangular_solve and map (xops/kernels/cuda/solve.py), each
result compared with the CPU op's: every attribute (lower / upper, left / right side,
NO_TRANSPOSE / TRANSPOSE / ADJOINT, unit_diagonal), batches, garbage (NaN) in the
triangle that must not be read, matrices that are not positive definite (all NaN, as the
CPU), size-0 matrices and batches, c64 / c128 (ADJOINT conjugates), bf16 / f16 through f32,
and the same SpecError labels.
Float tolerance: the device sums in a fixed order that differs from LAPACK's blocked
one, so results agree within 4e-6 (f32) / 1e-13 (f64) of each result's largest
magnitude (the matrices are well conditioned); bf16 / f16 within one ulp of their type.
map: bodies of device ops run on the device, bit-exact with the CPU for exact ops."""

import numpy as np
import pytest
from cuda_support import cu, needs_cuda

import xops as xo

from conftest import raises_spec

pytestmark = needs_cuda

TOL = {"f32": 4e-6, "f64": 1e-13, "bf16": 2.0**-7, "f16": 2.0**-10, "c64": 4e-6, "c128": 1e-13}
rng = np.random.default_rng(5)


def _parts(a):
    """float64 values of ``a``; a complex array's real and imaginary parts side by side."""
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], axis=-1).astype(np.float64)
    return a.astype(np.float64)


def _close(dev, ref, dtype):
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    d, r = _parts(dev.numpy()), _parts(ref.numpy())
    np.testing.assert_array_equal(np.isnan(d), np.isnan(r))
    scale = np.nanmax(np.abs(r), initial=0.0)
    np.testing.assert_allclose(np.nan_to_num(d), np.nan_to_num(r), rtol=0, atol=TOL[dtype] * scale)


def _spd(batch, n, dtype="f64"):
    """Well-conditioned Hermitian positive definite matrices, the triangle above the
    diagonal overwritten with NaN (it must not be read for lower=True); complex ones with
    an imaginary part on the diagonal (cholesky ignores it)."""
    m = rng.standard_normal(batch + (n, n))
    if dtype.startswith("c"):
        m = m + 1j * rng.standard_normal(batch + (n, n))
    a = m @ np.conj(np.swapaxes(m, -1, -2)) / n + np.eye(n)
    if dtype.startswith("c"):
        a = a + 0.25j * np.eye(n)
    a[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = np.nan
    return a


@pytest.mark.parametrize("dtype", sorted(TOL))
def test_cholesky_lower_and_upper(dtype):
    for batch, n in (((), 1), ((), 5), ((2,), 4), ((2, 1), 3)):
        a = _spd(batch, n, dtype)
        for lower in (True, False):
            v = a if lower else np.conj(np.swapaxes(a, -1, -2))  # the NaNs below the diagonal
            x = xo.tensor(v, dtype)
            _close(xo.cholesky(x.to("cuda"), lower=lower), xo.cholesky(x, lower=lower), dtype)
    x = xo.tensor(_spd((), 3), "f32")
    _close(xo.cholesky(x.to("cuda"), True), xo.cholesky(x, True), "f32")  # positional lower
    _close(xo.cholesky(x.T.to("cuda")), xo.cholesky(x.T), "f32")  # default: upper


def test_cholesky_spec_example_and_failures():
    a = [[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]]
    out = xo.cholesky(cu(a, "f64"), lower=True)
    np.testing.assert_allclose(out.numpy(), [[1, 0, 0], [2, 4, 0], [3, 5, 6]], rtol=1e-15)
    a = np.nan_to_num(_spd((3,), 4), nan=0.0)
    a[1] = -a[1]  # not positive definite: that matrix all NaN, the others fine
    a[2, 3, 1] = np.nan  # a NaN in the read triangle: that matrix all NaN too
    x = xo.tensor(a, "f64")
    dev = xo.cholesky(x.to("cuda"), lower=True)
    _close(dev, xo.cholesky(x, lower=True), "f64")
    assert np.isnan(dev.numpy()[1:]).all() and not np.isnan(dev.numpy()[0]).any()
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        x = xo.tensor(np.zeros(shape, np.float32))
        _close(xo.cholesky(x.to("cuda")), xo.cholesky(x), "f32")


def _triangular(batch, n, lower, dtype):
    """Well-conditioned triangular matrices with NaN in the triangle that is not read."""
    a = rng.standard_normal(batch + (n, n)) / n + 2 * np.eye(n)
    if dtype.startswith("c"):
        a = a + 1j * rng.standard_normal(batch + (n, n)) / n
    i, j = np.triu_indices(n, 1) if lower else np.tril_indices(n, -1)
    a[..., i, j] = np.nan
    return xo.tensor(a, dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
def test_triangular_solve_every_attribute(dtype):
    for left in (True, False):
        for lower in (True, False):
            for mode in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
                for unit in (False, True):
                    a = _triangular((2,), 4, lower, dtype)
                    bs = (2, 4, 3) if left else (2, 3, 4)
                    b = xo.tensor(rng.standard_normal(bs) + 1j * rng.standard_normal(bs), "c128")
                    b = xo.real(b) if dtype[0] == "f" else b
                    b = xo.convert(b, dtype)
                    args = (left, lower, unit, mode)
                    dev = xo.triangular_solve(a.to("cuda"), b.to("cuda"), *args)
                    _close(dev, xo.triangular_solve(a, b, *args), dtype)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_triangular_solve_narrow_and_shapes(dtype):
    for batch, n, k in (((), 1, 1), ((), 5, 2), ((3,), 3, 1), ((0,), 2, 2), ((), 2, 0)):
        a = _triangular(batch, n, True, dtype)
        b = xo.tensor(rng.standard_normal(batch + (n, k)), dtype)
        for mode in ("NO_TRANSPOSE", "TRANSPOSE"):
            dev = xo.triangular_solve(a.to("cuda"), b.to("cuda"), True, True, False, mode)
            _close(dev, xo.triangular_solve(a, b, True, True, False, mode), dtype)
    a, b = [[1.0, 0.0], [2.0, 4.0]], [[2.0, 0.0], [4.0, 8.0]]  # the spec's example, smaller
    out = xo.triangular_solve(cu(a), cu(b), True, True, False, "NO_TRANSPOSE")
    assert out.tolist() == [[2.0, 0.0], [0.0, 2.0]]


def test_errors_match_the_cpu():
    sq, b = np.eye(3, dtype=np.float32), np.ones((3, 2), np.float32)

    def ts(a, b, left=True, mode="ADJOINT"):
        return lambda t: xo.triangular_solve(t(a), t(b), left, True, False, mode)

    cases = [
        ("cholesky", "I1", lambda t: xo.cholesky(t(np.eye(2, dtype=np.int32)))),
        ("cholesky", "I2", lambda t: xo.cholesky(t(sq), lower="yes")),
        ("cholesky", "C2", lambda t: xo.cholesky(t(np.ones(3, np.float32)))),
        ("cholesky", "C3", lambda t: xo.cholesky(t(b))),
        ("triangular_solve", "I6", ts(sq, b, mode="T")),
        ("triangular_solve", "I3", ts(sq, b, left=2)),
        ("triangular_solve", "C1", ts(sq, b.astype(np.float64))),
        ("triangular_solve", "C2", ts(sq, b[None])),
        ("triangular_solve", "C3", ts(sq, b, left=False)),
        ("triangular_solve", "C3", ts(sq[None], np.stack([b, b]))),
    ]
    for op, label, call in cases:
        for t in (cu, xo.tensor):
            with raises_spec(op, label):
                call(t)
    from xops.kernels.cuda.narrow import NARROW

    no_kernel = [t for t in ("f8E8M0FNU", "f4E2M1FN", "f6E2M3FN") if t not in NARROW]
    for dtype in no_kernel[:1]:  # a float type the device computes nothing in
        c1, c2 = np.eye(2), np.ones((2, 1))
        for call in (
            lambda: xo.cholesky(cu(c1, dtype)),
            lambda: ts(c1, c2)(lambda v: cu(v, dtype)),
        ):
            with pytest.raises(
                xo.SpecError, match=rf"^[a-z_]+ \(device\): has no cuda kernel.*{dtype}"
            ):
                call()
    with pytest.raises(xo.SpecError, match=r"^triangular_solve \(device\): operands live on"):
        xo.triangular_solve(cu(sq), xo.tensor(b), True, True, False, "NO_TRANSPOSE")


def test_map_runs_its_body_on_the_device():
    x = rng.integers(-9, 9, (2, 3)).astype(np.int32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    cases = [
        ([x, x], xo.multiply),
        ([y], lambda a: xo.add(xo.multiply(a, a), 1.0)),
        ([x, y], lambda a, b: xo.select(xo.compare(a, 0, "GT"), b, -b)),
        ([y], lambda a: 3.5),  # a constant body: broadcast on the device
        ([y], lambda a: xo.tensor(2.0, "f64")),
    ]
    for inputs, body in cases:
        dev = xo.map([cu(v) for v in inputs], [0, 1], body)
        ref = xo.map([xo.tensor(v) for v in inputs], [0, 1], body)
        assert dev.device == "cuda:0" and dev.dtype == ref.dtype
        np.testing.assert_array_equal(dev.numpy(), ref.numpy())
    z = xo.map([cu(np.zeros((0, 2), np.float32))], [0, 1], xo.negate)
    assert z.device == "cuda:0" and z.shape == (0, 2)


def test_map_gradient_and_errors_on_the_device():
    def loss(t):
        return xo.reduce(xo.map([t, t], [0], xo.multiply), 0.0, [0], xo.add)

    g = xo.grad(loss)(cu([1.0, -2.0, 3.0]))
    assert g.device == "cuda:0" and g.tolist() == [2.0, -4.0, 6.0]
    x = cu([[1.0, 2.0]])
    for label, args in (
        ("C3", ([x], [1, 0], xo.negate)),
        ("C1", ([x, cu([1.0, 2.0])], [0, 1], xo.add)),
        ("C4", ([x], [0, 1], xo.add)),
        ("C4", ([x], [0, 1], lambda a: xo.slice(a, [0, 0], [1, 1], [1, 1]))),
    ):
        with raises_spec("map", label):
            xo.map(*args)
        with raises_spec("map", label):
            xo.map([t.to("cpu") for t in args[0]], *args[1:])
    with pytest.raises(xo.SpecError, match=r"^map \(device\): operands live on different"):
        xo.map([x, xo.tensor([[1.0, 2.0]])], [0, 1], xo.add)


def test_gradients_on_cuda_tensors():
    """The CPU rules run on the device (their constant masks made on the cotangent's
    device); cotangents within 1e-13 of the CPU's."""
    a = np.nan_to_num(_spd((2,), 3), nan=0.0)
    a = a + np.swapaxes(np.tril(a, -1), -1, -2)
    t, b = _triangular((2,), 3, True, "f64"), xo.tensor(rng.standard_normal((2, 3, 2)))
    t = xo.tensor(np.nan_to_num(t.numpy()))

    def total(v):
        return xo.reduce(v * v, 0.0, list(range(v.ndim)), xo.add)

    for lower in (True, False):
        f = lambda x: total(xo.cholesky(x, lower=lower))  # noqa: E731
        gd, gc = xo.grad(f)(cu(a, "f64")), xo.grad(f)(xo.tensor(a))
        _close(gd, gc, "f64")
    for mode in ("NO_TRANSPOSE", "TRANSPOSE"):
        f = lambda x, y: total(xo.triangular_solve(x, y, True, True, False, mode))  # noqa: E731
        gd = xo.grad(f, argnums=(0, 1))(t.to("cuda"), b.to("cuda"))
        for d, c in zip(gd, xo.grad(f, argnums=(0, 1))(t, b)):
            _close(d, c, "f64")
