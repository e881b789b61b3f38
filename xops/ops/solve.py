"""Factorisation and triangular solves: stablehlo.cholesky and
stablehlo.triangular_solve, batched over leading dimensions.

Both run on LAPACK/BLAS (NumPy's batched ``cholesky`` gufunc, LAPACK ``potrf`` and
BLAS ``trsm`` through SciPy) in the element type's compute precision: f32, f64,
complex<f32>, complex<f64>; narrow floats (bf16, f16, f8...) compute in f32 and round
once to their type. Each reads only the triangle of ``a`` it is told to (the other
triangle may hold anything, NaN included), as the spec requires.

Implementation-defined cases (spec: "implementation-defined" / "undefined"):

* cholesky: the output triangle opposite ``lower`` is zero. A matrix that is not
  (numerically) Hermitian positive definite gives a matrix of NaNs for that batch
  element, as XLA/JAX do on CPU; the other batch elements are unaffected.
* triangular_solve: a zero on the (read) diagonal divides by zero, giving inf/NaN in
  the affected columns as BLAS trsm does (no error, as XLA).
"""

import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import from_compute
from ..tensor import _wrap
from ._core import attr_bool, check, check_kind, compute, operands, tstr

__all__ = ["cholesky", "triangular_solve"]

_TRANSPOSE = ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")


def _inexact(op, label, t, name):
    check_kind(op, label, name, t, ("float", "complex"))


def _batched(v):
    """v (..., m, n) as (batch, m, n) plus the batch shape."""
    return v.reshape((-1,) + v.shape[-2:]), v.shape[:-2]


# ---------------------------------------------------------------------------------------
# cholesky
# ---------------------------------------------------------------------------------------


@primitive("cholesky", quantized="dequantize")
def cholesky(a, lower=False):
    """stablehlo.cholesky: the Cholesky factor of each Hermitian positive definite
    matrix in ``a`` (its last two dims; leading dims are batch dims): lower triangular
    L with a = L Lᴴ if ``lower``, else upper triangular U with a = Uᴴ U.

    Only the chosen triangle of ``a`` is read (a complex diagonal's imaginary part is
    ignored); the other output triangle is zero. A matrix that is not positive definite
    gives NaNs (XLA's behaviour; the spec leaves it undefined). (C2) rank >= 2,
    (C3) square.

    >>> a = xo.tensor([[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]])
    >>> xo.cholesky(a, lower=True)   # [[1, 0, 0], [2, 4, 0], [3, 5, 6]] (spec example)
    xo.tensor([[1., 0., 0.],
               [2., 4., 0.],
               [3., 5., 6.]], f32[3,3])
    """
    x, low = cholesky_checks(a, lower)
    v = compute(x)
    out = _cholesky_impl(v, low)
    return _wrap(from_compute(out, x._dtype), x._dtype)


def cholesky_checks(a, lower):
    """cholesky's checks, on types only (the CUDA kernel runs them too): ``(a, lower)``."""
    op = "cholesky"
    (x,) = operands(op, a, names=["a"])
    low = attr_bool(op, "I2", "lower", lower)
    _inexact(op, "I1", x, "a")
    check(x.ndim >= 2, op, "C2", lambda: f"a must have rank >= 2, got {tstr(x)}")
    check(
        tuple(x.shape)[-2:] == tuple(x.shape)[-1:] * 2,
        op,
        "C3",
        lambda: f"a's last two dims must be equal (square matrices), got {tstr(x)}",
    )
    return x, low


def _cholesky_impl(v, low):
    if v.size == 0:
        return np.zeros_like(v)
    try:
        with np.errstate(all="ignore"):
            out = np.linalg.cholesky(v, upper=not low)
    except np.linalg.LinAlgError:  # some matrix is not positive definite: one by one
        out = _cholesky_each(v, low)
    out = np.tril(out) if low else np.triu(out)
    failed = np.isnan(out).any(axis=(-2, -1))  # (NumPy may also just leave NaNs)
    if failed.any():
        out[failed] = np.nan  # the whole matrix, as XLA
    return out


def _cholesky_each(v, low):
    from scipy.linalg import lapack

    mats, batch = _batched(v)
    (potrf,) = lapack.get_lapack_funcs(("potrf",), (mats,))
    out = np.empty_like(mats)
    for i, m in enumerate(mats):
        c, info = potrf(m, lower=low, clean=1)
        out[i] = c if info == 0 else np.nan
    return out.reshape(v.shape)


def cholesky_reference(a, lower):
    """The textbook Cholesky-Banachiewicz recurrence on one matrix (NumPy array),
    reading only the ``lower`` (or upper) triangle: the oracle for the tests."""
    a = np.asarray(a)
    h = a if lower else a.conj().T  # upper triangle of a = lower triangle of aᴴ
    n = h.shape[0]
    L = np.zeros_like(h)
    for i in range(n):
        for j in range(i + 1):
            s = h[i, j] - np.dot(L[i, :j], L[j, :j].conj())
            L[i, j] = np.sqrt(s.real) if i == j else s / L[j, j]
    return L if lower else L.conj().T


