"""CUDA kernel of ``rng_bit_generator``: Threefry-2x32-20 and Philox-4x32-10, bit-exact
with the CPU op (:mod:`xops.ops.rng`), which reproduces XLA's counter layouts.

The CPU op's checks (:func:`xops.ops.rng.rng_bit_generator_checks`) read only the state's
type and the attributes; the state's values never leave the device. Both generators are
counter-based, so the kernels are **output-parallel**: one thread per counter block, which
computes its counter from its own index (``counter + block``, with the 128-bit carry for
Philox), encrypts it and writes only the output elements that block owns:

* THREE_FRY, 64-bit outputs: element i is block i (low word | high word << 32);
* THREE_FRY, narrower outputs: the shape is split in halves along XLA's split dimension
  (the first even one, else the largest); block h of the half shape writes the two
  neighbouring elements 2h' and 2h'+1 along it (the second only if it exists);
* PHILOX: block j writes 32-bit outputs 4j..4j+3, or 64-bit outputs 2j and 2j+1 (words
  0|1 and 2|3, low word first).

Outputs narrower than 32 bits keep the low bits of their word; every output is written as
the unsigned integer of its size (its raw bits), whatever its element type. A one-thread
kernel writes the new state ``[key, counter + blocks(, high word + carry)]``. The
block functions are the CPU kernels' own (:mod:`xops.kernels.rng`), compiled for the
device: uint64 arithmetic masked to 32 bits, every constant an ``np.uint64``.
"""

import math

import numpy as np
from numba import cuda

from ...ops.rng import _split_dim, rng_bit_generator_checks
from .. import rng as K
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d

__all__ = ["KERNELS"]

_M32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
# the block functions of the CPU kernels, compiled for the device (one source for both)
_threefry_block = cuda.jit(device=True)(K.threefry2x32_block.py_func)
_philox_block = cuda.jit(device=True)(K.philox4x32_block.py_func)


def _threefry(st, out, m, d, hs, inner, mask, wide):
    """Block q of Threefry-2x32-20 under key st[0], counter st[1] + q. ``wide``: 64-bit
    outputs (element q); else the split layout (d: the split dim's size, hs: its half,
    inner: the size of the dims after it)."""
    q = cuda.grid(1)
    if q < m:
        ctr = st[1] + np.uint64(q)  # wraps modulo 2**64, as XLA's u64 add
        x0, x1 = _threefry_block(ctr & _M32, ctr >> _U32, st[0] & _M32, st[0] >> _U32)
        if wide:
            out[q] = x0 | (x1 << _U32)
        else:
            a = q // (hs * inner)
            rest = q - a * hs * inner
            h = rest // inner
            b = rest - h * inner
            p = (a * d + 2 * h) * inner + b
            out[p] = x0 & mask
            if 2 * h + 1 < d:
                out[p + inner] = x1 & mask


def _philox(st, out, m, n, mask, wide):
    """Block j of Philox-4x32-10 under key st[0], 128-bit counter (high word st[2], or
    st[0] for a 2-word state : st[1]) + j; writes outputs 4j..4j+3 (2j, 2j+1 if
    ``wide``) that are below n."""
    j = cuda.grid(1)
    if j < m:
        lo0 = st[1]
        hi0 = st[2] if st.shape[0] == 3 else st[0]
        lo = lo0 + np.uint64(j)
        hi = hi0 + _ONE if lo < lo0 else hi0  # the carry into the high word
        c0, c1, c2, c3 = _philox_block(
            lo & _M32, lo >> _U32, hi & _M32, hi >> _U32, st[0] & _M32, st[0] >> _U32
        )
        if wide:
            i = 2 * j
            out[i] = c0 | (c1 << _U32)
            if i + 1 < n:
                out[i + 1] = c2 | (c3 << _U32)
        else:
            i = 4 * j
            out[i] = c0 & mask
            if i + 1 < n:
                out[i + 1] = c1 & mask
            if i + 2 < n:
                out[i + 2] = c2 & mask
            if i + 3 < n:
                out[i + 3] = c3 & mask


def _next_state(st, blocks, out):
    """One thread: out = [key, counter + blocks (mod 2**64)(, high word + carry)]."""
    if cuda.grid(1) == 0:
        out[0] = st[0]
        lo = st[1] + blocks
        out[1] = lo
        if st.shape[0] == 3:
            out[2] = st[2] + (_ONE if lo < st[1] else _ZERO)


def _host_shape(shape):
    """A shape given as a CUDA tensor comes to the host (a few integers: the host needs
    them to allocate the output)."""
    v = getattr(shape, "_value", None)
    return shape.to("cpu") if hasattr(v, "copy_to_host") else shape


def rng_bit_generator(rng_algorithm, initial_state, shape, dtype="ui64"):
    """The kernel; it takes the arguments as the CPU op does (same signature)."""
    algo, st, dims, dt = rng_bit_generator_checks(
        rng_algorithm, initial_state, _host_shape(shape), dtype
    )
    state = st._value
    if not hasattr(state, "copy_to_host"):  # (the seam sends only device states here)
        state = cuda.to_device(np.ascontiguousarray(state))
    n = math.prod(dims)
    wide = dt.bits == 64
    word = np.dtype(f"u{dt.itemsize}")
    mask = np.uint64((1 << min(dt.bits, 32)) - 1)
    out = device_empty(dims, dt.np)
    raw = flat(out).view(word) if n else None
    if algo == "THREE_FRY":
        if wide or not dims:
            d = hs = inner = 1
            blocks = n
        else:
            s = _split_dim(dims)
            d = dims[s]
            hs = (d + 1) // 2
            inner = math.prod(dims[s + 1 :])
            blocks = math.prod(dims[:s]) * hs * inner
        if blocks:
            launch_1d(_k(_threefry), blocks, state, raw, blocks, d, hs, inner, mask, wide)
    else:  # PHILOX, and DEFAULT (= PHILOX)
        per = 2 if wide else 4
        blocks = -(-n // per)
        if blocks:
            launch_1d(_k(_philox), blocks, state, raw, blocks, n, mask, wide)
    new = device_empty(st.shape, np.uint64)
    _k(_next_state)[1, 1](state, np.uint64(blocks), new)
    return from_holder(new, st._dtype), from_holder(out, dt)


KERNELS = {"rng_bit_generator": rng_bit_generator}
