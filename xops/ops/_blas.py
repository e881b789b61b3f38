"""BLAS thread control for thin matrix products (NumPy's bundled OpenBLAS, via ctypes).

OpenBLAS splits one GEMM over its threads by rows and columns of the result, so a
product with a small result (the convolutions' per-feature GEMMs, a 32 x 27 kernel
gradient) gains little from a second thread (~15% on the CIFAR kernel gradient, idle)
while each call becomes a synchronisation point of the threads: when other processes
compete for the cores, one descheduled thread stalls the call for whole scheduler ticks
(measured under load: the CIFAR kernel gradient's median 239 ms with two threads, 20 ms
with one). ``one_thread()`` runs a block with one BLAS thread and restores the count.

The count is OpenBLAS's process-wide setting: another Python thread's product that
runs meanwhile also gets one thread, which changes its speed and can change its last
bits (OpenBLAS's GEMM results depend on the thread count: 1.3e-7 to 7.4e-7 relative
between 1 and 2 threads on the convolutions' f32 shapes, measured). Where NumPy does not
use a bundled OpenBLAS (another BLAS, or no such symbol), ``one_thread()`` does nothing.

``run_pieces`` spreads many such products over the cores instead: each thread runs whole
products on one BLAS thread, taking them from a shared counter.

``matmul`` runs small products on one BLAS thread: after every threaded product
OpenBLAS's workers spin for ~0.1 s (2^28 cycles, ``OPENBLAS_THREAD_TIMEOUT``, read once
when the library loads) and take a core from whatever runs next, Numba's parallel
kernels included. A training step with a dense layer woke them three times per step
(64 x 1568 x 10 products: 1M multiply-adds, past OpenBLAS's own one-thread bound of
2^18) and its convolutions, pooling and batch norm then ran on one core: the digits
step at batch 64 measured 14.0-15.0 -> 10.3-10.8 ms (medians of 40 steps, three
interleaved runs; 2-core AVX-512 EPYC, idle). The products themselves lost nothing:
(64, 10) @ (10, 1568) 264 -> 33 us in a loop, (64, 1568) @ (1568, 10) 37 -> 49 us.
"""

import contextlib
import ctypes
import glob
import os
import threading

import numpy as np

from ..kernels.elementwise import share_pieces
from ..kernels import pool as _pool
from ..kernels.gemm import BATCHED_GEMM

# (set, get) pairs of names, newest packaging first (scipy-openblas wheels prefix them)
_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)

_lock = threading.Lock()
_state = {"loaded": False, "set": None, "get": None, "depth": 0, "saved": None}


def _libraries():
    """NumPy's bundled OpenBLAS libraries, as ctypes handles (each already loaded by
    NumPy: the same instance)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(np.__file__)))
    pkg = os.path.dirname(os.path.abspath(np.__file__))
    paths = glob.glob(os.path.join(root, "numpy.libs", "*openblas*"))
    paths += glob.glob(os.path.join(pkg, ".libs", "*openblas*"))
    for path in sorted(paths):
        try:
            yield ctypes.CDLL(path)
        except OSError:
            continue


def _find():
    """(set, get) ctypes functions of NumPy's OpenBLAS, or (None, None)."""
    for lib in _libraries():
        for set_name, get_name in _SYMBOLS:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None, None


def _functions():
    if not _state["loaded"]:
        _state["set"], _state["get"] = _find()
        _state["loaded"] = True
    return _state["set"], _state["get"]


# NumPy's OpenBLAS GEMM routines (ILP64: the scipy-openblas64 wheels' names), for
# batched products on Numba's threads (xops.kernels.gemm)
_GEMM_SYMBOLS = {
    np.dtype(np.float32): ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
    np.dtype(np.float64): ("scipy_cblas_dgemm64_", "cblas_dgemm64_"),
}
_gemm = {}  # dtype -> address of its routine, or 0 where none was found


def gemm_address(dtype):
    """The address of NumPy's OpenBLAS ``cblas_?gemm`` (ILP64) for float32 / float64,
    or 0 (another BLAS, or no such symbol: the callers keep their other path)."""
    addr = _gemm.get(dtype)
    if addr is None:
        addr = 0
        names = _GEMM_SYMBOLS.get(dtype, ())
        for lib in _libraries():
            fn = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
            if fn is not None:
                addr = ctypes.cast(fn, ctypes.c_void_p).value
                break
        _gemm[dtype] = addr
    return addr


def available():
    """Whether the BLAS thread count can be set (NumPy's bundled OpenBLAS was found)."""
    with _lock:
        return _functions()[0] is not None


