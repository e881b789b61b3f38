"""Batched products on Numba's threads: one BLAS GEMM per product of the batch, called
through the routine's address from a ``prange`` loop (:func:`batched_gemm`).

Why: a batch of small products (64 x 128^3) was shared between the calling thread and a
Python pool thread, each running whole products on one BLAS thread. Back to back that
matched PyTorch's bmm, but after any pause (as between the benchmark's samples, or in a
script that does something else between batches) the Python threads took tens of
milliseconds to get back to speed: 1.6 ms -> 2.9 ms a call for the next 60 ms (2-core
AVX-512 EPYC, idle). Numba's OpenMP threads, which spin a moment after each region and
are woken by the runtime, do not pay that: the same products 1.56 ms back to back and
1.58 ms after a pause (PyTorch 1.57-1.72 ms).

The GEMM is the BLAS's own routine (NumPy's OpenBLAS ``cblas_?gemm``, row-major, no
transposes, alpha 1, beta 0), called on each product exactly as ``np.matmul`` calls it
for one C-contiguous 2-D product: the same bits (tests/test_linalg.py). The caller
(xops.ops._blas) finds the routine, sets one BLAS thread for the region, and passes the
routine's address, so the compiled loop holds no address of its own and is cached like
the other kernels.
"""

from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from .config import kernel

__all__ = ["BATCHED_GEMM"]


@intrinsic
def call_gemm(typingctx, fn, m, n, k, alpha, a, b, c):
    """``cblas_?gemm(RowMajor, NoTrans, NoTrans, m, n, k, alpha, a, k, b, n, 0, c, n)``
    through the routine at address ``fn`` (ILP64: 64-bit sizes), ``a``, ``b`` and ``c``
    addresses; alpha's type (float32 / float64) is the routine's element type."""
    ints = (fn, m, n, k, a, b, c)
    if not all(isinstance(t, types.Integer) for t in ints) or alpha not in (
        types.float32,
        types.float64,
    ):
        return None

    def codegen(context, builder, sig, args):
        i32, i64, i8p = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()
        f = context.get_value_type(sig.args[4])
        fp, mv, nv, kv, alpha_v, av, bv, cv = (
            args[4] if j == 4 else context.cast(builder, args[j], sig.args[j], types.int64)
            for j in range(8)
        )
        fnty = ir.FunctionType(
            ir.VoidType(), [i32, i32, i32, i64, i64, i64, f, i8p, i64, i8p, i64, f, i8p, i64]
        )
        call = builder.inttoptr(fp, fnty.as_pointer())
        row_major, no_trans = ir.Constant(i32, 101), ir.Constant(i32, 111)
        builder.call(
            call,
            [
                row_major,
                no_trans,
                no_trans,
                mv,
                nv,
                kv,
                alpha_v,
                builder.inttoptr(av, i8p),
                kv,
                builder.inttoptr(bv, i8p),
                nv,
                ir.Constant(f, 0.0),
                builder.inttoptr(cv, i8p),
                nv,
            ],
        )
        return context.get_dummy_value()

    return types.void(fn, m, n, k, alpha, a, b, c), codegen


def batched_gemm(fn, count, m, n, k, alpha, a, b, c, size):
    """Output-parallel. Product i of ``count`` C-contiguous (m, k) @ (k, n) products at
    addresses ``a`` and ``b`` (element ``size`` bytes) into the one at ``c``: the
    routine at ``fn`` on product i's three matrices; iteration i writes only product
    i's result."""
    for i in prange(count):
        call_gemm(
            fn, m, n, k, alpha, a + i * m * k * size, b + i * k * n * size, c + i * m * n * size
        )


BATCHED_GEMM = kernel(batched_gemm)
