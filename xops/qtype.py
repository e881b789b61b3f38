"""Quantized element types: ``!quant.uniform<storage:expressed[:axis], scale:zero_point>``.

A quantized tensor stores integers of its *storage type*; element ``i`` stands for the
real value ``(i - zero_point) * scale`` of its *expressed type* (StableHLO spec,
"Quantized element types"). With a ``quantization_dimension`` every slice along that
dimension has its own scale and zero point (per-axis); without one, one pair serves the
whole tensor (per-tensor).

:class:`QuantizedType` is an element type like any :class:`xops.DType` (``kind ==
"quant"``): a Tensor of this type holds its storage integers, so data-movement ops carry
them unchanged, and the dtype layer never mistakes them for plain integers (ops that do
arithmetic route them through ``dequantize -> op -> quantize``, see
:mod:`xops.ops.quantization`).

This module knows the type and the two conversions of the spec on NumPy arrays:

* ``dequantize``: ``convert(i - zero_point, expressed) * scale``; the subtraction is
  done exactly (the spec writes it in the storage type, where it could only differ by
  wrapping around, which no real quantization scheme intends);
* ``quantize``: ``clamp(storage_min, convert(round_nearest_even(x / scale)) +
  zero_point, storage_max)`` with ``x / scale`` rounded in the expressed type; the
  float -> integer conversion saturates and maps NaN to 0 (xops' ``convert``), and the
  addition of the zero point is exact before the clamp.
"""

import re

import numpy as np

from .dtypes import (
    DType,
    as_dtype,
    delegate,
    from_compute,
    int_to_float,
    set_quantized_reader,
    to_compute,
)
from .errors import SpecError

__all__ = ["QuantizedType", "is_quantized"]

# ``i8<-127:127>:f32:0, {0.1:-30,0.5:-20}`` (the part inside ``!quant.uniform<...>``)
QUANT_BODY = re.compile(
    r"\s*(?P<st>[su]?i[0-9]+|ui[0-9]+|u[0-9]+)(?:<(?P<smin>[-+]?[0-9]+):(?P<smax>[-+]?[0-9]+)>)?"
    r"\s*:\s*(?P<ex>[A-Za-z0-9]+)(?:\s*:\s*(?P<axis>[0-9]+))?\s*,\s*(?P<rest>.*)$",
    re.S,
)
SCALE_ZP = re.compile(
    r"\s*([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|inf|nan))"
    r"(?:\s*:\s*([-+]?[0-9]+))?\s*"
)


def storage_name(name):
    """Storage type names as quant types spell them (``u8`` is ``ui8``)."""
    if name.startswith("u") and not name.startswith("ui") and name[1:].isdigit():
        return "ui" + name[1:]
    return name


def split_quant_body(body):
    """``(storage, smin, smax, expressed, axis, scales, zero_points)`` as written in the
    text inside ``!quant.uniform<...>``; None when the text does not parse."""
    m = QUANT_BODY.match(body)
    if not m:
        return None
    rest = m.group("rest").strip()
    pairs = rest[1:-1].split(",") if rest.startswith("{") and rest.endswith("}") else [rest]
    scales, zps = [], []
    for p in pairs:
        mm = SCALE_ZP.fullmatch(p)
        if not mm:
            return None
        scales.append(float(mm.group(1)))
        zps.append(int(mm.group(2)) if mm.group(2) is not None else 0)

    def num(g):
        return int(g) if g is not None else None

    return (
        storage_name(m.group("st")),
        num(m.group("smin")),
        num(m.group("smax")),
        m.group("ex"),
        num(m.group("axis")),
        tuple(scales),
        tuple(zps),
    )


