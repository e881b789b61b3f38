"""Counter-based random bit generators: Threefry-2x32 (20 rounds) and Philox-4x32
(10 rounds), Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011.

Each kernel encrypts the consecutive counters ``start, start + 1, ...`` under one key:
block ``j`` of the output depends on ``start + j`` and the key only. Both loops are
**output-parallel**: prange iteration ``j`` computes and writes only its own block
``out[j]``, so results never depend on the thread count.

All 32-bit arithmetic runs in uint64 registers masked to 32 bits (Numba would widen
uint32 + uint32 anyway, and uint64 op int64 would unify to float64: every constant
here is an np.uint64). The block functions are plain uint64 arithmetic, so they run on
NumPy arrays as they are: the first few small calls of a process (a model's weight
initialisation) use them that way instead of compiling a kernel (see
:class:`_LazyKernel`). How XLA lays counters and keys out over an output shape lives
in ``xops.ops.rng``; the NumPy references beside these kernels are there too.
"""

import numpy as np
from numba import prange

from .config import Kernel, scalar

_M32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)
_ONE = np.uint64(1)
_PARITY = np.uint64(0x1BD11BDA)  # Threefry's key-schedule parity constant
# Threefry-2x32 rotation distances: rounds 0-3 of every even group, then 4-7
_ROT = np.array([13, 15, 26, 6, 17, 29, 16, 24], dtype=np.uint64)
_PHILOX_M0 = np.uint64(0xD2511F53)
_PHILOX_M1 = np.uint64(0xCD9E8D57)
_PHILOX_W0 = np.uint64(0x9E3779B9)  # Weyl key increments (golden ratio, sqrt(3) - 1)
_PHILOX_W1 = np.uint64(0xBB67AE85)


@scalar
def threefry2x32_block(c0, c1, key0, key1):
    """Threefry-2x32-20 of the counter words (c0, c1) under the key (key0, key1), all
    uint64 holding 32-bit values: the two output words. Plain uint64 arithmetic and no
    calls, so the CUDA kernel compiles this same function (xops.kernels.cuda.rng)."""
    ks2 = key0 ^ key1 ^ _PARITY
    x0 = (c0 + key0) & _M32
    x1 = (c1 + key1) & _M32
    for g in range(5):  # five groups of four rounds, then a key injection
        base = (g % 2) * 4
        for r in range(4):
            rot = _ROT[base + r]
            x0 = (x0 + x1) & _M32
            x1 = (((x1 << rot) | (x1 >> (_U32 - rot))) & _M32) ^ x0
        s = (g + 1) % 3
        k_a = key0 if s == 0 else (key1 if s == 1 else ks2)
        s = (g + 2) % 3
        k_b = key0 if s == 0 else (key1 if s == 1 else ks2)
        x0 = (x0 + k_a) & _M32
        x1 = (x1 + k_b + np.uint64(g + 1)) & _M32
    return x0, x1


class _LazyKernel(Kernel):
    """A block kernel whose first ``NUMPY_CALLS`` calls with fewer than ``NUMPY_BLOCKS``
    blocks run ``numpy_fn`` (the same block function on NumPy arrays: the same bits)
    instead of compiling: a process that draws a few small tensors (a model's initial
    weights) never compiles the kernel (0.5 s of a cold start idle, 2.5-3 s loaded),
    and one that keeps drawing compiles it once the NumPy path's ~100 array operations
    per call would add up."""

    __slots__ = ("numpy_fn", "numpy_calls")
    NUMPY_BLOCKS = 1 << 12
    NUMPY_CALLS = 32

    def __init__(self, py_func, numpy_fn):
        super().__init__(py_func)
        self.numpy_fn, self.numpy_calls = numpy_fn, 0

    def __call__(self, n, *args):
        if n < self.NUMPY_BLOCKS and self.numpy_calls < self.NUMPY_CALLS:
            self.numpy_calls += 1
            return self.numpy_fn(*args)
        return super().__call__(n, *args)


def _counters(start, n):
    """start + j for j < n, wrapping modulo 2**64 (uint64 array arithmetic wraps)."""
    return np.arange(n, dtype=np.uint64) + np.full(n, start, np.uint64)


def _threefry2x32_numpy(key0, key1, start, out0, out1):
    ctr = _counters(start, out0.shape[0])
    x0, x1 = threefry2x32_block.py_func(ctr & _M32, ctr >> _U32, key0, key1)
    out0[:] = x0
    out1[:] = x1


def _philox4x32_numpy(key0, key1, start_lo, start_hi, out):
    n = out.shape[0]
    lo = _counters(start_lo, n)
    hi = np.full(n, start_hi, np.uint64)
    hi[lo < start_lo] += _ONE  # the carry into the high word (wrapping)
    words = philox4x32_block.py_func(lo & _M32, lo >> _U32, hi & _M32, hi >> _U32, key0, key1)
    for i, w in enumerate(words):
        out[:, i] = w


def threefry2x32(key0, key1, start, out0, out1):
    """Output-parallel. Threefry-2x32-20 of the counters ``start + j`` (uint64, split
    into low word x0 and high word x1) under the key (key0, key1); writes the two
    output words of block j to out0[j], out1[j] (uint32 arrays)."""
    for j in prange(out0.shape[0]):
        ctr = start + np.uint64(j)  # wraps modulo 2**64, as XLA's u64 add
        x0, x1 = threefry2x32_block(ctr & _M32, ctr >> _U32, key0, key1)
        out0[j] = np.uint32(x0)
        out1[j] = np.uint32(x1)


threefry2x32 = _LazyKernel(threefry2x32, _threefry2x32_numpy)


@scalar
def philox4x32_block(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of the counter words c0..c3 (least significant first) under the
    key (k0, k1), all uint64 holding 32-bit values: the four output words. Plain uint64
    arithmetic and no calls, so the CUDA kernel compiles this same function."""
    for _ in range(10):
        p0 = c0 * _PHILOX_M0  # 32 x 32 -> 64 bits, exact in uint64
        p1 = c2 * _PHILOX_M1
        n0 = (p1 >> _U32) ^ c1 ^ k0
        n2 = (p0 >> _U32) ^ c3 ^ k1
        c1 = p1 & _M32
        c3 = p0 & _M32
        c0 = n0
        c2 = n2
        k0 = (k0 + _PHILOX_W0) & _M32
        k1 = (k1 + _PHILOX_W1) & _M32
    return c0, c1, c2, c3


def philox4x32(key0, key1, start_lo, start_hi, out):
    """Output-parallel. Philox-4x32-10 of the 128-bit counters (start_hi:start_lo) + j
    under the key (key0, key1); writes the four output words of block j to
    out[j, 0:4] (uint32 array of shape (n, 4)). Counter words: c0, c1 = low, high half
    of the low uint64; c2, c3 = low, high half of the high uint64."""
    for j in prange(out.shape[0]):
        lo = start_lo + np.uint64(j)
        hi = start_hi + _ONE if lo < start_lo else start_hi  # carry into the high word
        c0, c1, c2, c3 = philox4x32_block(lo & _M32, lo >> _U32, hi & _M32, hi >> _U32, key0, key1)
        out[j, 0] = np.uint32(c0)
        out[j, 1] = np.uint32(c1)
        out[j, 2] = np.uint32(c2)
        out[j, 3] = np.uint32(c3)


philox4x32 = _LazyKernel(philox4x32, _philox4x32_numpy)
