"""CUDA kernel of ``dot_general``: a batched, tiled shared-memory GEMM.

The CPU op's constraint checks (:func:`xops.ops.linalg.dot_general_checks`) run first on
the operands' types and give the result's type; no data is touched on the host. On the
device, lhs is read as (batch, lhs free, contracting) and rhs as (batch, contracting,
rhs free) through index maps (flat positions computed on the host from the shapes; no
data travels), so any dimension numbering works without a transpose copy. One block
computes a TILE x TILE tile of one batch's result: each step loads a TILE x TILE tile of
both operands into shared memory, and every thread adds its row x column products in
increasing k, so results are deterministic. Integer results are bit-exact with the CPU
(wraparound is order-free); float results differ by rounding order (accumulation in the
result type). Operands must already have the result type (no preferred_element_type
conversion).
"""

import math

import numpy as np
from numba import cuda

from ...errors import SpecError
from ...limits import check_nbytes
from ...ops._core import bound_arguments, operands
from ...ops.linalg import dot_general_checks
from ...registry import get as _get_op
from ._storage import device_empty, flat, from_holder
from .elementwise import _OK

__all__ = ["KERNELS", "TILE"]

_ATTRIBUTES = (
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
    "precision_config",
    "preferred_element_type",
)
TILE = 8  # 64 threads per block: small enough for the simulator, a valid CUDA tile
_cache = {}


def _gemm(np_dtype):
    key = np.dtype(np_dtype)
    k = _cache.get(key)
    if k is None:
        from numba import from_dtype

        nb_t = from_dtype(key)

        def gemm(a, ia, b, ib, m, n, kk, out):
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            col = cuda.blockIdx.x * TILE + tx
            row = cuda.blockIdx.y * TILE + ty
            z = cuda.blockIdx.z
            sa = cuda.shared.array((TILE, TILE), nb_t)
            sb = cuda.shared.array((TILE, TILE), nb_t)
            acc = a[0] - a[0]  # zero of the element type
            for t in range((kk + TILE - 1) // TILE):
                ka = t * TILE + tx
                kb = t * TILE + ty
                if row < m and ka < kk:
                    sa[ty, tx] = a[ia[(z * m + row) * kk + ka]]
                else:
                    sa[ty, tx] = 0
                if col < n and kb < kk:
                    sb[ty, tx] = b[ib[(z * kk + kb) * n + col]]
                else:
                    sb[ty, tx] = 0
                cuda.syncthreads()
                for j in range(TILE):
                    acc += sa[ty, j] * sb[j, tx]
                cuda.syncthreads()
            if row < m and col < n:
                out[(z * m + row) * n + col] = acc

        k = _cache[key] = cuda.jit(gemm)
    return k


def dot_general(lhs, rhs, *attributes, **named_attributes):
    """The kernel; it takes the arguments as the CPU op does (same signature)."""
    op = "dot_general"
    cpu = _get_op(op).kernels["cpu"]
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    a = bound_arguments(cpu, (x, y, *attributes), named_attributes)
    lb, rb, lc, rc, out_dt = dot_general_checks(x, y, *(a[k] for k in _ATTRIBUTES))
    if x._dtype is not out_dt or x._dtype.np not in _OK or x._dtype.kind == "bool":
        raise SpecError(
            op,
            "device",
            f"has no cuda kernel for {x._dtype.name} "
            f"operands with a {out_dt.name} result "
            f"(si, ui, f32, f64; no conversion)",
        )
    lf = [d for d in range(x.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(y.ndim) if d not in rb and d not in rc]
    nb = math.prod(x.shape[d] for d in lb)
    m = math.prod(x.shape[d] for d in lf)
    n = math.prod(y.shape[d] for d in rf)
    kk = math.prod(x.shape[d] for d in lc)
    shape = [x.shape[d] for d in lb + lf] + [y.shape[d] for d in rf]
    check_nbytes(op, shape, out_dt.np)
    out = device_empty(shape, out_dt.np)
    if nb and m and n:
        if kk == 0:  # an empty contraction: zeros
            out = cuda.to_device(np.zeros(shape, out.dtype))
        else:
            ia = np.arange(x.size, dtype=np.int64).reshape(x.shape).transpose(lb + lf + lc)
            ib = np.arange(y.size, dtype=np.int64).reshape(y.shape).transpose(rb + rc + rf)
            grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE, nb)
            _gemm(x._dtype.np)[grid, (TILE, TILE)](
                flat(x._value),
                cuda.to_device(np.ascontiguousarray(ia).reshape(-1)),
                flat(y._value),
                cuda.to_device(np.ascontiguousarray(ib).reshape(-1)),
                m,
                n,
                kk,
                flat(out),
            )
    return from_holder(out, out_dt)


KERNELS = {"dot_general": dot_general}