class QuantizedType(DType):
    """A quantized element type (``!quant.uniform<...>``): storage and expressed types,
    scales, zero points, an optional quantization dimension and storage range.

    >>> q = xo.QuantizedType("i8", "f32", scales=0.1, zero_points=-30)
    >>> q
    xo.QuantizedType('!quant.uniform<i8:f32, 0.1:-30>')
    >>> xo.uniform_quantize(xo.tensor([4.0, 15.0]), q).numpy()   # storage values
    array([ 10, 120], dtype=int8)

    The constraints C1-C11 of the type are checked here; C12/C13 (the dimension exists
    and has one scale per slice) when a tensor of the type is made.
    """

    __slots__ = (
        "storage_type",
        "expressed_type",
        "scales",
        "zero_points",
        "quantization_dimension",
        "storage_min",
        "storage_max",
        "_arrays",
    )
    quantized = True

    def __init__(
        self,
        storage_type,
        expressed_type,
        scales,
        zero_points=0,
        quantization_dimension=None,
        storage_min=None,
        storage_max=None,
    ):
        op = "quantized type"
        st = _type_arg(storage_type, "storage_type")
        ex = _type_arg(expressed_type, "expressed_type")
        if not st.is_int:
            raise SpecError(op, "C1", f"storage_type must be an integer type, got {st.name}")
        if not ex.is_float:
            raise SpecError(
                op, "C1", f"expressed_type must be a floating-point type, got {ex.name}"
            )
        if not st.bits < ex.bits:
            raise SpecError(
                op,
                "C1",
                f"num_bits(storage_type) < num_bits(expressed_type) is "
                f"required, got {st.name} ({st.bits} bits) and {ex.name} "
                f"({ex.bits} bits)",
            )
        scales = _float_tuple(scales)
        zero_points = _int_tuple(zero_points)
        if len(zero_points) == 1 and len(scales) > 1:
            zero_points = zero_points * len(scales)
        smin = st.min if storage_min is None else _int_arg(storage_min, "storage_min", "C2")
        smax = st.max if storage_max is None else _int_arg(storage_max, "storage_max", "C3")
        if not st.min <= smin < smax <= st.max:
            raise SpecError(
                op,
                "C4",
                f"min_value({st.name}) <= storage_min < storage_max <= "
                f"max_value({st.name}) is required, got [{smin}, {smax}] "
                f"for [{st.min}, {st.max}]",
            )
        with np.errstate(over="ignore"):  # (C5) type(scales) = E: a too large one is inf
            ex_values = from_compute(np.asarray(scales, np.float64), ex)
        exact = to_compute(ex_values, ex).astype(np.float64)
        if not np.all(np.isfinite(exact)):
            raise SpecError(op, "C7", f"scales must be finite in {ex.name}, got {list(scales)}")
        if not np.all(exact > 0):
            raise SpecError(op, "C6", f"scales must be > 0 in {ex.name}, got {list(scales)}")
        for z in zero_points:
            if not st.min <= z <= st.max:
                raise SpecError(op, "C9", f"zero points must be {st.name} values, got {z}")
            if not smin <= z <= smax:
                raise SpecError(
                    op,
                    "C8",
                    f"storage_min <= zero_point <= storage_max is required, "
                    f"got {z} outside [{smin}, {smax}]",
                )
        if len(scales) != len(zero_points):
            raise SpecError(
                op,
                "C10",
                f"size(scales) = size(zero_points) is required, got "
                f"{len(scales)} scales and {len(zero_points)} zero points",
            )
        if quantization_dimension is None:
            if len(scales) != 1:
                raise SpecError(
                    op,
                    "C11",
                    f"a per-tensor type has one scale, got {len(scales)}; "
                    f"give quantization_dimension for per-axis scales",
                )
        else:
            quantization_dimension = _int_arg(
                quantization_dimension, "quantization_dimension", "C12"
            )
            if not 0 <= quantization_dimension < 2**31:
                raise SpecError(
                    op,
                    "C12",
                    f"0 <= quantization_dimension < 2**31 is required "
                    f"(a dimension number, si32), got "
                    f"{quantization_dimension}",
                )
        self.storage_type, self.expressed_type = st, ex
        self.scales = tuple(float(v) for v in exact)
        self.zero_points = zero_points
        self.quantization_dimension = quantization_dimension
        self.storage_min, self.storage_max = smin, smax
        self._arrays = (ex_values, np.asarray(zero_points, np.int64))
        super().__init__(_type_name(self), st.np, "quant", st.bits, "QuantizedType", st.compute)

    # -- classification (a quantized type is neither an integer nor a float) -------------
    @property
    def is_per_axis(self):
        return self.quantization_dimension is not None

    is_narrow = delegate("storage_type.is_narrow", "Whether the storage type is narrow.")
    min = delegate("storage_min", "The smallest storage value (storage_min).")
    max = delegate("storage_max", "The largest storage value (storage_max).")

    @property
    def scale(self):
        """The scale of a per-tensor type."""
        return self.scales[0]

    @property
    def zero_point(self):
        """The zero point of a per-tensor type."""
        return self.zero_points[0]

    def replace(self, **changes):
        """A copy with some parameters changed (``q.replace(scales=0.5)``)."""
        kw = dict(
            storage_type=self.storage_type,
            expressed_type=self.expressed_type,
            scales=self.scales,
            zero_points=self.zero_points,
            quantization_dimension=self.quantization_dimension,
            storage_min=self.storage_min,
            storage_max=self.storage_max,
        )
        kw.update(changes)
        return QuantizedType(**kw)

    # -- identity ---------------------------------------------------------------------
    def _key(self):
        return (
            self.storage_type.name,
            self.expressed_type.name,
            self.scales,
            self.zero_points,
            self.quantization_dimension,
            self.storage_min,
            self.storage_max,
        )

    def __eq__(self, other):
        if other is self:
            return True
        if isinstance(other, str):
            try:
                other = as_quantized(other)
            except (TypeError, ValueError):
                return False
        return isinstance(other, QuantizedType) and other._key() == self._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"xo.QuantizedType({self.name!r})"

    def __reduce__(self):
        return (as_quantized, (self.name,))

    # -- values -------------------------------------------------------------------------
    def check_shape(self, op, shape):
        """C12/C13 of quantized tensor types for a tensor of ``shape``."""
        d = self.quantization_dimension
        if d is None:
            return
        if d >= len(shape):
            raise SpecError(
                op,
                "C12",
                f"quantization_dimension {d} must be < rank {len(shape)} "
                f"of the tensor, for {self.name} and shape {list(shape)}",
            )
        if shape[d] != len(self.scales):
            raise SpecError(
                op,
                "C13",
                f"dim {d} of the tensor ({shape[d]}) must equal the number "
                f"of scales ({len(self.scales)}) of {self.name}",
            )

    def _per_element(self, arr, ndim):
        """A per-slice parameter array shaped to broadcast against a rank-``ndim`` tensor."""
        if self.quantization_dimension is None:
            return arr.reshape(())
        shape = [1] * ndim
        shape[self.quantization_dimension] = arr.size
        return arr.reshape(shape)

    def dequantize(self, storage):
        """Storage integers (holder array) -> expressed-type holder array."""
        ex = self.expressed_type
        v = to_compute(storage, self.storage_type).astype(np.int64)
        diff = v - self._per_element(self._arrays[1], v.ndim)  # exact
        f = to_compute(int_to_float(diff, ex), ex)  # one rounding
        s = to_compute(self._per_element(self._arrays[0], v.ndim), ex)
        return from_compute(np.multiply(f, s, dtype=ex.compute), ex)  # rounded product

    def quantize(self, x):
        """Expressed-type holder array -> storage integers (holder array)."""
        ex = self.expressed_type
        f = to_compute(np.asarray(x), ex)
        s = to_compute(self._per_element(self._arrays[0], f.ndim), ex)
        with np.errstate(all="ignore"):
            q = to_compute(from_compute(np.divide(f, s, dtype=ex.compute), ex), ex)  # x/scale in E
            r = np.rint(q).astype(np.float64)  # ties to even
        r = np.where(np.isnan(r), 0.0, r)  # convert: NaN -> 0
        r = r + self._per_element(self._arrays[1], r.ndim)  # exact below 2**53
        r = np.clip(r, self.storage_min, self.storage_max)
        return from_compute(r.astype(np.int64).astype(self.storage_type.compute), self.storage_type)


