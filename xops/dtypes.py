"""Element types: every type the StableHLO spec names that NumPy or ml_dtypes can hold.

This module is the *dtype layer*. Tensors store their data in a "holder" NumPy dtype
(``ml_dtypes.bfloat16``, ``ml_dtypes.int4``, ``numpy.float32``, ...). Numba's CPU target
cannot type ml_dtypes arrays and has no float16 arithmetic, so every op computes in a
*compute* dtype and rounds back to the holder once per op, as XLA does:

=================================  ===================  =====================================
element types                       compute dtype        back to the holder
=================================  ===================  =====================================
i1                                  bool                 as is
i2, i4 / ui2, ui4                   int8 / uint8         wraps at the type's own width
i8..i64, ui8..ui64                  itself               as is
f4, f6, f8 variants, bf16, f16      float32              round to nearest even, once
f32, f64, c64, c128                 itself               as is
=================================  ===================  =====================================

float32 has at least 2p+2 significand bits for every narrow float (p <= 11), so
+, -, *, / and sqrt computed in float32 and rounded once are correctly rounded —
except for f8E8M0FNU, whose exponent range equals float32's and which has no zero:
its products and quotients compute in float64 (see ``xops.ops.elementwise._base._same2``).
Values coming from float64 are rounded to float32 *to odd* first, which makes the
second rounding exact (ml_dtypes itself double-rounds float64 -> bfloat16/float8).

Dtypes are keyed by object and name, never by ``dtype.kind`` or ``dtype.char``:
ml_dtypes reuses chars ('E' is both bfloat16 and uint1).
"""

from operator import attrgetter

import numpy as np
import ml_dtypes

from .errors import SpecError

__all__ = ["DType", "as_dtype", "all_dtypes"]


def delegate(path, doc=None):
    """A read-only property that returns ``self.<path>`` (dotted: ``"_value.shape"``),
    through a C attrgetter: no slower than a one-line getter method."""
    return property(attrgetter(path), doc=doc)


def _kind_in(*kinds):
    """A DType property: whether the type's ``kind`` is one of ``kinds``."""
    return property(
        lambda self: self.kind in kinds, doc=f"Whether the kind is {' or '.join(map(repr, kinds))}."
    )


class DType:
    """One element type of the spec.

    ``name`` is the spec's short name (``"f32"``, ``"bf16"``, ``"i4"``, ``"ui8"``,
    ``"i1"``, ``"c64"``); ``np`` the holder NumPy dtype; ``kind`` one of ``"bool"``,
    ``"si"``, ``"ui"``, ``"float"``, ``"complex"``; ``bits`` the logical bit width.
    """

    __slots__ = ("name", "np", "kind", "bits", "pyname", "compute", "_spec")
    quantized = False  # True for xops.qtype.QuantizedType

    def __init__(self, name, holder, kind, bits, pyname, compute, spec=None):
        self.name = name
        self.np = np.dtype(holder)
        self.kind = kind
        self.bits = bits
        self.pyname = pyname
        self.compute = np.dtype(compute)
        self._spec = spec or name

    # -- classification -------------------------------------------------------------
    is_bool = _kind_in("bool")
    is_int = _kind_in("si", "ui")  # signed or unsigned integer (not i1)
    is_signed = _kind_in("si")
    is_unsigned = _kind_in("ui")
    is_float = _kind_in("float")
    is_complex = _kind_in("complex")
    is_inexact = _kind_in("float", "complex")

    @property
    def is_narrow(self):
        """Held in a type Numba cannot compute in (ml_dtypes types and float16)."""
        return self.compute != self.np

    itemsize = delegate("np.itemsize", "Bytes per element of the holder dtype.")
    spec_name = delegate(
        "_spec", "The name as the StableHLO type grammar writes it (``complex<f32>``)."
    )

    # -- integer range --------------------------------------------------------------
    @property
    def min(self):
        if self.kind == "si":
            return -(1 << (self.bits - 1))
        if self.kind in ("ui", "bool"):
            return 0
        return float((ml_dtypes.finfo if self.is_narrow else np.finfo)(self.np).min)

    @property
    def max(self):
        if self.kind == "si":
            return (1 << (self.bits - 1)) - 1
        if self.kind == "ui":
            return (1 << self.bits) - 1
        if self.kind == "bool":
            return 1
        return float((ml_dtypes.finfo if self.is_narrow else np.finfo)(self.np).max)

    # -- identity -------------------------------------------------------------------
    def __repr__(self):
        return f"xo.{self.pyname}"

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if other is self:
            return True
        try:
            return as_dtype(other) is self
        except (TypeError, ValueError):
            return False

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        return (as_dtype, (self.name,))


