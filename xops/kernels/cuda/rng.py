"""CUDA kernels of ``rng_bit_generator`` (Threefry-2x32-20 and Philox-4x32-10, bit-exact
with the CPU op (:mod:`xops.ops.rng`), which reproduces XLA's counter layouts) and of
``rng``, ``rng_uniform``, ``rng_normal`` and ``rng_bernoulli``, which draw the CPU's
hidden stream on the device (see "the CPU's hidden stream" below).

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

from ...dtypes import as_dtype
from ...errors import SpecError
from ...ops._core import compute
from ...ops.composite import rng_bernoulli_checks
from ...ops.rng import _STREAM, _largest_below, _split_dim, rng_bit_generator_checks, rng_checks
from .. import rng as K
from . import _rounded
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d
from .movement import fill
from .narrow import NARROW, encode, to_f32

__all__ = ["KERNELS"]

_F64 = as_dtype("f64")
_M64_INT = (1 << 64) - 1
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


# -- rng, rng_uniform, rng_normal, rng_bernoulli: the CPU's hidden stream, on the device --
#
# The CPU ops draw 64-bit words from one module-level Philox-4x32-10 stream
# (:class:`xops.ops.rng._Stream`): a call taking n words uses the counter blocks
# counter .. counter + ceil(n / 2) - 1, word i being the low (even i) or high (odd i) half
# of block i // 2 (PhiloxRngBit64's layout). The stream's key and counter are host
# numbers, not tensor data: the kernel function reserves the call's blocks on the host
# (``_STREAM.reserve``, the same bookkeeping as the CPU, so CPU and CUDA calls may be
# interleaved) and passes key and counter to the kernel by value. One thread per block
# makes the two words from its own counter and writes outputs 2j and 2j+1
# (output-parallel). The transformations are the CPU's, in the same float64 operations:
# products go through ``_dmul`` (:mod:`._rounded`: libdevice's dmul_rn on a GPU), so that
# NVVM cannot contract a product and a sum into one fma, which the CPU does not do.

_ELEVEN = np.uint64(11)
_TWO_M53 = 2.0**-53
_TWO_PI = 2 * math.pi  # (the CPU's 2 * np.pi * u: (2 pi) first)


_dmul = _rounded.ops(np.float64)[0]


@cuda.jit(device=True)
def _philox_words(key, lo0, hi0, j):
    """Words 2j and 2j+1 of the stream at key, 128-bit counter hi0:lo0 (block j)."""
    lo = lo0 + np.uint64(j)
    hi = hi0 + _ONE if lo < lo0 else hi0  # the carry into the high word
    c0, c1, c2, c3 = _philox_block(
        lo & _M32, lo >> _U32, hi & _M32, hi >> _U32, key & _M32, key >> _U32
    )
    return c0 | (c1 << _U32), c2 | (c3 << _U32)


@cuda.jit(device=True)
def _uniform_value(w, lo, hi, width, finite):
    """The CPU's float64 value of word w on [lo, hi): lo + u (hi - lo), u = (w >> 11) 2**-53
    (an infinite width: lo (1 - u) + hi u)."""
    u = np.float64(w >> _ELEVEN) * _TWO_M53
    if finite:
        return lo + _dmul(u, width)
    return _dmul(lo, 1.0 - u) + _dmul(hi, u)


@cuda.jit(device=True)
def _store_uniform(out, i, w, lo, hi, width, finite, top, a, clamp):
    out[i] = _uniform_value(w, lo, hi, width, finite)  # rounded once to out's type
    if clamp:  # the rounding may reach hi: [a, b) as the CPU keeps it
        r = out[i]
        if r >= top:
            out[i] = top
        elif r < a:
            out[i] = a


def _uniform_k(key, lo0, hi0, n, lo, hi, width, finite, top, a, clamp, out):
    """Block j: uniform floats 2j, 2j+1 (f32 / f64; with ``clamp``, kept in [a, b))."""
    j = cuda.grid(1)
    i = 2 * j
    if i < n:
        w0, w1 = _philox_words(key, lo0, hi0, j)
        _store_uniform(out, i, w0, lo, hi, width, finite, top, a, clamp)
        if i + 1 < n:
            _store_uniform(out, i + 1, w1, lo, hi, width, finite, top, a, clamp)


def _clamp_bits_k(dec, top, a, top_bits, a_bits, raw):
    """Narrow floats: raw[i] (bit patterns, decoded dec[i]) kept in [a, b) as the CPU."""
    i = cuda.grid(1)
    if i < raw.shape[0]:
        r = dec[i]
        if r >= top:
            raw[i] = top_bits
        elif r < a:
            raw[i] = a_bits


def _uniform_int_k(key, lo0, hi0, n, base, span, mask, out):
    """Block j: integers 2j, 2j+1 = lo + word % span (mod 2**64), the type's low bits."""
    j = cuda.grid(1)
    i = 2 * j
    if i < n:
        w0, w1 = _philox_words(key, lo0, hi0, j)
        out[i] = (base + w0 % span) & mask
        if i + 1 < n:
            out[i + 1] = (base + w1 % span) & mask


def _normal_k(key, lo0, hi0, n, mu, sigma, out):
    """Block j: Box-Muller over its two words, outputs 2j (cos) and 2j+1 (sin)."""
    j = cuda.grid(1)
    i = 2 * j
    if i < n:
        w0, w1 = _philox_words(key, lo0, hi0, j)
        u1 = (np.float64(w0 >> _ELEVEN) + 1.0) * _TWO_M53  # (0, 1]: log never sees 0
        u2 = np.float64(w1 >> _ELEVEN) * _TWO_M53
        r = math.sqrt(-2.0 * math.log(u1))
        t = _TWO_PI * u2
        out[i] = mu + _dmul(sigma, _dmul(r, math.cos(t)))
        if i + 1 < n:
            out[i + 1] = mu + _dmul(sigma, _dmul(r, math.sin(t)))