def _type_name(q):
    st = q.storage_type.name
    if (q.storage_min, q.storage_max) != (q.storage_type.min, q.storage_type.max):
        st += f"<{q.storage_min}:{q.storage_max}>"
    ex = q.expressed_type.name
    pairs = [f"{_short(s, q.expressed_type)}:{z}" for s, z in zip(q.scales, q.zero_points)]
    if q.quantization_dimension is None:
        return f"!quant.uniform<{st}:{ex}, {pairs[0]}>"
    return f"!quant.uniform<{st}:{ex}:{q.quantization_dimension}, {{{','.join(pairs)}}}>"


def _short(v, ex):
    """The shortest decimal that reads back as the same value of the expressed type."""
    if ex.bits <= 32:
        return (
            np.format_float_positional(np.float32(v), trim="-", unique=True)
            if 1e-4 <= abs(v) < 1e16
            else np.format_float_scientific(np.float32(v), trim="-")
        )
    return repr(float(v))


def _type_arg(x, name):
    try:
        return as_dtype(x)
    except (TypeError, ValueError) as e:
        raise SpecError("quantized type", "C1", f"{name}: {e}") from None


def _float_tuple(x):
    try:
        arr = np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1:
        raise SpecError(
            "quantized type",
            "C5",
            f"scales must be a number or a 1-D sequence of numbers, got {x!r:.60}",
        )
    arr = arr.reshape(-1)
    if arr.size == 0:
        raise SpecError("quantized type", "C10", "at least one scale is required")
    return tuple(float(v) for v in arr)


def _int_tuple(x):
    try:
        arr = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise SpecError("quantized type", "C9", f"zero points must be integers, got {x!r}")
    return tuple(int(v) for v in arr.reshape(-1))


def _int_arg(x, name, label):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise SpecError("quantized type", label, f"{name} must be an integer, got {x!r}")
    return int(x)


def as_quantized(text):
    """The QuantizedType written as ``!quant.uniform<...>`` (the StableHLO syntax)."""
    t = text.strip()
    if not (t.startswith("!quant.uniform<") and t.endswith(">")):
        raise TypeError(f"not a quantized element type: {text!r}")
    parts = split_quant_body(t[len("!quant.uniform<") : -1])
    if parts is None:
        raise TypeError(f"malformed quantized element type: {text!r}")
    st, smin, smax, ex, axis, scales, zps = parts
    return QuantizedType(st, ex, scales, zps, axis, smin, smax)


set_quantized_reader(as_quantized)  # xo.as_dtype("!quant.uniform<...>") (xops.dtypes)


def is_quantized(x):
    """True for a quantized element type, or a Tensor of one."""
    dt = getattr(x, "_dtype", x)
    return isinstance(dt, QuantizedType)
