"""The f8 types on the device: decoding to float32 and correctly rounded encoding from
float32 and float64 bits, bit-exact with the CPU's (ml_dtypes') conversions.

An f8 tensor is stored on the device as its uint8 bit patterns (see :mod:`._storage`).
:mod:`.narrow` routes the f8 types here, so the elementwise kernels compute them as the
CPU does, in float32: each operand decoded (exact), the float32 kernel, the result
rounded once to nearest, ties to even. Both directions use integer arithmetic only, on
the bit patterns. Each format is (exponent bits, significand bits, bias, kind):

* kind 0, IEEE-like (f8E3M4, f8E4M3, f8E5M2): an all-ones exponent holds +-inf (zero
  significand) and NaNs; overflow rounds to +-inf; a NaN becomes the quiet NaN with the
  sign (the top significand bit), its payload dropped.
* kind 1, FN (f8E4M3FN): no infinities; only S.1111.111 is NaN. Overflow and +-inf
  become the NaN with the sign (ml_dtypes does not saturate).
* kind 2, FNUZ (f8E4M3FNUZ, f8E4M3B11FNUZ, f8E5M2FNUZ): no infinities and no -0; the one
  NaN is 0x80. Overflow, +-inf and NaN become 0x80; a result that rounds to zero is +0.

Decoded NaNs are float32's quiet NaN with the sign (FNUZ's NaN: with the sign bit set),
as ml_dtypes decodes them.

Four more formats (``MORE``) serve the elementwise kernels only (:mod:`.elementwise`; the
other kernels take the types of ``F8``):

* kind 3, no inf and no NaN (f4E2M1FN, f6E2M3FN, f6E3M2FN, one value per byte in its low
  4 or 6 bits): overflow and +-inf saturate to the largest magnitude with the sign; a
  NaN becomes a zero of the *opposite* sign (ml_dtypes: +NaN -> -0).
* kind 4, f8E8M0FNU (eight exponent bits, bias 127, no sign, no zero; 0xFF is NaN):
  2**(b - 127). A value rounds to the nearer power of two, ties (1.5 * 2**e) away from
  zero; zero, negative values, NaN, +-inf and values from 1.5 * 2**127 on become NaN;
  positive values below 2**-127 become 2**-127 (the CPU's conversion, which rounds from
  float64 through a round-to-odd float32: the same choice).
"""

import numpy as np
from numba import cuda

from ...dtypes import as_dtype
from ...tensor import _wrap
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d

__all__ = ["F8", "MORE", "FORMATS", "to_f32", "encode"]

# name -> (exponent bits, significand bits, bias, kind: 0 IEEE, 1 FN, 2 FNUZ)
F8 = {
    "f8E3M4": (3, 4, 3, 0),
    "f8E4M3": (4, 3, 7, 0),
    "f8E5M2": (5, 2, 15, 0),
    "f8E4M3FN": (4, 3, 7, 1),
    "f8E4M3FNUZ": (4, 3, 8, 2),
    "f8E4M3B11FNUZ": (4, 3, 11, 2),
    "f8E5M2FNUZ": (5, 2, 16, 2),
}
# the formats of the elementwise kernels only (see the module's docstring)
MORE = {
    "f4E2M1FN": (2, 1, 1, 3),
    "f6E2M3FN": (2, 3, 1, 3),
    "f6E3M2FN": (3, 2, 3, 3),
    "f8E8M0FNU": (8, 0, 127, 4),
}
FORMATS = {**F8, **MORE}
_F32 = as_dtype("f32")


# -- device functions ---------------------------------------------------------------------


@cuda.jit(device=True)
def round_quantum(sig, ex, q):
    """``sig * 2**ex`` (int64 ``sig`` >= 0) in units of ``2**q``, rounded to nearest, ties
    to even (shared with :mod:`.narrow`)."""
    shift = q - ex
    if shift <= 0:
        return sig << (0 - shift)
    if shift > 60:  # far below half the smallest quantum
        return sig - sig
    r = sig >> shift
    rem = sig - (r << shift)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and (r & 1) == 1):
        r += 1
    return r


@cuda.jit(device=True)
def _decode(h, eb, mb, bias, kind):
    """float32 bits (an int64 in [0, 2**32)) of the f8 bits ``h`` of format
    (eb, mb, bias, kind) (see the module's docstring)."""
    if kind == 4:  # f8E8M0FNU: 2**(h - 127); float32 holds 2**-127 as a subnormal
        if h == 255:
            return 0x7FC00000
        return 0x400000 if h == 0 else h << 23
    sign = ((h >> (eb + mb)) & 1) << 31
    e = (h >> mb) & ((1 << eb) - 1)
    m = h & ((1 << mb) - 1)
    if kind == 2:
        if h == 128:
            return 0xFFC00000
    elif kind == 1:
        if (h & 127) == 127:
            return sign | 0x7FC00000
    elif kind == 0 and e == (1 << eb) - 1:  # (kind 3 has no inf and no NaN)
        if m == 0:
            return sign | 0x7F800000
        return sign | 0x7FC00000
    if e == 0:
        if m == 0:
            return sign
        e = 1  # a subnormal: normalised below (float32 holds every one as a normal)
        while (m >> mb) == 0:
            m = m << 1
            e -= 1
        m = m & ((1 << mb) - 1)
    return sign | ((e - bias + 127) << 23) | (m << (23 - mb))


