"""Conversion ops: ``convert``, ``bitcast_convert`` and ``reduce_precision``
(StableHLO "stablehlo.convert" / "stablehlo.bitcast_convert" /
"stablehlo.reduce_precision"; XLA ConvertElementType, BitcastConvertType, ReducePrecision).

``convert`` and ``bitcast_convert`` are whole-array NumPy casts, views and bit packing;
``reduce_precision`` runs one Numba loop (``xops.kernels.conversion``). Every rounding
happens exactly once: see each op's docstring for the implementation-defined cases.

Autodiff (as ``jax.vjp``): ``convert`` between float/complex types sends the cotangent
back converted to the operand's type (complex -> real keeps the real part, so its
cotangent comes back as complex(g, 0); real -> complex sends back real(g)); to or from
integers and booleans nothing flows. ``reduce_precision`` is treated as the identity it
approximates: the cotangent goes back through the same rounding, as in JAX.
``bitcast_convert`` has no gradient: asking for one through it is a SpecError.
"""

import sys

import ml_dtypes
import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import as_dtype, from_compute, int_to_float, to_compute, wrap_int
from ..kernels import conversion as K
from ..tensor import Tensor, _wrap
from ._core import SpecError, attr_int, check, compute, operands, result, tstr
from ._core import quiet as _quiet  # (the spec defines NaN/inf/overflow results)

__all__ = ["convert", "bitcast_convert", "reduce_precision"]

_F32 = as_dtype("f32")
_F64 = as_dtype("f64")


def _result_dtype(op, dtype):
    try:
        return as_dtype(dtype)
    except TypeError as e:
        raise SpecError(op, "I2", f"result element type: {e}") from None


def _part_dtype(dt):
    """f32 for c64, f64 for c128."""
    return _F32 if dt.np == np.complex64 else _F64


# ---------------------------------------------------------------------------------------
# convert
# ---------------------------------------------------------------------------------------


@primitive("convert", elementwise=True)
def convert(operand, dtype):
    """stablehlo.convert: elementwise conversion to the element type ``dtype``, same
    shape (C1).

    * bool -> number: false -> 0, true -> 1. number -> bool: ``x != 0`` (NaN -> true).
    * complex -> anything else: the imaginary part is dropped first (so (0, 1) -> false,
      as the reference interpreter does); real -> complex: imaginary part +0.
    * int -> int: two's-complement wraparound at the target width (i2/i4 included).
    * int -> float and float -> float: round to nearest, ties to even, *once*.
      64-bit integers that float64 cannot hold exactly are first reduced to a float64
      that keeps a sticky bit below 24 significant bits, and float64 -> narrow goes through
      a round-to-odd float32 (``xops.dtypes.from_compute``), so no value is
      double-rounded. Overflow follows the target format: +-inf where it has inf (f16,
      bf16, f8E5M2, f8E4M3, f8E3M4); NaN for f8E4M3FN and the FNUZ types, for
      f8E8M0FNU (also for zero and negative values, which it cannot hold), and the
      largest finite value for f4E2M1FN/f6 types, which have neither inf nor NaN (a NaN
      becomes a zero there, +NaN -> -0 as in ml_dtypes and XLA CPU). f8E8M0FNU has a
      one-bit significand, so its ties go away from zero (APFloat, XLA).
    * float -> int: truncation toward zero; values outside the target range saturate to
      its min/max and NaN gives 0 (the spec leaves this open, #180; this is what the
      reference interpreter and XLA CPU's ``fptosi.sat`` do), for every width from i2 to
      ui64 (2**63 -> i64 max exactly).

    >>> xo.convert(xo.tensor([-1, 0, 1], "i64"), "c128")   # [(-1+0j), 0j, (1+0j)]
    xo.tensor([-1.+0.j,  0.+0.j,  1.+0.j], c128[3])
    >>> xo.convert(xo.tensor([2.7, -300.0, float("nan")]), "i8")   # [2, -128, 0]
    xo.tensor([   2, -128,    0], i8[3])
    """
    (x,) = operands("convert", operand, names=["operand"])
    dt = _result_dtype("convert", dtype)
    return _wrap(_convert_array(x._value, x._dtype, dt), dt)


@convert.defvjp
def _convert_vjp(g, out, operand, dtype):
    # only a float/complex operand can require a gradient, and a node exists only for a
    # float/complex result: g converted back (complex -> real drops the imaginary part)
    if isinstance(operand, Tensor) and operand._dtype.kind in ("float", "complex"):
        return convert(g, operand._dtype)
    return None


