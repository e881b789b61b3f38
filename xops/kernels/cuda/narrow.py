"""bf16 and f16 on the device: decoding to float32 and correctly rounded encoding from
float32, float64 and integers, bit-exact with the CPU's conversions.

A bf16 or f16 tensor is stored on the device as its uint16 bit patterns (see
:mod:`._storage`). The elementwise kernels compute these types as the CPU does, in
float32 (:mod:`.elementwise`): each operand is decoded to a float32 device array (exact),
the float32 kernel runs, and the float32 result is encoded back, rounded once to nearest,
ties to even. The decode and encode kernels work on the bit patterns with integer
arithmetic only (float buffers are read and written through unsigned or signed integer
views of the same device memory), so they type the same on a GPU and on the simulator and
need no bit-cast intrinsic. They reproduce the CPU's conversions bit for bit:

* bf16 -> f32: the bits shifted up by 16 (ml_dtypes); f16 -> f32: NumPy's conversion
  (subnormals normalised, a NaN's payload shifted up by 13, no quieting).
* f32 or f64 -> bf16 / f16: round to nearest even from the source's exact value (so a
  float64 is rounded once, as the CPU's round-to-odd float32 step for bf16 and NumPy's
  direct float64 -> f16 are), overflow to +-inf. A NaN becomes bf16's quiet NaN
  ``0x7fc0`` with the sign (ml_dtypes), or for f16 NumPy's payload-keeping NaN (the sign,
  ``0x7c00`` and the top ten payload bits, or ``0x7c01`` where those are zero).
* integers -> bf16 / f16: 64-bit values that float64 cannot hold exactly are first
  reduced to a float64 with a sticky bit (as the CPU does), so they round once.

The f8 types (but f8E8M0FNU) are narrow types too: :mod:`.f8` decodes and encodes them.
f4E2M1FN, f6E2M3FN, f6E3M2FN and f8E8M0FNU are *small floats* (:func:`is_small_float`;
:mod:`.f8` converts them too): the elementwise kernels take them, and since session 22
the others (dot_general, reduce, reduce_window, select_and_scatter, convolution, the batch
norm ops) as the narrow types, decoded to float32 and rounded once, as the CPU. int4 and
the other sub-byte types, and complex, are neither (see :mod:`.subbyte`, :mod:`.complex`).
"""

import numpy as np
from numba import cuda

from ...dtypes import as_dtype
from ...tensor import _wrap
from . import f8 as _f8
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d

__all__ = ["NARROW", "SMALL", "is_narrow", "is_small_float", "to_f32", "encode", "from_int"]

NARROW = ("bf16", "f16", *_f8.F8)
_F32 = as_dtype("f32")
_F64 = as_dtype("f64")
# per format: (exponent bits, significand bits, NaN rule: 0 canonical quiet NaN, 1 payload)
_FORMAT = {"bf16": (8, 7, 0), "f16": (5, 10, 1)}


SMALL = NARROW + tuple(_f8.MORE)


def is_narrow(dt):
    return dt.name in NARROW


def is_small_float(dt):
    """A float type narrower than f32 that the elementwise kernels decode and encode:
    the narrow types and f4E2M1FN, f6E2M3FN, f6E3M2FN, f8E8M0FNU."""
    return dt.name in SMALL


# -- device functions ---------------------------------------------------------------------


@cuda.jit(device=True)
def _round_pack(sign, mag, es, ms, ed, md, nan_payload):
    """The bits of format (ed, md) nearest (ties to even) to the float of format (es, ms)
    with sign bit ``sign`` and magnitude bits ``mag`` (int64, es + ms <= 63)."""
    emax = (1 << es) - 1
    e = mag >> ms
    m = mag & ((1 << ms) - 1)
    inf = ((1 << ed) - 1) << md
    top_bit = sign << (ed + md)
    if e == emax:
        if m == 0:
            return top_bit | inf
        if nan_payload == 0:
            return top_bit | inf | (1 << (md - 1))
        r = inf | (m >> (ms - md))
        if r == inf:
            r += 1
        return top_bit | r
    if e == 0 and m == 0:
        return top_bit
    bias_s = (1 << (es - 1)) - 1
    bias_d = (1 << (ed - 1)) - 1
    if e == 0:  # a subnormal source: value = m * 2**ex
        sig = m
        ex = 1 - bias_s - ms
        top = 0
        while (sig >> (top + 1)) != 0:
            top += 1
    else:
        sig = m | (1 << ms)
        ex = e - bias_s - ms
        top = ms
    q = ex + top  # the value's exponent; q becomes the result's quantum exponent
    if q < 1 - bias_d:
        q = 1 - bias_d
    q = q - md
    r = _f8.round_quantum(sig, ex, q)
    bits = ((q + md + bias_d - 1) << md) + r  # (a carry out of the significand is right)
    if bits >= inf:
        bits = inf
    return top_bit | bits


