"""CUDA kernels of ``cholesky`` and ``triangular_solve`` (batched), and of ``map``.

The CPU ops' checks (:func:`xops.ops.solve.cholesky_checks`,
:func:`~xops.ops.solve.triangular_solve_checks`) read only types and attributes. Both
kernels run **one thread block per matrix** (the small matrices users have; a batch is a
grid of blocks) and read only the triangle of ``a`` the op names, as the spec requires:

* **cholesky** (Cholesky-Crout, column by column): for column j, thread 0 computes the
  diagonal ``sqrt(re a[j, j] - sum_k<j |L[j, k]|^2)``; after a barrier the threads split
  rows i > j among them, each computing ``L[i, j] = (a[i, j] - sum_k<j L[i, k]
  conj(L[j, k])) / L[j, j]`` with k ascending (a fixed order: deterministic); a barrier
  ends the column. ``lower=False`` computes U = Lᴴ through the transposed, conjugated
  index map (U[j, i] holds conj(L[i, j]); a's upper triangle is read as aᴴ). A matrix
  that is not positive definite (a diagonal term not > 0, NaN included: LAPACK potrf's
  test) or whose factor holds a NaN becomes all NaN, as on the CPU; the other triangle
  is zero. Owner-computes: every element is written by one thread; the failure flag in
  shared memory is only ever set to 1.
* **triangular_solve**: every case is reduced to M x = r by substitution, one thread per
  right-hand side r (a column of b for ``left_side``, else a row): M is a, aᵀ for
  TRANSPOSE, aᴴ for ADJOINT, and right-side solves use x op(a) = b <=> op(a)ᵀ xᵀ = bᵀ.
  x[i] = (r[i] - sum M[i, k] x[k]) / M[i, i] over the solved k in ascending order (the
  diagonal not read for ``unit_diagonal``). Output-parallel: a thread writes only its
  own right-hand side; left-side threads of a warp read neighbouring columns of b
  (coalesced).

Element types: f32, f64, c64 and c128 (computed in their own precision, as LAPACK/BLAS
on the CPU; ADJOINT conjugates, cholesky reads a complex diagonal's real part); bf16,
f16 and the f8 types decoded to f32, solved in f32 and rounded once (the CPU's rounding
points); others raise the device error naming the type. The results differ from the
CPU's LAPACK/BLAS by the order of the sums (blocked algorithms there): the tests allow
4e-6 (f32, c64) / 1e-13 (f64, c128) of the result's largest magnitude on
well-conditioned matrices (tests/test_cuda_solve.py).

**map** applies its body to the whole device inputs, as the CPU op does: the body's ops
run as those ops' device kernels on the device tensors (no data goes to the host). A
body that returns a 0-d value (a constant) is broadcast on the device; a 0-d constant
the body made on the CPU is uploaded first (one value).
"""

import math

import numpy as np
from numba import cuda

from ...errors import SpecError
from ...ops._bodies import outputs
from ...ops.movement import broadcast_in_dim
from ...ops.reduction import _types, map_checks
from ...ops.solve import cholesky_checks, triangular_solve_checks
from ...ops._core import tstr
from ._storage import compiled as _k, device_empty, flat, from_holder, on_device
from .narrow import NARROW, encode, to_f32

__all__ = ["KERNELS"]

_NAN = float("nan")
_TRANSPOSE_MODES = ("TRANSPOSE", "ADJOINT")


@cuda.jit(device=True)
def _at(base, n, i, k, lower):
    """Flat index of L[i, k] (lower) or of its adjoint's element U[k, i] (upper)."""
    return base + i * n + k if lower else base + k * n + i


@cuda.jit(device=True)
def _get(x, base, n, i, k, lower):
    """L[i, k] read from the lower layout, or from the upper one (U = Lᴴ: conjugated)."""
    v = x[_at(base, n, i, k, lower)]
    return v if lower else v.conjugate()


def _cholesky_k(a, n, lower, out):
    """Block m factors matrix m (n x n, flat at m * n * n); a's lower triangle, or the
    upper one read as its adjoint (real types: conjugate() is the identity)."""
    base = cuda.blockIdx.x * n * n
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    bad = cuda.shared.array(1, np.int32)
    if t == 0:
        bad[0] = 0
    for e in range(t, n * n, nt):
        out[base + e] = 0
    cuda.syncthreads()
    for j in range(n):
        if t == 0:
            s = a[_at(base, n, j, j, lower)].real  # (a complex diagonal's imaginary part
            for k in range(j):  # is ignored, as on the CPU)
                v = _get(out, base, n, j, k, lower)
                s -= (v * v.conjugate()).real
            if s > 0:
                out[_at(base, n, j, j, lower)] = math.sqrt(s)
            else:  # not positive definite (or NaN): potrf's test
                bad[0] = 1
                out[_at(base, n, j, j, lower)] = _NAN
        cuda.syncthreads()
        d = out[_at(base, n, j, j, lower)].real
        for i in range(j + 1 + t, n, nt):
            s = _get(a, base, n, i, j, lower)
            for k in range(j):
                s -= _get(out, base, n, i, k, lower) * _get(out, base, n, j, k, lower).conjugate()
            v = s / d
            out[_at(base, n, i, j, lower)] = v if lower else v.conjugate()
        cuda.syncthreads()
    for e in range(t, n * n, nt):
        if out[base + e] != out[base + e]:  # a NaN anywhere fails the matrix, as the CPU
            bad[0] = 1
    cuda.syncthreads()
    if bad[0] != 0:
        for e in range(t, n * n, nt):
            out[base + e] = _NAN