def _convert_array(a, src, dst):
    """Holder array ``a`` of element type ``src`` converted to ``dst``'s holder."""
    if src is dst:
        return a
    with _quiet():
        if src.is_complex:
            if dst.is_complex:
                return a.astype(dst.np)  # each part: float -> float, one rounding
            a, src = a.real, _part_dtype(src)
        if dst.is_bool:
            return to_compute(a, src) != 0
        if dst.is_complex:
            out = np.zeros(a.shape, dst.np)
            out.real = _convert_array(a, src, _part_dtype(dst))
            return out
        if src.is_inexact:
            v = to_compute(a, src)
            if dst.is_int:
                return _float_to_int(v, dst)
            return _float_to_float(v, dst)
        v = to_compute(a, src)  # bool, int8/uint8 (i2, i4, ui2, ui4), or the int itself
        if dst.is_int:
            return wrap_int(v, dst).astype(dst.np)
        return int_to_float(v, dst)


def _float_to_float(v, dst):
    """float32/float64 values -> float ``dst``, rounded to nearest even once."""
    if dst.np == v.dtype:
        return v
    if dst.np == np.float64 or dst.np == np.float32:
        return v.astype(dst.np)  # widening is exact; float64 -> float32 is one IEEE rounding
    return from_compute(v, dst)  # narrow: ml_dtypes from float32, round-to-odd from float64


def _float_to_int(v, dst):
    """Truncate toward zero and saturate to dst's range; NaN -> 0."""
    t = np.trunc(v.astype(np.float64))  # exact for every float type
    lo, hi = dst.min, dst.max
    wide = np.uint64 if dst.is_unsigned else np.int64
    below = t <= float(lo)  # lo is 0 or -2**(bits-1): exact in float64
    above = t >= float(hi + 1)  # hi + 1 = 2**k: exact, and not rounded like float(hi)
    bad = below | above | np.isnan(t)
    out = np.where(bad, 0, t).astype(wide)
    out[below] = lo
    out[above] = hi
    return wrap_int(out, dst).astype(dst.np) if dst.bits < 8 else out.astype(dst.np)


# ---------------------------------------------------------------------------------------
# bitcast_convert
# ---------------------------------------------------------------------------------------


def _bit_width(dt):
    """num_bits(E): 1 for i1 (the reference interpreter packs 64 i1 into an i64),
    2/4/6 for the sub-byte types, 64/128 for complex<f32>/complex<f64>."""
    return 1 if dt.is_bool else dt.bits


@primitive("bitcast_convert", quantized="storage", quantized_params=("operand",))
def bitcast_convert(operand, dtype):
    """stablehlo.bitcast_convert: reinterpret the bits of ``operand`` as ``dtype``.

    Equal widths keep the shape; a narrower result adds a minor dim of size
    width(E)/width(E'); a wider result needs the operand's last dim to be
    width(E')/width(E) and removes it (C1). Within a value the order is little-endian:
    result[..., 0] holds the lowest bits (spec example below). Complex only to and from
    complex (C2).

    Implementation-defined choices: i1 is 1 bit (as in the reference interpreter's
    conformance tests, i1[64] <-> i64); i2/ui2 are 2 bits, i4/ui4/f4E2M1FN 4 bits and
    f6E2M3FN/f6E3M2FN 6 bits, packed densely here although their holders use one byte
    per value, so a 6-bit float converts only to and from 1-, 2- and 6-bit types (other
    pairs have no integer width ratio: C1). complex<f32> is its real part's bits
    followed by its imaginary part's. Float results keep every bit (NaN payloads
    included).

    >>> x = xo.tensor(0x0123456789ABCDEF, "i64")
    >>> xo.bitcast_convert(x, "ui16")   # [0xCDEF, 0x89AB, 0x4567, 0x0123]
    xo.tensor([52719, 35243, 17767,   291], ui16[4])
    """
    (x,) = operands("bitcast_convert", operand, names=["operand"])
    src, dst, out_shape = bitcast_convert_checks(x, dtype)
    return _wrap(_bitcast_array(x._value, src, dst, out_shape), dst)