def _bernoulli_k(key, lo0, hi0, n, p, out):
    """Block j: outputs 2j, 2j+1 = 1 if u < p else 0 (u the word's 53-bit uniform)."""
    j = cuda.grid(1)
    i = 2 * j
    if i < n:
        w0, w1 = _philox_words(key, lo0, hi0, j)
        out[i] = 1 if np.float64(w0 >> _ELEVEN) * _TWO_M53 < p else 0
        if i + 1 < n:
            out[i + 1] = 1 if np.float64(w1 >> _ELEVEN) * _TWO_M53 < p else 0


def _host(t):
    """A 0-d parameter (a, b, mu, sigma, mean) as the CPU op takes it: a CUDA tensor is
    read to the host (one value: the checks a < b, sigma >= 0, 0 <= mean <= 1 and the
    kernel's launch arguments need it; pass Python numbers to read nothing)."""
    return t.to("cpu") if hasattr(getattr(t, "_value", None), "copy_to_host") else t


def _draw(kernel, n, *args):
    """Launch ``kernel`` (one thread per Philox block) on the stream's next n words."""
    key, counter = _STREAM.reserve(n)
    blocks = -(-n // 2)
    if blocks:
        lo0, hi0 = np.uint64(counter & _M64_INT), np.uint64(counter >> 64)
        launch_1d(_k(kernel), blocks, np.uint64(key), lo0, hi0, n, *args)


def _rng_device(op, a, b, shape, rng_distribution, names):
    x, y, dims, dt, dist = rng_checks(
        op, _host(a), _host(b), _host_shape(shape), rng_distribution, names
    )
    n = math.prod(dims)
    if dt.kind == "bool":  # UNIFORM on [False, True) holds only False
        out = device_empty(dims, np.bool_)
        if n:
            fill(flat(out), False)
        return from_holder(out, dt)
    if dt.kind in ("si", "ui"):  # lo + word % (hi - lo), modulo 2**64, the type's low bits
        lo, hi = int(compute(x)), int(compute(y))
        out = device_empty(dims, dt.np)
        mask = np.uint64((1 << dt.bits) - 1 if dt.bits < 64 else _M64_INT)
        base, span = np.uint64(lo & _M64_INT), np.uint64(hi - lo)
        word = np.dtype(f"u{dt.itemsize}")
        _draw(_uniform_int_k, n, base, span, mask, flat(out).view(word))
        return from_holder(out, dt)
    narrow = dt.name in NARROW  # bf16, f16, f8: float64 values rounded once, as the CPU
    if not narrow and dt.np not in (np.float32, np.float64):
        raise SpecError(op, "device", f"has no cuda kernel for element type {dt.name}")
    out = device_empty(dims, np.float64 if narrow else dt.np)
    if dist == "NORMAL":
        _draw(_normal_k, n, float(compute(x)), float(compute(y)), flat(out))
        return encode(from_holder(out, _F64), dt) if narrow else from_holder(out, dt)
    lo, hi = float(compute(x)), float(compute(y))
    width = hi - lo
    top = _largest_below(y._value, dt)  # results are kept in [a, b)
    top_f, a_f = float(np.asarray(top).astype(np.float64)), float(compute(x))
    args = (lo, hi, width, bool(np.isfinite(width)), top_f, a_f, not narrow, flat(out))
    _draw(_uniform_k, n, *args)
    if not narrow:
        return from_holder(out, dt)
    res = encode(from_holder(out, _F64), dt)
    if n:
        bits = np.dtype(f"u{dt.itemsize}")
        top_bits = np.asarray(top, dt.np).reshape(1).view(bits)[0]
        a_bits = np.asarray(x._value, dt.np).reshape(1).view(bits)[0]
        dec = flat(to_f32(res)._value)
        raw = flat(res._value).view(bits)
        launch_1d(_k(_clamp_bits_k), n, dec, top_f, a_f, top_bits, a_bits, raw)
    return res


def rng(a, b, shape, rng_distribution):
    """The kernel of ``rng``; it takes the arguments as the CPU op does (same signature)."""
    return _rng_device("rng", a, b, shape, rng_distribution, ["a", "b"])


def rng_uniform(a, b, shape):
    """The kernel of ``rng_uniform`` (same signature as the CPU op)."""
    return _rng_device("rng_uniform", a, b, shape, "UNIFORM", ["a", "b"])


def rng_normal(mu, sigma, shape):
    """The kernel of ``rng_normal`` (same signature as the CPU op)."""
    return _rng_device("rng_normal", mu, sigma, shape, "NORMAL", ["mu", "sigma"])


def rng_bernoulli(mean, shape):
    """The kernel of ``rng_bernoulli`` (same signature as the CPU op)."""
    p, dims = rng_bernoulli_checks(_host(mean), _host_shape(shape))
    out = device_empty(dims, np.uint32)
    _draw(_bernoulli_k, math.prod(dims), p, flat(out))
    return from_holder(out, as_dtype("ui32"))


KERNELS = {
    "rng_bit_generator": rng_bit_generator,
    "rng": rng,
    "rng_uniform": rng_uniform,
    "rng_normal": rng_normal,
    "rng_bernoulli": rng_bernoulli,
}