_ALL = []
_BY_KEY = {}


def _register(name, holder, kind, bits, pyname, compute=None, aliases=(), spec=None):
    dt = DType(name, holder, kind, bits, pyname, holder if compute is None else compute, spec)
    _ALL.append(dt)
    for key in (name, pyname, *aliases):
        _BY_KEY[key] = dt
    _BY_KEY.setdefault(np.dtype(holder), dt)
    globals()[pyname] = dt
    __all__.append(pyname)
    return dt


md = ml_dtypes
_register("i1", np.bool_, "bool", 1, "bool_", aliases=("pred", "bool", "PRED"))
_register("i2", md.int2, "si", 2, "int2", np.int8, aliases=("si2", "s2"))
_register("i4", md.int4, "si", 4, "int4", np.int8, aliases=("si4", "s4"))
_register("i8", np.int8, "si", 8, "int8", aliases=("si8", "s8"))
_register("i16", np.int16, "si", 16, "int16", aliases=("si16", "s16"))
_register("i32", np.int32, "si", 32, "int32", aliases=("si32", "s32"))
_register("i64", np.int64, "si", 64, "int64", aliases=("si64", "s64"))
_register("ui2", md.uint2, "ui", 2, "uint2", np.uint8, aliases=("u2",))
_register("ui4", md.uint4, "ui", 4, "uint4", np.uint8, aliases=("u4",))
_register("ui8", np.uint8, "ui", 8, "uint8", aliases=("u8",))
_register("ui16", np.uint16, "ui", 16, "uint16", aliases=("u16",))
_register("ui32", np.uint32, "ui", 32, "uint32", aliases=("u32",))
_register("ui64", np.uint64, "ui", 64, "uint64", aliases=("u64",))
_register("f4E2M1FN", md.float4_e2m1fn, "float", 4, "float4_e2m1fn", np.float32)
_register("f6E2M3FN", md.float6_e2m3fn, "float", 6, "float6_e2m3fn", np.float32)
_register("f6E3M2FN", md.float6_e3m2fn, "float", 6, "float6_e3m2fn", np.float32)
_register("f8E3M4", md.float8_e3m4, "float", 8, "float8_e3m4", np.float32)
_register("f8E4M3", md.float8_e4m3, "float", 8, "float8_e4m3", np.float32)
_register("f8E4M3FN", md.float8_e4m3fn, "float", 8, "float8_e4m3fn", np.float32)
_register("f8E4M3FNUZ", md.float8_e4m3fnuz, "float", 8, "float8_e4m3fnuz", np.float32)
_register("f8E4M3B11FNUZ", md.float8_e4m3b11fnuz, "float", 8, "float8_e4m3b11fnuz", np.float32)
_register("f8E5M2", md.float8_e5m2, "float", 8, "float8_e5m2", np.float32)
_register("f8E5M2FNUZ", md.float8_e5m2fnuz, "float", 8, "float8_e5m2fnuz", np.float32)
_register("f8E8M0FNU", md.float8_e8m0fnu, "float", 8, "float8_e8m0fnu", np.float32)
_register("bf16", md.bfloat16, "float", 16, "bfloat16", np.float32, aliases=("BF16",))
_register("f16", np.float16, "float", 16, "float16", np.float32, aliases=("half", "F16"))
_register("f32", np.float32, "float", 32, "float32", aliases=("float", "F32"))
_register("f64", np.float64, "float", 64, "float64", aliases=("double", "F64"))
_register(
    "c64",
    np.complex64,
    "complex",
    64,
    "complex64",
    aliases=("complex<f32>", "C64"),
    spec="complex<f32>",
)
_register(
    "c128",
    np.complex128,
    "complex",
    128,
    "complex128",
    aliases=("complex<f64>", "C128"),
    spec="complex<f64>",
)
del md

