"""``dense<...>`` literals to arrays, exactly as MLIR reads them.

* Decimal float literals round to the element type **once**, from the exact decimal
  value (MLIR parses them with APFloat in the target semantics): the decimal goes to
  float64 (correctly rounded by Python), then to the narrow type with xops' correctly
  rounding f64 -> narrow conversion; the rare decimal whose float64 lands exactly on a
  midpoint of the narrow type is settled with exact rational arithmetic.
* Hex literals (``0x7F800000``) are bit patterns for float elements (NaN payloads and
  ``-0`` kept) and two's-complement values for integers of the element width.
* A negative decimal literal of an unsigned type is its two's complement in the type's
  width, as MLIR reads it (``-2 : ui8`` is 254), down to ``-2^(bits-1)``.
* ``dense<"0x...">`` blobs hold the raw little-endian elements (one byte per element
  for i1 and the sub-byte types), or a single element for a splat.
* A single element fills the whole shape (a splat); ``dense<>`` is an empty tensor.
"""

from fractions import Fraction

import numpy as np

from ..dtypes import DType, from_compute
from ..errors import SpecError
from .ir import DenseAttr, Hex, TensorType

__all__ = ["to_array", "scalar_from_bits", "float_literals"]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _err(msg):
    return SpecError("stablehlo.constant", "", msg)


def _nested_shape(data):
    shape = []
    d = data
    while isinstance(d, list):
        shape.append(len(d))
        if not d:
            break
        d = d[0]
    return tuple(shape)


def _flatten(data, shape, depth=0, out=None):
    if out is None:
        out = []
    if depth == len(shape):
        if isinstance(data, list):
            raise _err("a dense literal's nested lists must be rectangular")
        out.append(data)
        return out
    if not isinstance(data, list) or len(data) != shape[depth]:
        raise _err("a dense literal's nested lists must be rectangular")
    for d in data:
        _flatten(d, shape, depth + 1, out)
    return out


def to_array(attr, type_=None):
    """The holder NumPy array of a :class:`DenseAttr` (of ``type_`` or its own type)."""
    t = type_ if type_ is not None else attr.type
    if not isinstance(t, TensorType):
        raise _err(f"a dense literal needs a tensor type, got {t}")
    if not isinstance(t.elem, DType):
        raise SpecError(
            "stablehlo.constant", "", f"literals of element type {t.elem} are not supported"
        )
    if not t.is_static:
        raise _err(f"a dense literal needs a static shape, got {t}")
    dt, shape = t.elem, tuple(t.shape)
    size = int(np.prod(shape, dtype=np.int64))
    data = attr.data
    if isinstance(data, bytes):
        return _from_blob(data, dt, shape, size)
    if isinstance(data, list):
        lshape = _nested_shape(data)
        flat = _flatten(data, lshape)
        if len(flat) == 0:
            if size != 0:
                raise _err(f"an empty literal cannot fill {t}")
            return np.zeros(shape, dt.np)
        if lshape != shape and len(flat) != 1:
            raise _err(f"literal of shape {list(lshape)} does not match {t}")
    else:
        flat = [data]
    arr = _elements(flat, dt)
    if arr.size == 1 and size != 1:
        return np.broadcast_to(arr.reshape(()), shape).copy()
    return arr.reshape(shape)


def _elements(flat, dt):
    if dt.kind == "bool":
        vals = []
        for v in flat:
            if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
                vals.append(bool(v))
            else:
                raise _err(f"i1 literals must be true/false, got {v!r}")
        return np.array(vals, np.bool_)
    if dt.kind in ("si", "ui"):
        vals = []
        for v in flat:
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(f"{dt.name} literals must be integers, got {v!r}")
            if isinstance(v, Hex):
                v = _wrap_bits(int(v), dt)
            elif v < 0 and dt.kind == "ui" and v >= -(1 << (dt.bits - 1)):
                # MLIR negates a negative literal in the type's width and accepts it when
                # the sign bit comes out set: -2 : ui8 is 254 (two's complement)
                v += 1 << dt.bits
            if not dt.min <= v <= dt.max:
                raise _err(f"integer literal {v} does not fit {dt.name} [{dt.min}, {dt.max}]")
            vals.append(v)
        big = np.array(vals, np.uint64 if dt.kind == "ui" else np.int64)
        return big.astype(dt.np)
    if dt.kind == "float":
        return float_literals(flat, dt)
    if dt.kind == "complex":
        part = np.float32 if dt.np == np.complex64 else np.float64
        part_dt = _part_dtype(dt)
        re_, im = [], []
        for v in flat:
            if not isinstance(v, tuple):
                v = (v, 0)  # a real literal for a complex type
            re_.append(v[0])
            im.append(v[1])
        out = np.empty(len(flat), dt.np)
        out.real = float_literals(re_, part_dt).astype(part)
        out.imag = float_literals(im, part_dt).astype(part)
        return out
    raise _err(f"unsupported element type {dt.name}")


