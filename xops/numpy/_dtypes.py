"""The everyday layer's element types: dtype objects, promotion, dtype functions.

The dtype objects *are* xops's :class:`xops.DType` objects (``xnp.float32 is
xo.float32``). Promotion (used by every xnp function and every Tensor operator; the
``xo.<op>`` spec functions never promote):

* within a kind, the array API standard's table: the wider type wins;
* signed with unsigned integer: the smallest signed type holding both (i64 with u64 ->
  f64, as NumPy 2);
* integer (or bool) with a floating or complex type: that floating/complex type
  (i64 + f32 -> f32, as JAX and PyTorch);
* float with complex: the complex type of the wider precision (f64 + c64 -> c128);
* bool with anything: the other type (as NumPy 2);
* Python scalars are weak: they take the array's type; a Python float meeting an
  integer or bool array gives the default float (f32), a complex one the matching
  complex type.

bf16, the f8/f6/f4 types, i2/i4/u2/u4 and quantized types promote only with themselves:
mixing them is an error that names ``xo.convert``.
"""

import builtins
import math

import ml_dtypes
import numpy as np

from .. import dtypes as _D
from ..errors import SpecError
from ..tensor import Tensor

bool = _D.bool_
int8, int16, int32, int64 = _D.int8, _D.int16, _D.int32, _D.int64
uint8, uint16, uint32, uint64 = _D.uint8, _D.uint16, _D.uint32, _D.uint64
float16, float32, float64 = _D.float16, _D.float32, _D.float64
complex64, complex128 = _D.complex64, _D.complex128

DTYPES = {
    "bool": bool,
    "int8": int8,
    "int16": int16,
    "int32": int32,
    "int64": int64,
    "uint8": uint8,
    "uint16": uint16,
    "uint32": uint32,
    "uint64": uint64,
    "float32": float32,
    "float64": float64,
    "complex64": complex64,
    "complex128": complex128,
}
_PROMOTABLE = frozenset(list(DTYPES.values()) + [float16])

default_float = float32
default_int = int64
default_complex = complex64
default_index = int64

_SIGNED = {8: int8, 16: int16, 32: int32, 64: int64}
_COMPLEX_OF = {
    float16: complex64,
    float32: complex64,
    float64: complex128,
    complex64: complex64,
    complex128: complex128,
}
_REAL_OF = {complex64: float32, complex128: float64}
_CACHE = {}


def as_dtype(dtype, op="astype"):
    """A DType from any dtype spelling (``xnp.float32``, ``"f64"``, ``np.int8``, ...)."""
    if type(dtype) is _D.DType:
        return dtype
    if dtype is float or dtype is int or dtype is complex:
        return {float: default_float, int: default_int, complex: default_complex}[dtype]
    try:
        return _D.as_dtype(dtype)
    except (TypeError, ValueError) as e:
        raise SpecError(op, "", f"dtype: {e}") from None


def promote_types(a, b, op="promote"):
    """The promoted type of two DTypes (module docstring)."""
    if a is b:
        return a
    key = (a, b)
    out = _CACHE.get(key)
    if out is None:
        out = _promote(a, b, op)
        _CACHE[key] = out
    return out


def _promote(a, b, op):
    if a not in _PROMOTABLE or b not in _PROMOTABLE:
        raise SpecError(
            op,
            "",
            f"element types {a.name} and {b.name} do not promote: "
            f"bf16, f8/f6/f4, i2/i4/ui2/ui4 and quantized types mix only "
            f"with themselves; convert one with xo.convert(x, "
            f"{(a if b in _PROMOTABLE else b).name!r}) or "
            f"x.astype(...)",
        )
    ka, kb = a.kind, b.kind
    if ka == "bool":
        return b
    if kb == "bool":
        return a
    if ka == kb:
        return a if a.bits >= b.bits else b
    if ka in ("si", "ui") and kb in ("si", "ui"):
        s, u = (a, b) if ka == "si" else (b, a)
        if u.bits < s.bits:
            return s
        return _SIGNED.get(2 * u.bits, float64)
    if ka in ("si", "ui"):
        return b
    if kb in ("si", "ui"):
        return a
    c, f = (a, b) if ka == "complex" else (b, a)  # float with complex
    return complex128 if c is complex128 or f is float64 else complex64


def scalar_dtype(dt, x, op="promote"):
    """The result type of an array of type ``dt`` with the Python scalar ``x`` (weak)."""
    t = type(x)
    if t is builtins.bool or t is np.bool_:
        return dt
    k = dt.kind
    if t is int:
        return default_int if k == "bool" else dt
    if t is float:
        return dt if k in ("float", "complex") else default_float
    if t is complex:
        if k == "complex":
            return dt
        if k == "float":
            if dt not in _COMPLEX_OF:
                raise SpecError(
                    op,
                    "",
                    f"a Python complex cannot meet a {dt.name} array; convert with xo.convert",
                )
            return _COMPLEX_OF[dt]
        return default_complex
    raise SpecError(op, "", f"operands must be arrays or Python scalars, got {t.__name__}")