@contextlib.contextmanager
def one_thread():
    """Run the block with one BLAS thread (nested and concurrent blocks share one
    saved count, restored when the last block ends)."""
    with _lock:
        setter, getter = _functions()
        if setter is not None:
            if _state["depth"] == 0:
                _state["saved"] = getter()
                if _state["saved"] != 1:
                    setter(1)
            _state["depth"] += 1
    try:
        yield
    finally:
        if setter is not None:
            with _lock:
                _state["depth"] -= 1
                if _state["depth"] == 0 and _state["saved"] != 1:
                    setter(_state["saved"])


# Products of up to this many multiply-adds (all of a batched product's together) run on
# one BLAS thread; past OpenBLAS's own bound (2^18 per product) it would thread them.
ONE_THREAD_MACS = 1 << 22
_OPENBLAS_ONE_THREAD_MACS = 1 << 18
# Batched products larger than ONE_THREAD_MACS in all whose products have at most this
# many multiply-adds each run whole products on the threads (one BLAS thread each)
# instead of every product split between OpenBLAS's threads, which wait for each other
# 64 times on 64 products: 64 x 128^3 f32 3.8 -> 2.0 ms (PyTorch's bmm 2.0; calls 2 ms
# apart, 2-core AVX-512 EPYC), the same bits. Since session 22 float32 / float64 run on
# Numba's threads (xops.kernels.gemm: the pieces' Python threads lost ~1 ms a call for
# tens of ms after any pause), other types in pieces (``run_pieces``).
PIECE_MACS = 1 << 24
_PIECES = 16


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``, on one BLAS thread where the product is small, and
    a batch of small products shared out whole between the threads (see the module's
    docstring and ``PIECE_MACS``): the same result (OpenBLAS splits a product's result,
    not its sums, between its threads; equal bits on the shapes measured)."""
    k = a.shape[-1]
    m = a.size // k if k else 0
    n = b.shape[-1] if b.ndim > 1 else 1
    each = (a.shape[-2] if a.ndim > 1 else 1) * k * n
    total = m * k * n
    if _OPENBLAS_ONE_THREAD_MACS < each and total <= ONE_THREAD_MACS:
        with one_thread():
            return np.matmul(a, b, out=out)
    batch = a.shape[0] if a.ndim == 3 else 0
    if batch > 1 and b.ndim == 3 and b.shape[0] == batch and ONE_THREAD_MACS < total:
        if 0 < each <= PIECE_MACS:
            return _batched(a, b, out)
    return np.matmul(a, b, out=out)


def _batched(a, b, out):
    """(B, M, K) @ (B, K, N): float32 / float64 products of one type by the BLAS's own
    GEMM per product on Numba's threads (``xops.kernels.gemm``; one BLAS thread each),
    others in pieces of whole products (``run_pieces``)."""
    batch = a.shape[0]
    if out is None:  # (from the buffer pool, as other results: no fresh pages)
        out = _pool.empty((batch, a.shape[1], b.shape[2]), np.result_type(a, b))
    dt = out.dtype
    fn = gemm_address(dt) if a.dtype == b.dtype == dt else 0
    if fn and out.flags.c_contiguous and available():
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        _, m, k = a.shape
        n = b.shape[2]
        addresses = a.ctypes.data, b.ctypes.data, out.ctypes.data
        with one_thread():  # (Kernel: the parallel variant, the threading layer's lock)
            BATCHED_GEMM(out.size * k, fn, batch, m, n, k, dt.type(1), *addresses, dt.itemsize)
        return out
    per = -(-batch // _PIECES)

    def body(pieces):
        for i in pieces:
            s = slice(i * per, min(i * per + per, batch))
            np.matmul(a[s], b[s], out=out[s])

    run_pieces(body, -(-batch // per))
    return out


def run_pieces(body, count, parallel=True):
    """``body(pieces)`` under ``one_thread()``, shared out by
    ``kernels.elementwise.share_pieces`` over the calling thread and (``parallel``) up to
    numba.get_num_threads() - 1 pool threads: ``pieces`` yields indices below ``count``,
    each taken by exactly one thread, so ``body`` must release the GIL for its work
    (BLAS and the nogil kernels do) and write each piece's results to that piece's own
    place. The caller starts at once: a pool thread that wakes late (a busy core) takes
    fewer pieces or none, and the call is never much slower than on one thread
    (OpenBLAS's own threads wait for each other inside every product instead). Which
    thread took which piece changes no result."""
    with one_thread():
        share_pieces(body, count, None if parallel else 1)