def _part_dtype(dt):
    from ..dtypes import as_dtype

    return as_dtype("f32" if dt.np == np.complex64 else "f64")


def _wrap_bits(v, dt):
    v &= (1 << dt.bits) - 1
    if dt.kind == "si" and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def _bits_width(dt):
    return dt.np.itemsize


def scalar_from_bits(bits, dt):
    """A Python float from the bit pattern of a float element type."""
    arr = np.array([bits], _UINT[dt.np.itemsize]).view(dt.np)
    return float(arr.astype(np.float64)[0])


def float_literals(flat, dt):
    """Float literals (decimal text, ints, Hex bit patterns, 'inf'/'nan') as an array of
    ``dt``'s holder type, each rounded once from its exact value."""
    n = len(flat)
    out = np.empty(n, dt.np)
    bits_view = out.view(_UINT[dt.np.itemsize])
    dec_idx, dec_txt = [], []
    for i, v in enumerate(flat):
        if isinstance(v, Hex):
            b = int(v)
            if dt.bits < 8 * dt.np.itemsize and b >> dt.bits:
                raise _err(f"hex literal {hex(b)} has more than {dt.bits} bits for {dt.name}")
            bits_view[i] = b
        elif isinstance(v, bool):
            raise _err(f"{dt.name} literals must be numbers, got {v!r}")
        elif isinstance(v, (int, str, float)):
            dec_idx.append(i)
            dec_txt.append(str(v))
        else:
            raise _err(f"{dt.name} literals must be numbers, got {v!r}")
    if dec_idx:
        out[dec_idx] = _round_decimals(dec_txt, dt)
    return out


def _round_decimals(texts, dt):
    v = np.array([float(t) for t in texts], np.float64)
    if dt.np == np.float64:
        return v
    with np.errstate(over="ignore", invalid="ignore"):
        r = _to(v, dt)
        # Double rounding (decimal -> f64 -> dt) can go wrong only where v is exactly a
        # midpoint of dt: there, its f64 neighbours round apart. Settle those exactly.
        finite = np.isfinite(v)
        up = _to(np.nextafter(v, np.inf), dt)
        dn = _to(np.nextafter(v, -np.inf), dt)
    ubits = up.view(_UINT[dt.np.itemsize])
    dbits = dn.view(_UINT[dt.np.itemsize])
    for i in np.nonzero(finite & (ubits != dbits))[0]:
        exact = Fraction(texts[i])
        if exact > Fraction(float(v[i])):
            r[i] = up[i]
        elif exact < Fraction(float(v[i])):
            r[i] = dn[i]
    return r


def _to(v, dt):
    if dt.np == np.float32:
        return v.astype(np.float32)
    return from_compute(v, dt)


def _from_blob(data, dt, shape, size):
    width = 1 if dt.bits < 8 else dt.np.itemsize
    if dt.kind == "complex":
        width = dt.np.itemsize
    n = len(data) // width if width else 0
    if len(data) % width or n not in (1, size):
        raise _err(f"hex blob of {len(data)} bytes does not hold {size} {dt.name} elements")
    if dt.kind == "bool":
        arr = np.frombuffer(data, np.uint8).astype(np.bool_)
    elif dt.bits < 8:
        raw = np.frombuffer(data, np.uint8).astype(np.int64)
        vals = [
            _wrap_bits(int(b), dt) if dt.kind == "si" else int(b) & ((1 << dt.bits) - 1)
            for b in raw
        ]
        if dt.kind == "float":
            arr = np.array(vals, np.uint8).view(dt.np)
        else:
            arr = np.array(vals, np.int64).astype(dt.np)
    else:
        arr = np.frombuffer(data, np.dtype(dt.np).newbyteorder("<")).astype(dt.np)
    if n == 1 and size != 1:
        return np.broadcast_to(arr.reshape(()), shape).copy()
    return arr.reshape(shape).copy()


def constant_tensor(attr, type_=None):
    """A Tensor for a dense attribute (used for constants and check literals)."""
    from ..tensor import tensor

    t = type_ if type_ is not None else attr.type
    return tensor(to_array(attr, t), t.elem)


DenseAttr.to_array = to_array  # convenience: attr.to_array()
