"""CUDA kernels of ``reduce_precision`` and ``bitcast_convert`` (``convert`` is in
:mod:`.elementwise`), bit-exact with the CPU ops of :mod:`xops.ops.conversion`.

Both run the CPU op's own checks (``reduce_precision_checks``, ``bitcast_convert_checks``:
types and attributes only), then launch one thread per result element:

* reduce_precision works on the bit patterns of float32 or float64 values (read and
  written through uint32 / int64 views), computing what the CPU kernel computes on their
  values: the mantissa rounded to nearest even at the quantum ``2**(max(e, minexp) -
  mantissa_bits)`` (``minexp`` the operand type's smallest normal exponent; a tie between
  2**e and 2**(e+1) with no mantissa bits goes to the even biased exponent), then the
  reduced format's range (below its smallest normal: +-0; from 2**(bias+1) on: +-inf);
  NaN kept, or +inf when ``mantissa_bits`` is 0. The narrow float types are decoded to
  float32 (exact), reduced there with their own format's parameters and rounded back
  (:mod:`.narrow`), as on the CPU, so +-inf becomes NaN or the largest value where the
  type has no inf.
* bitcast_convert between two byte-aligned types (integers, floats, complex) is a view of
  the same device memory (no launch): memory order is the spec's order, little-endian
  within a value. Other pairs (i1 as one bit, i2 / ui2, i4 / ui4 / f4, f6; one value per
  byte in its low bits) are one kernel: result element ``o`` of width w2 is bits
  ``[o * w2, (o + 1) * w2)`` of the operand's dense bit stream, split from one operand
  element or joined from w2 / w of them.
"""

import numpy as np
from numba import cuda

from ...ops._core import operands
from ...ops.conversion import _bit_width, _float_format, bitcast_convert_checks
from ...ops.conversion import reduce_precision_checks
from ...errors import SpecError
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d, shaped
from ._storage import storage_dtype
from .elementwise import _dev
from .f8 import round_quantum
from .narrow import encode, is_small_float, to_f32

__all__ = ["KERNELS"]

_SIGN64 = -(2**63)


# -- reduce_precision -----------------------------------------------------------------------


@cuda.jit(device=True)
def _reduce(sign, mag, es, ms, mbits, round_m, minexp, clamp, lo, hi):
    """(sign, magnitude bits) of the IEEE format (es, ms) value with sign bit ``sign``
    and magnitude bits ``mag``, reduced as the CPU kernel does (see the module's
    docstring; ``lo`` / ``hi``: the exponents of the reduced format's smallest normal
    and of its overflow threshold)."""
    emax = (1 << es) - 1
    inf = emax << ms
    e = mag >> ms
    if e == emax:
        if mag != inf and mbits == 0:  # NaN -> +inf
            return 0, inf
        return sign, mag  # NaN kept; +-inf is its own rounding and beyond any range
    if mag == 0:
        return sign, mag
    bias_s = (1 << (es - 1)) - 1
    sig = mag & ((1 << ms) - 1)
    if e == 0:
        ex = 1 - bias_s - ms
    else:
        sig = sig | (1 << ms)
        ex = e - bias_s - ms  # the value is sig * 2**ex
    top = 0
    while (sig >> (top + 1)) != 0:
        top += 1
    lg = top + ex  # floor(log2(value))
    if round_m == 1:
        k = (lg if lg > minexp else minexp) - mbits
        tie = top >= 1 and sig == 3 << (top - 1)
        sig = round_quantum(sig, ex, k)
        if mbits == 0 and tie and lg >= minexp and (lg & 1) == 1:
            sig = 1  # 1.5 * 2**lg: the even biased exponent, 2**lg
        ex = k
        if sig == 0:
            return sign, sig
        top = 0
        while (sig >> (top + 1)) != 0:
            top += 1
        lg = top + ex
    if clamp == 1:
        if lg < lo:
            return sign, sig - sig
        if lg >= hi:
            return sign, inf
    if lg > emax - 1 - bias_s:  # beyond the operand type: inf, as the CPU's store
        return sign, inf
    if lg >= 1 - bias_s:  # a normal number of the operand's type (top <= ms)
        return sign, ((lg + bias_s) << ms) | ((sig << (ms - top)) & ((1 << ms) - 1))
    return sign, sig << (ex - (1 - bias_s - ms))  # a subnormal one (on its grid)