_PY_TYPES = {bool: bool_, int: int64, float: float32, complex: complex64}  # noqa: F821

# Quantized element types (xops.qtype) lie above this module: xops.qtype installs its
# reader of ``!quant.uniform<...>`` text here when it is imported (``import xops`` imports
# it), so this module imports nothing of xops but the errors.
_QUANTIZED_READER = []


def set_quantized_reader(read):
    """``read(text)``: the quantized DType that ``!quant.`` text names (a TypeError when
    the text does not parse); :func:`as_dtype` calls it (installed by xops.qtype)."""
    _QUANTIZED_READER[:] = [read]


def all_dtypes():
    """Every supported element type, in the order of the spec's type grammar."""
    return list(_ALL)


def as_dtype(x, op="element type", label=""):
    """The DType for ``x``: a DType, a spec name (``"f32"``, ``"bf16"``, ``"i4"``,
    ``"complex<f32>"``, ``"!quant.uniform<i8:f32, 0.1:-30>"``), an xops/NumPy name
    (``"float32"``), a NumPy or ml_dtypes dtype or scalar type, or a Python type (bool ->
    i1, int -> i64, float -> f32, complex -> c64). Anything else is a SpecError naming
    ``op`` (the op that was given ``x`` as an element type) and ``label`` (the
    constraint or input of that op that takes the element type).
    """
    if isinstance(x, DType):
        return x
    dt = _BY_KEY.get(x) if isinstance(x, (str, np.dtype)) else None
    if dt is not None:
        return dt
    if isinstance(x, str) and x.lstrip().startswith("!quant.") and _QUANTIZED_READER:
        try:
            return _QUANTIZED_READER[0](x)  # xops.qtype.as_quantized
        except SpecError:
            raise
        except TypeError as e:  # text that does not parse
            raise SpecError(op, label, str(e)) from None
    if isinstance(x, type) and x in _PY_TYPES:
        return _PY_TYPES[x]
    if not isinstance(x, (str, np.dtype, type)):
        # np.dtype() would also take objects with a .dtype (arrays, tensors), lists of
        # fields (structured dtypes) and None (float64): none of them names a type
        raise SpecError(
            op,
            label,
            f"expected an element type (a DType, a name such as 'f32' "
            f"or a NumPy dtype), got {type(x).__name__} {x!r:.60}",
        )
    try:
        npd = np.dtype(x)
    except (TypeError, ValueError):
        raise SpecError(op, label, f"not an element type: {x!r:.60}") from None
    dt = _BY_KEY.get(npd)
    if dt is None:
        raise SpecError(
            op,
            label,
            f"element type {npd} is not one the StableHLO spec names "
            f"(supported: {', '.join(d.name for d in _ALL)})",
        )
    return dt


# ---------------------------------------------------------------------------------------
# Holder <-> compute conversions (the only place that knows about narrow types)
# ---------------------------------------------------------------------------------------


def to_compute(a, dt):
    """View/convert a holder array of element type ``dt`` into its compute dtype."""
    if dt.compute == dt.np:
        return a
    return a.astype(dt.compute)