def bitcast_convert_checks(x, dtype):
    """bitcast_convert's constraints (C1, C2) on operand ``x`` (a Tensor on any device:
    only its type is read) and the result type; returns ``(src, dst, result shape)``."""
    op = "bitcast_convert"
    src, dst = x._dtype, _result_dtype(op, dtype)
    check(
        src.is_complex == dst.is_complex,
        op,
        "C2",
        lambda: (
            f"complex types convert only to and from complex types, got {tstr(x)} -> {dst.name}"
        ),
    )
    w, w2 = _bit_width(src), _bit_width(dst)
    shape = tuple(x.shape)
    if w2 == w:
        out_shape = shape
    elif w2 < w:
        check(
            w % w2 == 0,
            op,
            "C1",
            lambda: (
                f"the bit width of {dst.name} ({w2}) must divide that of {src.name} "
                f"({w}), got {tstr(x)} -> {dst.name}"
            ),
        )
        out_shape = shape + (w // w2,)
    else:
        check(
            w2 % w == 0,
            op,
            "C1",
            lambda: (
                f"the bit width of {src.name} ({w}) must divide that of {dst.name} "
                f"({w2}), got {tstr(x)} -> {dst.name}"
            ),
        )
        check(
            len(shape) >= 1 and shape[-1] == w2 // w,
            op,
            "C1",
            lambda: (
                f"operand's last dim must be {w2 // w} to make {dst.name} from "
                f"{src.name}, got {tstr(x)}"
            ),
        )
        out_shape = shape[:-1]
    return src, dst, out_shape


def _byte_aligned(dt):
    return not dt.is_bool and dt.bits % 8 == 0


def _bitcast_array(a, src, dst, out_shape):
    if sys.byteorder != "little":  # holders are read as little-endian bytes below
        raise NotImplementedError("bitcast_convert: big-endian hosts are not supported")
    if src is dst:
        return a
    flat = np.ascontiguousarray(a).reshape(-1)
    if _byte_aligned(src) and _byte_aligned(dst):
        # memory order is the spec's order: element-major, little-endian within a value
        return flat.view(np.uint8).view(dst.np).reshape(out_shape)
    # Otherwise go through "units" of u bits, u dividing both sides' fields (a byte of a
    # byte-aligned type, or the whole value of a sub-byte one): split, then regroup.
    u = min(_bit_width(src), _bit_width(dst), 8)
    return _join(_split(_fields(flat, src), _field_width(src), u), u, dst).reshape(out_shape)


def _field_width(dt):
    return 8 if _byte_aligned(dt) else _bit_width(dt)


def _fields(flat, dt):
    """The bytes of a byte-aligned type (little-endian), or the low bits of each byte
    of a sub-byte one (ml_dtypes and NumPy keep one value per byte, in its low bits)."""
    raw = flat.view(np.uint8)
    return raw if _byte_aligned(dt) else raw & np.uint8((1 << _bit_width(dt)) - 1)


def _split(fields, width, u):
    """Each ``width``-bit field as width/u units of u bits, least significant first."""
    if u == width:
        return fields
    if u == 1:
        return np.unpackbits(fields[:, None], axis=1, count=width, bitorder="little").reshape(-1)
    out = np.empty((fields.size, width // u), np.uint8)
    for j in range(width // u):
        out[:, j] = (fields >> np.uint8(j * u)) & np.uint8((1 << u) - 1)
    return out.reshape(-1)


def _join(units, u, dt):
    """Inverse of _split into ``dt``'s fields, then ``dt``'s holder."""
    width = _field_width(dt)
    if u == 1 and width > 1:
        units = np.packbits(units.reshape(-1, width), axis=1, bitorder="little").reshape(-1)
    elif u != width:
        groups = units.reshape(-1, width // u)
        units = groups[:, 0].copy()
        for j in range(1, width // u):
            units |= groups[:, j] << np.uint8(j * u)
    if dt.is_bool:
        return units.astype(np.bool_)
    return np.ascontiguousarray(units, np.uint8).view(dt.np)


# ---------------------------------------------------------------------------------------
# reduce_precision
# ---------------------------------------------------------------------------------------


def _float_format(dt):
    """(exponent-field bits, explicit mantissa bits, smallest normal exponent) of a
    real floating-point type."""
    fi = ml_dtypes.finfo(dt.np)
    return fi.nexp, fi.nmant, fi.minexp


@primitive("reduce_precision", elementwise=True, quantized="dequantize")
def reduce_precision(operand, exponent_bits, mantissa_bits):
    """stablehlo.reduce_precision: round to a float format with ``exponent_bits`` and
    ``mantissa_bits`` and back, keeping the element type (C1).

    The mantissa is rounded to ``mantissa_bits`` bits, ties to even (a carry may bump
    the exponent, up to inf); then, if ``exponent_bits`` is below the operand type's own
    exponent width, magnitudes below the reduced format's smallest normal
    2**(2 - 2**(exponent_bits-1)) become +-0 (its subnormals are flushed) and those
    beyond its largest finite value become +-inf. NaN is kept, but becomes +inf when
    ``mantissa_bits`` = 0 (reference interpreter). Bits beyond the operand type's own
    are a no-op; ``exponent_bits >= 1`` (C2), ``mantissa_bits >= 0`` (C3).

    For f32, f64 and the IEEE-like narrow types (f16, bf16, f8E5M2, f8E4M3, f8E3M4) this
    equals the spec's bit algorithm on the type's own bits, bit for bit: subnormals of
    the type round on its fixed subnormal grid, and with ``mantissa_bits`` = 0 a tie
    between 2**e and 2**(e+1) goes to the even *biased* exponent (3.0 -> 2.0, 6.0 -> 8.0),
    because the last kept "mantissa" bit is then the exponent's lowest bit. Other narrow
    types are treated by value with their exponent width, bias and subnormals (ml_dtypes
    ``finfo``); where they have no inf, +-inf becomes what ``convert`` makes of it (NaN,
    or the largest finite value for f4E2M1FN/f6 types), and a flushed f8E8M0FNU value
    (no zero) becomes NaN.

    >>> x = xo.tensor([float("inf"), float("nan"), 5e-324, 0.0, 65519.0, 65520.0], "f64")
    >>> xo.reduce_precision(x, 5, 10)   # [inf, nan, 0, 0, 65504, inf]
    xo.tensor([   inf,    nan,     0.,     0., 65504.,    inf], f64[6])
    """
    (x,) = operands("reduce_precision", operand, names=["operand"])
    dt = x._dtype
    e, m = reduce_precision_checks(x, exponent_bits, mantissa_bits)
    nexp, nmant, minexp = _float_format(dt)
    round_mantissa = m < nmant
    clamp = e < nexp
    if not round_mantissa and not clamp:
        return _wrap(x._value, dt)  # NaN kept too: m > 0, or f8E8M0FNU (inf -> NaN)
    smallest, overflow = 0.0, np.inf
    if clamp:
        bias = 2 ** (e - 1) - 1
        smallest, overflow = 2.0 ** (1 - bias), 2.0 ** (bias + 1)
    with _quiet():  # signalling NaNs of narrow types warn when widened
        v = np.ascontiguousarray(compute(x)).reshape(-1)
        out = np.empty_like(v)
        K.reduce_precision(
            v.size, v, out, min(m, nmant), round_mantissa, minexp, clamp, smallest, overflow
        )
        return result(out.reshape(x.shape), dt)


def reduce_precision_checks(x, exponent_bits, mantissa_bits):
    """reduce_precision's constraints (I1-I3, C2, C3) on operand ``x`` (a Tensor on any
    device: only its type is read) and the attributes; returns ``(exponent_bits,
    mantissa_bits)`` as ints."""
    op = "reduce_precision"
    check(
        x._dtype.is_float,
        op,
        "I1",
        lambda: f"operand must be a tensor of floating-point type, got {tstr(x)}",
    )
    e = attr_int(op, "I2", "exponent_bits", exponent_bits)
    m = attr_int(op, "I3", "mantissa_bits", mantissa_bits)
    check(-(2**31) <= e < 2**31, op, "I2", lambda: f"exponent_bits must fit si32, got {e}")
    check(-(2**31) <= m < 2**31, op, "I3", lambda: f"mantissa_bits must fit si32, got {m}")
    check(e >= 1, op, "C2", lambda: f"exponent_bits must be >= 1, got {e}")
    check(m >= 0, op, "C3", lambda: f"mantissa_bits must be >= 0, got {m}")
    return e, m


@reduce_precision.defvjp
def _reduce_precision_vjp(g, out, operand, exponent_bits, mantissa_bits):
    return reduce_precision(g, exponent_bits, mantissa_bits)


def reduce_precision_reference(bits, width, mantissa_width, exponent_bits, mantissa_bits):
    """The spec's algorithm, step by step, on raw bit patterns of an IEEE-754-style format
    with ``width`` bits of which ``mantissa_width`` are explicit mantissa bits (the
    reference interpreter's ``reducePrecision``). ``bits``: unsigned integer array.
    The test oracle of the kernel above; only meaningful for IEEE-like layouts."""
    u64 = np.uint64
    x = np.asarray(bits).astype(u64)
    src_exponent_bits = width - 1 - mantissa_width
    keep = u64((1 << width) - 1)
    sign_mask = u64(1 << (width - 1))
    exp_mask = u64(((1 << src_exponent_bits) - 1) << mantissa_width)
    is_nan = (x & ~sign_mask & keep) > exp_mask
    r = x
    if mantissa_bits < mantissa_width:
        shift = mantissa_width - mantissa_bits
        last_mantissa_bit = u64(1 << shift)
        rounding_bias = ((r & last_mantissa_bit) >> u64(shift)) + u64((1 << (shift - 1)) - 1)
        r = ((r + rounding_bias) & ~(last_mantissa_bit - u64(1))) & keep
    if exponent_bits < src_exponent_bits:
        exponent_bias = (1 << (src_exponent_bits - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = u64((exponent_bias + reduced_bias) << mantissa_width)
        min_exp = u64((exponent_bias - reduced_bias) << mantissa_width)
        exponent = r & exp_mask
        signed_zero = r & sign_mask
        r = np.where(exponent > max_exp, signed_zero | exp_mask, r)
        r = np.where(exponent <= min_exp, signed_zero, r)
    return np.where(is_nan, x if mantissa_bits > 0 else exp_mask, r)