def result_type(*arrays_and_dtypes):
    """array API ``result_type``: promote arrays, dtypes and (weak) Python scalars."""
    dts, scalars = [], []
    for x in arrays_and_dtypes:
        if isinstance(x, Tensor):
            dts.append(x._dtype)
        elif isinstance(x, (builtins.bool, int, float, complex)) and not isinstance(x, np.generic):
            scalars.append(x)
        elif isinstance(x, np.ndarray):
            dts.append(as_dtype(x.dtype, "result_type"))
        else:
            dts.append(as_dtype(x, "result_type"))
    if not dts:
        raise SpecError(
            "result_type",
            "",
            "needs at least one array or dtype (Python scalars alone have no type)",
        )
    out = dts[0]
    for d in dts[1:]:
        out = promote_types(out, d, "result_type")
    for s in scalars:
        out = scalar_dtype(out, s, "result_type")
    return out


_CAST_FAMILY = {"bool": 0, "si": 1, "ui": 1, "float": 2, "complex": 2}


def can_cast(from_, to, /):
    """array API ``can_cast``: whether the standard's promotion table alone turns ``from_``
    into ``to``. Only within a family (bool; integers; floating incl. complex), so the
    layer's extra mixed-kind rules (i8 + f32 -> f32, bool + i8 -> i8) do not make
    ``can_cast(int8, float32)`` true: casting an integer to a float may lose values."""
    f = from_._dtype if isinstance(from_, Tensor) else as_dtype(from_, "can_cast")
    t = as_dtype(to, "can_cast")
    if f is t:
        return True
    if _CAST_FAMILY.get(f.kind) != _CAST_FAMILY.get(t.kind):
        return False
    try:
        return promote_types(f, t, "can_cast") is t
    except SpecError:
        return False


class finfo_object:
    """array API ``finfo``: bits, eps, max, min, smallest_normal, dtype."""

    def __init__(self, dt):
        real = _REAL_OF.get(dt, dt)
        fi = (
            ml_dtypes.finfo(real.np)
            if real.is_narrow and real.np != np.float16
            else np.finfo(real.np)
        )
        self.bits = real.bits
        self.eps = float(fi.eps)
        self.max = float(fi.max)
        self.min = float(fi.min)
        self.smallest_normal = float(fi.smallest_normal)
        self.dtype = real

    def __repr__(self):
        return (
            f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, min={self.min}, "
            f"smallest_normal={self.smallest_normal}, dtype={self.dtype.name})"
        )


class iinfo_object:
    """array API ``iinfo``: bits, max, min, dtype."""

    def __init__(self, dt):
        self.bits, self.max, self.min, self.dtype = dt.bits, dt.max, dt.min, dt

    def __repr__(self):
        return f"iinfo(bits={self.bits}, max={self.max}, min={self.min}, dtype={self.dtype.name})"


def _dtype_of(type, op):
    return type._dtype if isinstance(type, Tensor) else as_dtype(type, op)


def finfo(type, /):
    dt = _dtype_of(type, "finfo")
    if dt.kind not in ("float", "complex"):
        raise SpecError("finfo", "", f"needs a floating-point or complex type, got {dt.name}")
    return finfo_object(dt)


def iinfo(type, /):
    dt = _dtype_of(type, "iinfo")
    if dt.kind not in ("si", "ui"):
        raise SpecError("iinfo", "", f"needs an integer type, got {dt.name}")
    return iinfo_object(dt)


_KINDS = {
    "bool": ("bool",),
    "signed integer": ("si",),
    "unsigned integer": ("ui",),
    "integral": ("si", "ui"),
    "real floating": ("float",),
    "complex floating": ("complex",),
    "numeric": ("si", "ui", "float", "complex"),
}


def isdtype(dtype, kind):
    """array API ``isdtype``: ``kind`` is a dtype, a kind name or a tuple of them."""
    dt = as_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise SpecError(
                "isdtype", "", f"kind must be a dtype or one of {list(_KINDS)}, got {kind!r}"
            )
        return dt.kind in _KINDS[kind]
    return dt is as_dtype(kind, "isdtype")


def real_of(dt):
    """The real type of a complex type (itself otherwise)."""
    return _REAL_OF.get(dt, dt)


def complex_of(dt):
    return _COMPLEX_OF[dt]


def float_of(dt):
    """The floating type an operation on ``dt`` computes in (ints and bool -> default)."""
    return dt if dt.kind in ("float", "complex") else default_float


e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None