def _trsm_k(a, b, n, nrhs, rstride, istride, tr, low, unit, conj, out):
    """Block m solves the nrhs right-hand sides of matrix m; rhs c's element i sits at
    c * rstride + i * istride of the batch's b; M[i, k] = a[k, i] if ``tr`` else a[i, k],
    conjugated if ``conj`` (ADJOINT); ``low``: M is lower triangular (forward
    substitution), else upper (backward)."""
    m = cuda.blockIdx.x
    abase = m * n * n
    bbase = m * n * nrhs
    for c in range(cuda.threadIdx.x, nrhs, cuda.blockDim.x):
        cb = bbase + c * rstride
        for step in range(n):
            i = step if low else n - 1 - step
            s = b[cb + i * istride]
            k0 = 0 if low else i + 1
            k1 = i if low else n
            for k in range(k0, k1):
                mik = a[abase + k * n + i] if tr else a[abase + i * n + k]
                if conj:
                    mik = mik.conjugate()
                s -= mik * out[cb + k * istride]
            if not unit:
                d = a[abase + i * n + i]
                s = s / (d.conjugate() if conj else d)
            out[cb + i * istride] = s


def _threads(n):
    """Threads per block for n rows (or right-hand sides): whole warps, at most 128."""
    return min(128, max(32, (n + 31) // 32 * 32))


def _float_operand(op, t, name):
    """(device tensor in f32 / f64, narrow): narrow types decoded to f32 (exact)."""
    dt = t._dtype
    on_device(op, t, name)
    if dt.name in NARROW:
        return to_f32(t), True
    if dt.np not in (np.float32, np.float64, np.complex64, np.complex128):
        raise SpecError(op, "device", f"has no cuda kernel for element type {dt.name}")
    return t, False


def cholesky(a, lower=False):
    """The kernel of ``cholesky`` (same signature as the CPU op)."""
    x, low = cholesky_checks(a, lower)
    v, narrow = _float_operand("cholesky", x, "a")
    shape = tuple(x.shape)
    n = shape[-1]
    batch = math.prod(shape[:-2])
    out = device_empty(shape, v._dtype.np)
    if batch and n:
        _k(_cholesky_k)[batch, _threads(n)](flat(v._value), n, low, flat(out))
    res = from_holder(out, v._dtype)
    return encode(res, x._dtype) if narrow else res


def triangular_solve(a, b, left_side, lower, unit_diagonal, transpose_a):
    """The kernel of ``triangular_solve`` (same signature as the CPU op)."""
    op = "triangular_solve"
    x, y, left, low, unit, mode = triangular_solve_checks(
        a, b, left_side, lower, unit_diagonal, transpose_a
    )
    av, narrow = _float_operand(op, x, "a")
    bv, _ = _float_operand(op, y, "b")
    shape = tuple(y.shape)
    n = shape[-2] if left else shape[-1]
    nrhs = shape[-1] if left else shape[-2]
    batch = math.prod(shape[:-2])
    rstride, istride = (1, nrhs) if left else (n, 1)
    tr = (mode in _TRANSPOSE_MODES) != (not left)
    out = device_empty(shape, bv._dtype.np)
    if batch and n and nrhs:
        conj = mode == "ADJOINT" and y._dtype.kind == "complex"
        args = (
            flat(av._value),
            flat(bv._value),
            n,
            nrhs,
            rstride,
            istride,
            tr,
            low != tr,
            unit,
            conj,
        )
        _k(_trsm_k)[batch, _threads(nrhs)](*args, flat(out))
    res = from_holder(out, bv._dtype)
    return encode(res, y._dtype) if narrow else res


def map_(inputs, dimensions, computation):
    """The kernel of ``map`` (same signature as the CPU op): the body on the device."""
    op = "map"
    xs = map_checks(inputs, dimensions, computation)
    for i, x in enumerate(xs):
        on_device(op, x, f"inputs[{i}]")
    (out,) = outputs(op, "C4", "computation", computation(*xs), 1)
    shape = tuple(xs[0].shape)
    if tuple(out.shape) == shape:
        return out
    if out.ndim != 0:
        raise SpecError(
            op, "C4", f"computation must be elementwise: on {_types(xs)} it returned {tstr(out)}"
        )
    if out.device == "cpu":  # a constant the body made: one value to the device
        out = out.to("cuda")
    return broadcast_in_dim(out, [], list(shape))


KERNELS = {"cholesky": cholesky, "triangular_solve": triangular_solve, "map": map_}
