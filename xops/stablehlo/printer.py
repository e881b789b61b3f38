"""Values as StableHLO literals: ``dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>``.

What ``python -m xops.stablehlo --print`` shows for a function's results, written so
that :func:`xops.stablehlo.parse_attribute` reads it back to the same value, bit for bit:

* floats in the shortest decimal that rounds back to the same value of their own type
  (``1.1e+00`` for the f32 nearest 1.1), ``-0.0`` kept; NaN and infinities as their bit
  patterns (``0x7FC00000``), as MLIR prints them;
* complex elements as ``(re, im)``; booleans as ``true``/``false``; integers in decimal;
* a tensor whose elements are all the same is a splat (``dense<0.0e+00>``), as in MLIR;
* tuples as ``(v1, v2)``, tokens as ``!stablehlo.token``.
"""

import numpy as np

from ..tensor import Tensor
from .values import value_type_str

__all__ = ["format_value"]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SHORTEST = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}


def _float_texts(holder, dt):
    """Element texts of a real float holder array (flat)."""
    width = np.dtype(holder.dtype).itemsize
    bits = np.ascontiguousarray(holder).view(_UINT[width])
    native = np.dtype(holder.dtype) in _SHORTEST
    values = holder if native else holder.astype(np.float32)
    out = []
    hexw = max(1, (dt.bits + 3) // 4)
    for v, b in zip(values.tolist() if not native else values, bits.tolist()):
        if np.isfinite(v):
            out.append(
                np.format_float_scientific(v if native else np.float32(v), unique=True, trim="0")
            )
        else:
            out.append(f"0x{int(b):0{hexw}X}")
    return out


def _element_texts(t):
    dt = t.dtype
    a = np.asarray(t._value).reshape(-1)
    if dt.kind == "bool":
        return ["true" if x else "false" for x in a.tolist()]
    if dt.kind in ("si", "ui"):
        return [str(int(x)) for x in a.tolist()]
    if dt.kind == "complex":
        part = a.real.dtype
        from ..dtypes import as_dtype

        pdt = as_dtype("f32" if part == np.float32 else "f64")
        re_ = _float_texts(np.ascontiguousarray(a.real), pdt)
        im = _float_texts(np.ascontiguousarray(a.imag), pdt)
        return [f"({r}, {i})" for r, i in zip(re_, im)]
    return _float_texts(a, dt)


def _nest(texts, shape):
    if not shape:
        return texts[0]
    if len(shape) == 1:
        return "[" + ", ".join(texts) + "]"
    step = len(texts) // shape[0] if shape[0] else 0
    return (
        "["
        + ", ".join(_nest(texts[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0]))
        + "]"
    )


def format_value(v):
    """``v`` (a Tensor, tuple or token) as StableHLO literal text."""
    if isinstance(v, tuple):
        return "(" + ", ".join(format_value(x) for x in v) + ")"
    if not isinstance(v, Tensor):
        return value_type_str(v)
    if v.dtype.quantized:
        return f"<quantized {value_type_str(v)}>"
    texts = _element_texts(v)
    shape = list(v.shape)
    if not texts:
        body = "" if 0 in shape else "[]"
    elif len(texts) > 1 and all(x == texts[0] for x in texts):
        body = texts[0]  # a splat
    else:
        body = _nest(texts, shape)
    return f"dense<{body}> : {value_type_str(v)}"