def from_compute(a, dt):
    """Bring a computed array back to the holder dtype of ``dt``.

    Integers wrap at the type's own width; floats round to nearest even once (float64
    sources go through a round-to-odd float32 first, so the result is correctly rounded).
    """
    if a.dtype == dt.np:
        return a
    if dt.kind == "float" and dt.is_narrow and a.dtype == np.float64 and dt.np != np.float16:
        a = _f64_to_f32_round_to_odd(a)
    if dt.kind in ("si", "ui") and a.dtype.kind == "f":
        raise AssertionError("float -> int must go through convert")  # never silently
    if dt.np == _E8M0 and a.dtype.kind == "f":
        return _f32_to_e8m0(a.astype(np.float32, copy=False))
    if a.dtype.kind == "f" and dt.kind in ("float", "complex"):
        with np.errstate(over="ignore"):  # overflow to +-inf is the rounded result
            return a.astype(dt.np)
    return a.astype(dt.np)


_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def _f32_to_e8m0(x):
    """float32 -> f8E8M0FNU, correctly rounded (ties away from zero: with a one-bit
    significand both neighbours are odd, as in APFloat and XLA).

    ml_dtypes (and XLA CPU's emitter) round float32 subnormals in (2**-127, 2**-126) *up*
    to 2**-126, although the nearest value below 1.5 * 2**-127 is 2**-127; only that
    range is patched here."""
    out = x.astype(_E8M0)
    sub = (x > np.float32(2.0**-127)) & (x < np.float32(2.0**-126))
    if sub.any():
        out.view(np.uint8)[sub] = (x[sub] >= np.float32(1.5 * 2.0**-127)).astype(np.uint8)
    return out


def _f64_to_f32_round_to_odd(x):
    """float64 -> float32 rounding to odd: truncate toward zero, then set the last bit
    if the value was inexact. A second rounding of the result to any format with at most
    22 significand bits is then the correctly rounded float64 -> that format."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
    bits = f.view(np.uint32).copy()
    finite = np.isfinite(x)
    too_big = finite & (np.abs(back) > np.abs(x))
    bits[too_big] -= 1  # one ulp toward zero (f is nonzero here, sign-magnitude)
    inexact = finite & (back != x)
    bits[inexact] |= 1
    return bits.view(np.float32).reshape(x.shape)


def _int_to_f64_sticky(v):
    """Integers -> float64 such that rounding the result once to any format with at
    most 24 significant bits equals rounding the integer itself.

    |v| < 2**53 is exact. Above, the bits under bit 11 are folded into a sticky bit 11
    (the result keeps bits 11..63: 53 bits, exact). The rounding position of a
    <= 24-bit format then lies at bit >= 30 (|v| >= 2**53), so the sticky bit stands for
    everything below it."""
    if v.dtype.itemsize < 8:
        return v.astype(np.float64)
    neg = v < 0
    m = v.astype(np.uint64)
    with np.errstate(over="ignore"):  # ~0 + 1 wraps to 0 in the unused branch
        m = np.where(neg, ~m + np.uint64(1), m)  # |v| as uint64 (|INT64_MIN| = 2**63)
    sticky = (m & np.uint64(0x7FF)) != 0
    m = np.where(
        m >= np.uint64(1 << 53),
        (m & ~np.uint64(0x7FF)) | (sticky.astype(np.uint64) << np.uint64(11)),
        m,
    )
    f = m.astype(np.float64)
    return np.where(neg, -f, f)


def int_to_float(v, dst):
    """Integer (or bool) values -> float ``dst``, rounded to nearest even once."""
    if dst.np == np.float64:
        return v.astype(np.float64)  # a single IEEE rounding (C int -> double)
    f = _int_to_f64_sticky(v)
    if dst.np == np.float32:
        return f.astype(np.float32)
    return from_compute(f, dst)


def wrap_int(a, dt):
    """Reduce integers of any width to ``dt``'s range with two's-complement wraparound,
    returned in dt's compute dtype."""
    if dt.bits >= 8:
        return a.astype(dt.compute)
    mask = (1 << dt.bits) - 1
    v = a.astype(np.int64) & mask
    if dt.kind == "si":
        v = np.where(v >= (1 << (dt.bits - 1)), v - (1 << dt.bits), v)
    return v.astype(dt.compute)