@cuda.jit(device=True)
def _round(sign, mag, es, ms, eb, mb, bias, kind):
    """The f8 bits of format (eb, mb, bias, kind) nearest (ties to even) to the float of
    the IEEE format (es, ms) with sign bit ``sign`` and magnitude bits ``mag`` (int64)."""
    emax = (1 << es) - 1
    e = mag >> ms
    m = mag & ((1 << ms) - 1)
    if kind == 4:
        return _round_e8m0(sign, mag, e, m, es, ms, emax)
    top_bit = sign << (eb + mb)
    if kind == 3:  # saturating; a NaN becomes a zero of the opposite sign
        nan = (1 - sign) << (eb + mb)
        over = top_bit | ((1 << (eb + mb)) - 1)
        limit = 1 << (eb + mb)
    elif kind == 0:
        nan = top_bit | (((1 << eb) - 1) << mb) | (1 << (mb - 1))
        over = top_bit | (((1 << eb) - 1) << mb)  # +-inf
        limit = ((1 << eb) - 1) << mb  # the first magnitude that overflows
    elif kind == 1:
        nan = top_bit | 127
        over = nan
        limit = 127
    else:
        nan = 128
        over = nan
        limit = 128
    if e == emax:
        return over if m == 0 else nan
    if e == 0:  # zero, or a subnormal source: far below half the least f8 value
        return top_bit if kind != 2 else 0
    sig = m | (1 << ms)
    ex = e - ((1 << (es - 1)) - 1) - ms  # the value is sig * 2**ex
    q = ex + ms  # its exponent; q becomes the result's quantum exponent
    if q < 1 - bias:
        q = 1 - bias
    q = q - mb
    r = round_quantum(sig, ex, q)
    bits = ((q + mb + bias - 1) << mb) + r  # (a carry out of the significand is right)
    if bits >= limit:
        return over
    if bits == 0 and kind == 2:
        return 0
    return top_bit | bits


@cuda.jit(device=True)
def _round_e8m0(sign, mag, e, m, es, ms, emax):
    """The f8E8M0FNU bits nearest to the float of the IEEE format (es, ms) with sign bit
    ``sign``, magnitude bits ``mag``, biased exponent ``e`` and significand field ``m``
    (ties away from zero; see the module's docstring)."""
    if sign == 1 or mag == 0 or e == emax:
        return 255
    bias_s = (1 << (es - 1)) - 1
    if e == 0:  # a subnormal source: its leading bit gives the exponent
        top = ms - 1
        while (m >> top) == 0:
            top -= 1
        q = top + 1 - bias_s - ms
        up = (m >> (top - 1)) & 1 if top >= 1 else 0
    else:
        q = e - bias_s
        up = (m >> (ms - 1)) & 1  # the bit worth half the exponent's power: a tie rounds up
    r = q + up + 127
    if r < 0:
        return 0
    return 255 if r >= 255 else r


# -- kernels ------------------------------------------------------------------------------


def _decode_k(x, eb, mb, bias, kind, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = _decode(np.int64(x[i]), eb, mb, bias, kind)


def _encode32_k(x, eb, mb, bias, kind, out):
    """float32 bits (read through a uint32 view) -> f8 bits."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.int64(x[i])
        out[i] = _round((b >> 31) & 1, b & 0x7FFFFFFF, 8, 23, eb, mb, bias, kind)


def _encode64_k(x, eb, mb, bias, kind, out):
    """float64 bits (read through an int64 view) -> f8 bits."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.int64(x[i])
        out[i] = _round((b >> 63) & 1, b & 0x7FFFFFFFFFFFFFFF, 11, 52, eb, mb, bias, kind)


# -- tensors ------------------------------------------------------------------------------


def to_f32(t):
    """An f8 tensor's values as float32 (exact): a device tensor for a device tensor, a
    0-d CPU tensor for a 0-d CPU one (a weak scalar operand)."""
    v = t._value
    if not hasattr(v, "copy_to_host"):
        return _wrap(np.asarray(v, np.float32), _F32)
    out = device_empty(t.shape, np.float32)
    fmt = FORMATS[t._dtype.name]
    launch_1d(_k(_decode_k), t.size, flat(v), *fmt, flat(out).view(np.uint32))
    return from_holder(out, _F32)


def encode(t, dt):
    """Device tensor ``t`` (f32 or f64) rounded to f8 type ``dt``."""
    out = device_empty(t.shape, dt.np)
    if t._dtype.np == np.float32:
        src, kernel = flat(t._value).view(np.uint32), _encode32_k
    else:
        src, kernel = flat(t._value).view(np.int64), _encode64_k
    launch_1d(_k(kernel), t.size, src, *FORMATS[dt.name], flat(out))
    return from_holder(out, dt)