def _reduce32_k(x, mbits, round_m, minexp, clamp, lo, hi, out):
    """float32 bits (through uint32 views)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.int64(x[i])
        s, m = _reduce((b >> 31) & 1, b & 0x7FFFFFFF, 8, 23, mbits, round_m, minexp, clamp, lo, hi)
        out[i] = (s << 31) | m


def _reduce64_k(x, mbits, round_m, minexp, clamp, lo, hi, out):
    """float64 bits (through int64 views)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.int64(x[i])
        s, m = _reduce(
            (b >> 63) & 1, b & 0x7FFFFFFFFFFFFFFF, 11, 52, mbits, round_m, minexp, clamp, lo, hi
        )
        out[i] = m if s == 0 else m | _SIGN64


def reduce_precision(operand, exponent_bits, mantissa_bits):
    (x,) = operands("reduce_precision", operand, names=["operand"])
    e, m = reduce_precision_checks(x, exponent_bits, mantissa_bits)
    dt = x._dtype
    nexp, nmant, minexp = _float_format(dt)
    round_m, clamp = m < nmant, e < nexp
    if not round_m and not clamp:
        return from_holder(x._value, dt)  # (the CPU's no-op: the same buffer)
    f = to_f32(x) if is_small_float(dt) else x
    bias = 2 ** (e - 1) - 1 if clamp else 0
    args = (min(m, nmant), int(round_m), int(minexp), int(clamp), 1 - bias, bias + 1)
    out = device_empty(x.shape, f._dtype.np)
    if f._dtype.np == np.float32:
        src, dst, kernel = flat(f._value).view(np.uint32), flat(out).view(np.uint32), _reduce32_k
    else:
        src, dst, kernel = flat(f._value).view(np.int64), flat(out).view(np.int64), _reduce64_k
    launch_1d(_k(kernel), x.size, src, *args, dst)
    r = from_holder(out, f._dtype)
    return encode(r, dt) if is_small_float(dt) else r


# -- bitcast_convert --------------------------------------------------------------------------

_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.int64}  # how elements are read


def _bitcast_k(x, w, w2, out):
    """Result element o = bits [o * w2, (o + 1) * w2) of the operand's dense bit stream
    (elements of w bits, least significant first)."""
    o = cuda.grid(1)
    if o < out.shape[0]:
        if w2 <= w:  # a piece of one operand element
            bit = o * w2
            src = bit // w
            f = np.int64(x[src])
            if w < 64:
                f = f & ((1 << w) - 1)
            r = f >> (bit - src * w)
            if w2 < 64:
                r = r & ((1 << w2) - 1)
            out[o] = r
        else:  # w2 / w operand elements, the first in the lowest bits
            n = w2 // w
            r = np.int64(0)
            for t in range(n):
                r = r | ((np.int64(x[o * n + t]) & ((1 << w) - 1)) << (t * w))
            out[o] = r


def _words(devarr, dt):
    """A flat device array's elements as the integer words the kernel reads."""
    v = flat(devarr)
    return v.view(_WORD[1] if dt.is_bool or dt.bits < 8 else _WORD[dt.np.itemsize])


def bitcast_convert(operand, dtype):
    (x,) = operands("bitcast_convert", operand, names=["operand"])
    src, dst, out_shape = bitcast_convert_checks(x, dtype)
    for t in (src, dst):
        if getattr(t, "quantized", False):
            raise SpecError(
                "bitcast_convert", "device", f"has no cuda kernel for element type {t.name}"
            )
    v = _dev("bitcast_convert", x)
    if src is dst:
        return from_holder(shaped(v, out_shape), dst)
    w, w2 = _bit_width(src), _bit_width(dst)
    if w % 8 == 0 and w2 % 8 == 0 and not src.is_bool and not dst.is_bool:  # a view
        return from_holder(shaped(v, out_shape, storage_dtype(dst.np)), dst)
    out = device_empty(out_shape, dst.np)
    n = int(np.prod(out_shape, dtype=np.int64))
    launch_1d(_k(_bitcast_k), n, _words(v, src), w, w2, _words(out, dst))
    return from_holder(out, dst)


KERNELS = {"reduce_precision": reduce_precision, "bitcast_convert": bitcast_convert}