@cuda.jit(device=True)
def _decode(h, f16):
    """float32 bits (an int64 in [0, 2**32)) of bf16 (f16 = 0) or f16 bits ``h``."""
    if f16 == 0:
        return h << 16
    sign = (h >> 15) << 31
    e = (h >> 10) & 31
    m = h & 1023
    if e == 31:
        return sign | 0x7F800000 | (m << 13)
    if e == 0:
        if m == 0:
            return sign
        e32 = 113  # 127 - 15 + 1, lowered once per normalising shift
        while (m & 1024) == 0:
            m = m << 1
            e32 -= 1
        return sign | (e32 << 23) | ((m & 1023) << 13)
    return sign | ((e + 112) << 23) | (m << 13)


# -- kernels ------------------------------------------------------------------------------


def _decode_k(x, f16, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = _decode(np.int64(x[i]), f16)


def _encode32_k(x, ed, md, nan_payload, out):
    """float32 bits (read through a uint32 view) -> (ed, md) bits."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.int64(x[i])
        out[i] = _round_pack((b >> 31) & 1, b & 0x7FFFFFFF, 8, 23, ed, md, nan_payload)


def _encode64_k(x, ed, md, nan_payload, out):
    """float64 bits (read through an int64 view) -> (ed, md) bits."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.int64(x[i])
        out[i] = _round_pack((b >> 63) & 1, b & 0x7FFFFFFFFFFFFFFF, 11, 52, ed, md, nan_payload)


def _int64_k(x, unsigned, out):
    """64-bit integers (read as int64; ``unsigned``: as uint64) -> float64 values that
    round like them to any format of at most 40 significand bits: exact below 2**53, else
    the top bits with a sticky bit for the rest (every product and sum below is exact)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        n = np.int64(x[i])
        if unsigned == 0 and -9007199254740992 < n < 9007199254740992:
            out[i] = np.float64(n)
        elif unsigned == 1 and 0 <= n < 9007199254740992:
            out[i] = np.float64(n)
        else:
            lo = n & 8191  # 13 low bits
            hi = n >> 13  # arithmetic: floor(n / 8192)
            if unsigned == 1:
                hi = hi & 0x7FFFFFFFFFFFF  # (51 bits: n read as unsigned)
            neg = unsigned == 0 and n < 0
            if neg:  # |n| = -hi * 8192 - lo
                if lo != 0:
                    hi = -hi - 1
                    lo = 8192 - lo
                else:
                    hi = -hi
            sticky = 1 if lo != 0 else 0
            v = np.float64(hi * 2 + sticky) * 4096.0
            out[i] = -v if neg else v


# -- tensors ------------------------------------------------------------------------------


def to_f32(t):
    """A bf16 / f16 (or f8, f6, f4) tensor's values as float32 (exact): a device tensor
    for a device tensor, a 0-d CPU tensor for a 0-d CPU one (a weak scalar operand)."""
    v = t._value
    if t._dtype.name in _f8.FORMATS:
        return _f8.to_f32(t)
    if not hasattr(v, "copy_to_host"):
        return _wrap(np.asarray(v, np.float32), _F32)
    out = device_empty(t.shape, np.float32)
    f16 = int(t._dtype.name == "f16")
    bits = flat(v).view(np.uint16)  # (f16 is stored as float16)
    launch_1d(_k(_decode_k), t.size, bits, f16, flat(out).view(np.uint32))
    return from_holder(out, _F32)


def encode(t, dt):
    """Device tensor ``t`` (f32 or f64) rounded to narrow type ``dt`` (bf16, f16, f8, f6,
    f4)."""
    if dt.name in _f8.FORMATS:
        return _f8.encode(t, dt)
    ed, md, nan_payload = _FORMAT[dt.name]
    out = device_empty(t.shape, dt.np)
    if t._dtype.np == np.float32:
        src, kernel = flat(t._value).view(np.uint32), _encode32_k
    else:
        src, kernel = flat(t._value).view(np.int64), _encode64_k
    launch_1d(_k(kernel), t.size, src, ed, md, nan_payload, flat(out).view(np.uint16))
    return from_holder(out, dt)


def from_int(t):
    """A 64-bit integer device tensor as float64 values that round to bf16 / f16 as the
    integers do (see ``_int64_k``)."""
    out = device_empty(t.shape, np.float64)
    unsigned = int(t._dtype.kind == "ui")
    launch_1d(_k(_int64_k), t.size, flat(t._value).view(np.int64), unsigned, flat(out))
    return from_holder(out, _F64)