# ---------------------------------------------------------------------------------------
# triangular_solve
# ---------------------------------------------------------------------------------------


@primitive("triangular_solve", quantized="dequantize")
def triangular_solve(a, b, left_side, lower, unit_diagonal, transpose_a):
    """stablehlo.triangular_solve: x with op(a) x = b (``left_side``) or x op(a) = b,
    batched over the leading dims, where op(a) is a, aᵀ or aᴴ for ``transpose_a`` =
    ``"NO_TRANSPOSE"``, ``"TRANSPOSE"`` or ``"ADJOINT"``.

    Only the ``lower`` (else upper) triangle of a is read; with ``unit_diagonal`` the
    diagonal is taken to be 1 and not read either. a and b have one element type (C1),
    the same rank >= 2 (C2) and the same batch dims — no broadcasting — with a square
    and its size that of b's dim -2 (left) or -1 (right) (C3).

    >>> a = xo.tensor([[1.0, 0.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 6.0]])
    >>> b = xo.tensor([[2.0, 0.0, 0.0], [4.0, 8.0, 0.0], [6.0, 10.0, 12.0]])
    >>> xo.triangular_solve(a, b, True, True, False, "NO_TRANSPOSE")   # 2 * identity
    xo.tensor([[2., 0., 0.],
               [0., 2., 0.],
               [0., 0., 2.]], f32[3,3])
    """
    x, y, left, low, unit, mode = triangular_solve_checks(
        a, b, left_side, lower, unit_diagonal, transpose_a
    )
    out = _triangular_solve_impl(compute(x), compute(y), left, low, unit, mode)
    return _wrap(from_compute(out, y._dtype), y._dtype)


def triangular_solve_checks(a, b, left_side, lower, unit_diagonal, transpose_a):
    """triangular_solve's checks, on types only (the CUDA kernel runs them too):
    ``(a, b, left_side, lower, unit_diagonal, transpose_a)`` parsed."""
    op = "triangular_solve"
    x, y = operands(op, a, b, names=["a", "b"])
    left = attr_bool(op, "I3", "left_side", left_side)
    low = attr_bool(op, "I4", "lower", lower)
    unit = attr_bool(op, "I5", "unit_diagonal", unit_diagonal)
    mode = str(transpose_a).upper()
    check(
        mode in _TRANSPOSE,
        op,
        "I6",
        lambda: f"transpose_a must be one of {', '.join(_TRANSPOSE)}, got {transpose_a!r}",
    )
    _inexact(op, "I1", x, "a")
    _inexact(op, "I2", y, "b")
    check(
        x._dtype is y._dtype,
        op,
        "C1",
        lambda: f"a and b must have the same element type, got {tstr(x)} and {tstr(y)}",
    )
    check(
        x.ndim >= 2 and x.ndim == y.ndim,
        op,
        "C2",
        lambda: f"a and b must have the same rank >= 2, got {tstr(x)} and {tstr(y)}",
    )
    check(
        x.shape[:-2] == y.shape[:-2],
        op,
        "C3",
        lambda: (
            f"a and b must have the same batch dims (no broadcasting), got {tstr(x)} and {tstr(y)}"
        ),
    )
    sx, sy = tuple(x.shape), tuple(y.shape)  # (a CUDA simulator shape refuses index -1)
    k = sy[-2] if left else sy[-1]
    check(
        sx[-1] == sx[-2] == k,
        op,
        "C3",
        lambda: (
            f"a must be square with the size of b's dim {-2 if left else -1} "
            f"({'left' if left else 'right'} side), got {tstr(x)} and {tstr(y)}"
        ),
    )
    return x, y, left, low, unit, mode


def _triangular_solve_impl(a, b, left, low, unit, mode):
    if b.size == 0:
        return np.zeros_like(b)
    from scipy.linalg import blas

    am, batch = _batched(a)
    bm, _ = _batched(b)
    (trsm,) = blas.get_blas_funcs(("trsm",), (am, bm))
    out = np.empty_like(bm)
    trans = _TRANSPOSE.index(mode)  # BLAS: 0 = op(a) = a, 1 = aᵀ, 2 = aᴴ
    for i in range(am.shape[0]):
        out[i] = trsm(
            1.0, am[i], bm[i], side=0 if left else 1, lower=int(low), trans_a=trans, diag=int(unit)
        )
    return out.reshape(b.shape)


def triangular_solve_reference(a, b, left_side, lower, unit_diagonal, transpose_a):
    """One matrix, by forward or back substitution on the explicit op(a) built from the
    read triangle (NumPy arrays): the oracle for the tests."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        np.fill_diagonal(t, 1)  # (np.tril / np.triu made a copy)
    is_lower = lower
    if transpose_a != "NO_TRANSPOSE":
        t = t.conj().T if transpose_a == "ADJOINT" else t.T
        is_lower = not is_lower
    if not left_side:  # x t = b  <=>  tᵀ xᵀ = bᵀ
        t, b, is_lower = t.T, b.T, not is_lower
    n = t.shape[0]
    x = np.zeros(b.shape, np.result_type(t, b))
    for i in range(n) if is_lower else range(n - 1, -1, -1):
        x[i] = (b[i] - t[i] @ x) / t[i, i]  # x holds zeros where not solved yet
    return x if left_side else x.T


# ---------------------------------------------------------------------------------------
# Gradients (JAX's convention for complex cotangents, as every xops rule)
# ---------------------------------------------------------------------------------------


def _conj(t):
    if not t.dtype.is_complex:
        return t
    from .elementwise import complex, imag, negate, real

    return complex(real(t), negate(imag(t)))


def _mT(t):
    from .movement import transpose

    perm = list(range(t.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(t, perm)


def _mH(t):
    return _conj(_mT(t))


def _matmul(x, y, tx=False, ty=False):
    """x @ y over the last two dims (batched), with x or y transposed if asked."""
    from .linalg import dot_general

    r = x.ndim
    batch = list(range(r - 2))
    return dot_general(x, y, batch, batch, [r - 2 if tx else r - 1], [r - 1 if ty else r - 2])


def _times_matrix(t, m):
    """t times the constant n x n NumPy matrix m elementwise (over t's batch dims), m made
    on t's device (a CUDA cotangent stays there)."""
    from ..tensor import tensor
    from .elementwise import multiply
    from .movement import broadcast_in_dim

    r = t.ndim
    c = tensor(m, t.dtype, device=t.device)
    return multiply(t, broadcast_in_dim(c, [r - 2, r - 1], list(t.shape)))


def _triangle_mask(t, lower, k):
    """t with everything outside tril(., k) (lower) or triu(., k) set to zero."""
    n = tuple(t.shape)[-1]
    return _times_matrix(t, np.tril(np.ones((n, n)), k) if lower else np.triu(np.ones((n, n)), k))


def _solve_flip(a, y, left, lower, unit, mode):
    """Solve with op(a)ᵀ where ``mode`` gives op: the transpose of the linear map
    b -> op(a)⁻¹ b. aᵀᵀ = a; (aᴴ)ᵀ = conj(a) = conj of a solve with a on conj(y)."""
    if mode == "NO_TRANSPOSE":
        return triangular_solve(a, y, left, lower, unit, "TRANSPOSE")
    if mode == "TRANSPOSE":
        return triangular_solve(a, y, left, lower, unit, "NO_TRANSPOSE")
    return _conj(triangular_solve(a, _conj(y), left, lower, unit, "NO_TRANSPOSE"))


@triangular_solve.defvjp
def _triangular_solve_vjp(g, x, a, b, left_side, lower, unit_diagonal, transpose_a):
    from .elementwise import negate

    mode = str(transpose_a).upper()
    gb = _solve_flip(a, g, left_side, lower, unit_diagonal, mode)
    if not a.requires_grad:
        return None, gb
    # d op(a): left  op(a) x = b  ->  dx = -op(a)⁻¹ d(op(a)) x, so d(op(a))-bar = -gb xᵀ;
    #          right x op(a) = b  ->  d(op(a))-bar = -xᵀ gb
    g_op = negate(_matmul(gb, x, ty=True) if left_side else _matmul(x, gb, tx=True))
    ga = {"NO_TRANSPOSE": g_op, "TRANSPOSE": _mT(g_op), "ADJOINT": _mH(g_op)}[mode]
    k = (-1 if lower else 1) if unit_diagonal else 0
    return _triangle_mask(ga, lower, k), gb


def _cholesky_lower_vjp(L, gL):
    """ā for L = cholesky(a, lower=True) reading tril(a) (JAX convention).

    JVP (Murray 2016): dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ = tril with the diagonal halved, where
    A = tril(a) + tril(a, -1)ᴴ (real diagonal). Transposed: P = Lᵀ ḡ, W = Φ(P),
    Ā = L⁻ᵀ W conj(L)⁻¹, and back through A: ā = Φ(Ā + Āᴴ)."""
    from .elementwise import add

    n = tuple(L.shape)[-1]
    half = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)

    def phi(t):
        return _times_matrix(t, half)

    w = phi(_matmul(L, gL, tx=True))
    y = triangular_solve(L, w, True, True, False, "TRANSPOSE")  # L⁻ᵀ W
    abar = _conj(triangular_solve(L, _conj(y), False, True, False, "NO_TRANSPOSE"))
    return phi(add(abar, _mH(abar)))


@cholesky.defvjp
def _cholesky_vjp(g, out, a, lower):
    if lower:
        return (_cholesky_lower_vjp(out, g),)
    # U = cholesky(a, upper) = H(cholesky(H(a), lower)) with H(t) = tᴴ, its own transpose
    return (_mH(_cholesky_lower_vjp(_mH(out), _mH(g))),)
