"""CUDA kernels of the elementwise families: unary and binary arithmetic, bitwise and
transcendental ops, compare, select, clamp and convert.

Each kernel function takes the op's arguments, runs the CPU op's operand checks, which
read only types and shapes (``_unary`` / ``_binary`` of
:mod:`xops.ops.elementwise._base`, ``select_checks`` and ``clamp_checks``; compare runs
the CPU op on 0-d stand-ins for its attribute checks once the shapes have passed), and
launches a map kernel, one thread per element, 256 threads to a block (``launch_1d`` of
:mod:`._storage`; the map kernels are generated from one table, ``_MAPS``). A weak Python scalar
operand is read at every index from a one-element device array that is cached by value,
so a call copies nothing to the device. Element
types: i1, si8-64, ui8-64, f32, f64; bf16 / f16, the f8, f6 and f4 types computed in
float32 as on the CPU (decoded exactly, rounded once; :mod:`.narrow`, :mod:`.f8`), and
f8E8M0FNU's add, subtract, multiply, divide, remainder, power and atan2 in float64, as
the CPU computes them; i2 / i4 / ui2 / ui4 in int8 / uint8, wrapped to their width
(:mod:`.subbyte`); c64 / c128 (:mod:`.complex`); quantized types raise a SpecError
naming the op, the type and the device. Integer results are bit-exact with the CPU;
float results follow CUDA's libdevice (within a few ULP of the CPU's NumPy); cbrt is
the CPU's own algorithm (:mod:`._cbrt`), bit-exact.
"""

import math
import operator
from collections import OrderedDict

import numpy as np

from ...dtypes import as_dtype
from ...errors import SpecError
from ...ops._core import operands
from ...ops.conversion import _result_dtype
from ...ops.elementwise import _base as B
from ...ops.elementwise.arithmetic import clamp_checks, select_checks
from ...registry import get as _get_op
from ...tensor import Tensor, _wrap
from numba import cuda

from . import _wide
from ._cbrt import cbrt as _cbrt
from ._complex_math import functions as _complex_functions
from ._storage import compiled as _k, device_empty, flat, from_holder, jit, launch_1d, storage_dtype
from .narrow import encode, from_int, is_small_float, to_f32
from .subbyte import is_sub, wide_type, widen, wrap

__all__ = ["KERNELS"]

_OK = {
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
    )
}


def _supported(op, *ts):
    for t in ts:
        if t._dtype.np not in _OK or t._dtype.kind == "quant":
            raise SpecError(
                op,
                "device",
                f"has no cuda kernel for element type "
                f"{t._dtype.name} (CUDA kernels take i1, si2-64, "
                f"ui2-64, f32, f64, bf16, f16, c64, c128 and the f8, f6 and f4 types)",
            )


_scalars = OrderedDict()  # (dtype, bytes) -> a one-element device array
_SCALARS_KEPT = 256


def _dev(op, t):
    """``t``'s device array, flat; a 0-d CPU tensor made from a weak Python scalar is
    read from a cached one-element device array holding its value (it is the op's
    attribute-like scalar, not a tensor the user placed; the copy is made once)."""
    v = t._value
    if hasattr(v, "copy_to_host"):
        return v if v.ndim == 1 else flat(v)
    if v.ndim != 0:
        raise SpecError(op, "device", "operands live on different devices (cpu, cuda:0)")
    key = (v.dtype.str, v.tobytes())
    d = _scalars.get(key)
    if d is None:
        one = np.ascontiguousarray(v.reshape(1))
        d = _scalars[key] = cuda.to_device(one.view(storage_dtype(one.dtype)))
        if len(_scalars) > _SCALARS_KEPT:
            _scalars.popitem(last=False)
    return d


_cache = {}


# The map kernels, one per operand pattern: name -> (operands as (array, index step) pairs,
# a step None for a contiguous operand, and whether a scalar parameter p follows them).
_MAPS = {
    "map1": ((("x", None),), False),
    "map1p": ((("x", None),), True),
    "map2": ((("a", "sa"), ("b", "sb")), False),
    "map2p": ((("a", "sa"), ("b", "sb")), True),
    "map3": ((("a", "sa"), ("b", "sb"), ("c", "sc")), False),
}


def _map_source(name):
    """Python source of map kernel ``name`` (see ``_MAPS``): out[i] = dfn(operands at i
    [, p]), one thread per element. (Four elements per thread, grid-strided with every
    load issued before the stores, measured slower on an H200: the add kernel alone fell
    from 2998 to 2222 GB/s, exp from 2366 to 1695; see docs/gpu.md.)"""
    ops, param = _MAPS[name]
    args = [a for a, _ in ops] + [st for _, st in ops if st] + (["p"] if param else [])
    vals = [f"{a}[i * {st}]" if st else f"{a}[i]" for a, st in ops] + (["p"] if param else [])
    return (
        f"def {name}({', '.join(args)}, out):\n"
        "    i = cuda.grid(1)\n"
        "    if i < out.shape[0]:\n"
        f"        out[i] = dfn({', '.join(vals)})\n"
    )


def _map_kernel(fn, name):
    """Map kernel ``name`` over the device function of ``fn`` (cached)."""
    k = _cache.get((fn, name))
    if k is None:
        scope = {"cuda": cuda, "dfn": cuda.jit(device=True)(fn)}
        exec(compile(_map_source(name), f"<xops cuda {name}>", "exec"), scope)
        k = _cache[(fn, name)] = jit(scope[name])
    return k


def _kernel1(fn):
    return _map_kernel(fn, "map1")


def _kernel2(fn):
    return _map_kernel(fn, "map2")


def _kernel1p(fn):
    return _map_kernel(fn, "map1p")


def _kernel2p(fn):
    return _map_kernel(fn, "map2p")


def _run1(op, fn, x, out_dt=None):
    out_dt = out_dt or x._dtype
    out = device_empty(x.shape, out_dt.np)
    src, dst = _dev(op, x), flat(out)
    if out_dt.name == "f32" and x._dtype.name == "f32" and _wide.usable(src, dst):
        _wide.wide_map(fn, src, dst)  # (16-byte loads: the same bits, at the copy's pace)
    else:
        launch_1d(_kernel1(fn), x.size, src, dst)
    return from_holder(out, out_dt)


def _run2(op, fn, x, y, out_dt=None, param=None):
    """out = fn(x, y) elementwise (fn(x, y, param) with a parameter); a 0-d operand
    (a weak scalar) is read at every index."""
    out_dt = out_dt or x._dtype
    big = x if x.ndim or not y.ndim else y
    out = device_empty(big.shape, out_dt.np)
    args = (_dev(op, x), _dev(op, y), int(x.ndim != 0), int(y.ndim != 0))
    if param is None:
        launch_1d(_kernel2(fn), big.size, *args, flat(out))
    else:
        launch_1d(_kernel2p(fn), big.size, *args, param, flat(out))
    return from_holder(out, out_dt)


# -- device functions (one thread, one element) ------------------------------------------


def _call1(f):
    """The device function a -> f(a), for ``f`` a ``math`` function (libdevice on the
    GPU), an ``operator`` function or ``abs``: numba types all of them on the device."""

    def call(a):
        return f(a)

    return call


def _call2(f):
    """The device function (a, b) -> f(a, b) (see :func:`_call1`)."""

    def call(a, b):
        return f(a, b)

    return call


_add, _sub, _mul, _div, _pow = map(
    _call2, (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow)
)
_or, _and, _xor = map(_call2, (operator.or_, operator.and_, operator.xor))
_eq, _ne, _ge, _gt, _le, _lt = map(
    _call2, (operator.eq, operator.ne, operator.ge, operator.gt, operator.le, operator.lt)
)
_fmod, _atan2 = _call2(math.fmod), _call2(math.atan2)


# compare GE / GT / LE / LT of complex values: NumPy's order, as the CPU computes them
# (np.greater_equal etc. on complex arrays): lexicographic on (real, imag), where the
# real parts decide only if neither imaginary part is NaN, and on a tie of the real
# parts the imaginary parts decide (any NaN part makes both tests false but a real-part
# tie with ordered imaginary parts). EQ and NE compare both parts (operator.eq / ne).
def _complex_order(real_cmp, imag_cmp):
    """The device function of one of those directions: ``real_cmp`` (> or <) on the
    real parts, ``imag_cmp`` on the imaginary parts of a real-part tie."""

    def cmp(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return (real_cmp(ar, br) and ai == ai and bi == bi) or (ar == br and imag_cmp(ai, bi))

    return cmp


_gt_op, _lt_op = operator.gt, operator.lt
_cge, _cgt = _complex_order(_gt_op, operator.ge), _complex_order(_gt_op, _gt_op)
_cle, _clt = _complex_order(_lt_op, operator.le), _complex_order(_lt_op, _lt_op)


_neg, _abs, _not_bool, _invert = map(_call1, (operator.neg, abs, operator.not_, operator.invert))
_exp, _log, _sqrt, _tanh, _sin, _cos = map(
    _call1, (math.exp, math.log, math.sqrt, math.tanh, math.sin, math.cos)
)
_expm1, _log1p, _tan, _erf = map(_call1, (math.expm1, math.log1p, math.tan, math.erf))


def _logistic(a):  # the CPU's overflow-safe form: e^-|a| never overflows
    e = math.exp(-abs(a))
    return 1.0 / (1.0 + e) if a >= 0 else e / (1.0 + e)


def _fmax(a, b):  # NaN propagates; max(-0, +0) = +0 (the CPU kernel's rule)
    if a != a or b != b:
        return a + b
    if a == b:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def _fmin(a, b):
    if a != a or b != b:
        return a + b
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def _imax(a, b):
    return a if a > b else b


def _imin(a, b):
    return a if a < b else b


def _sdiv(a, b):  # truncating; x/0 = -1, INT_MIN/-1 = INT_MIN (the CPU kernel's rules)
    if b == 0:
        return a - a - 1
    if b == -1:
        return -a
    q = a // b
    if q * b != a and (a < 0) != (b < 0):
        q += 1
    return q


def _udiv(a, b):  # x/0 = all ones
    if b == 0:
        # ~0, not 0 - 1: numba types unsigned - int64 as float64, and -1.0 converts to 0
        return ~(a - a)
    return a // b


def _srem(a, b):  # sign of the dividend; x%0 = x, INT_MIN % -1 = 0
    if b == 0:
        return a
    if b == -1:
        return a - a
    q = a // b
    if q * b != a and (a < 0) != (b < 0):
        q += 1
    return a - q * b


def _urem(a, b):
    if b == 0:
        return a
    return a % b


def _rsqrt(a):
    return 1.0 / math.sqrt(a)


def _isfinite(a):
    return (a - a) == 0  # inf - inf and NaN - NaN are NaN


# Rounding without math.floor/trunc (numba types those as int64 and the simulator cannot
# run libdevice): below 2**52 a - fmod(a, 1) is trunc(a), exactly; from 2**52 on (and for
# inf, NaN) every float is its own rounding. copysign keeps the sign of zero.
_BIG = 4503599627370496.0  # 2**52


def _floor(a):
    if not abs(a) < _BIG:
        return a
    t = math.copysign(a - math.fmod(a, 1.0), a)
    return t - 1.0 if t > a else t


def _ceil(a):
    if not abs(a) < _BIG:
        return a
    t = math.copysign(a - math.fmod(a, 1.0), a)
    return t + 1.0 if t < a else t


def _round_afz(a):  # half away from zero
    if not abs(a) < _BIG:
        return a
    t = math.copysign(a - math.fmod(a, 1.0), a)
    if abs(a - t) >= 0.5:
        t = t + math.copysign(1.0, a)
    return math.copysign(t, a)


def _round_even(a):  # half to even
    if not abs(a) < _BIG:
        return a
    t = math.copysign(a - math.fmod(a, 1.0), a)
    d = abs(a - t)
    if d > 0.5 or (d == 0.5 and math.fmod(t, 2.0) != 0):
        t = t + math.copysign(1.0, a)
    return math.copysign(t, a)


def _fsign(a):  # NaN -> NaN, -0 -> -0, +0 -> +0
    if a > 0:
        return a - a + 1
    if a < 0:
        return a - a - 1
    return a


def _isign(a):
    if a > 0:
        return a - a + 1
    if a < 0:
        return a - a - 1
    return a - a


def _shl(a, s, bits):  # the amount read as unsigned: amounts >= bits (or < 0) give 0
    if s < 0 or s >= bits:
        return a - a
    return a << s


def _sar(a, s, bits):  # signed: amounts >= bits give the sign fill
    if s < 0 or s >= bits:
        return a - a - 1 if a < 0 else a - a
    return a >> s


def _sar_u(a, s, bits):  # unsigned: the top bit of the width is the sign (the CPU's rule)
    v = np.int64(a)  # (ui64: the same bits)
    if bits < 64 and v >= (1 << (bits - 1)):
        v -= 1 << bits
    return v >> (bits - 1 if s >= bits else np.int64(s))  # (numba compares mixed signs exactly)


def _shr(a, s, bits):  # logical: the bits-wide pattern shifted, zeros in; >= bits gives 0
    if s < 0 or s >= bits:
        return a - a
    if a >= 0 or s == 0:
        return a >> s
    return (a >> s) & (((1 << (bits - s - 1)) - 1) * 2 + 1)  # (keep the low bits - s bits)


def _shr_u(a, s, bits):
    if s >= bits:
        return a - a
    return a >> s


def _popcnt(a, bits):
    c = a - a
    for k in range(bits):
        c += (a >> k) & 1
    return c


def _clz(a, bits):
    c = a - a
    k = bits - 1
    while k >= 0 and ((a >> k) & 1) == 0:
        c += 1
        k -= 1
    return c


_I1 = as_dtype("i1")
_CMP = {"EQ": _eq, "NE": _ne, "GE": _ge, "GT": _gt, "LE": _le, "LT": _lt}
_COMPLEX_CMP = {"EQ": _eq, "NE": _ne, "GE": _cge, "GT": _cgt, "LE": _cle, "LT": _clt}


# -- the ops ------------------------------------------------------------------------------


def _binary_op(name, kinds, by_kind, bits=False):
    """The kernel function of binary op ``name``: the CPU's operand checks, then
    ``by_kind[element kind]`` per element (given the type's bit width if ``bits``)."""

    def kernel(lhs, rhs):
        x, y = B._binary(name, lhs, rhs, kinds)
        if is_small_float(x._dtype):
            wide = x._dtype.name == "f8E8M0FNU" and name in _E8M0_IN_F64
            return _narrow(name, by_kind["float"], (x, y), x._dtype, wide=wide)
        if is_sub(x._dtype):
            return _sub_byte(name, by_kind, (x, y), x._dtype, bits)
        if x._dtype.kind == "complex":
            return complex_op(name, x, y)
        _supported(name, x)
        fn = by_kind.get(x._dtype.kind)
        if fn is None:
            raise SpecError(name, "device", f"has no cuda kernel for element type {x._dtype.name}")
        return _run2(name, fn, x, y, param=x._dtype.bits if bits else None)

    kernel.__name__ = f"{name}_cuda"
    return kernel


def _unary_op(name, kinds, by_kind, bits=False, out_kind=None):
    """The kernel function of unary op ``name`` (see :func:`_binary_op`); ``out_kind``
    "bool": an i1 result."""

    def kernel(operand):
        x = B._unary(name, operand, kinds)
        if is_small_float(x._dtype):
            return _narrow(name, by_kind["float"], (x,), x._dtype, out_kind == "bool")
        if is_sub(x._dtype):
            return _sub_byte(name, by_kind, (x,), x._dtype, bits)
        if x._dtype.kind == "complex":
            return complex_op(name, x)
        _supported(name, x)
        fn = by_kind.get(x._dtype.kind)
        if fn is None:
            raise SpecError(name, "device", f"has no cuda kernel for element type {x._dtype.name}")
        out_dt = _I1 if out_kind == "bool" else x._dtype
        if bits:
            out = device_empty(x.shape, out_dt.np)
            launch_1d(_kernel1p(fn), x.size, _dev(name, x), x._dtype.bits, flat(out))
            return from_holder(out, out_dt)
        return _run1(name, fn, x, out_dt)

    kernel.__name__ = f"{name}_cuda"
    return kernel


_I = ("si", "ui")
_F32, _F64, _UI16, _UI8 = as_dtype("f32"), as_dtype("f64"), as_dtype("ui16"), as_dtype("ui8")


# f8E8M0FNU's ops that the CPU computes in float64 (``_same2``: E8M0 spans float32's
# exponent range, so a float32 product or quotient could leave it)
_E8M0_IN_F64 = ("add", "subtract", "multiply", "divide", "remainder", "power", "atan2")


def _narrow(name, fn, ts, dt, boolean=False, wide=False):
    """Device function ``fn`` over small-float operands ``ts`` (of type ``dt``: bf16,
    f16, f8, f6, f4) as the CPU computes them: in float32 (float64 if ``wide``), decoded
    exactly, the result rounded once to ``dt`` (``boolean``: an i1 result, kept)."""
    fs = [to_f32(t) for t in ts]
    if wide:
        fs = [_to_f64(f) for f in fs]
    out_dt = _I1 if boolean else (_F64 if wide else _F32)
    if len(fs) == 1:
        r = _run1(name, fn, fs[0], out_dt)
    elif len(fs) == 2:
        r = _run2(name, fn, fs[0], fs[1], out_dt)
    else:
        r = _run3(name, fn, fs, out_dt, max(fs, key=lambda t: t.ndim).shape)
    return r if boolean else encode(r, dt)


def _to_f64(f):
    """float32 tensor ``f`` (on the device, or a 0-d CPU weak scalar) as float64 (exact)."""
    if hasattr(f._value, "copy_to_host"):
        return _run1("convert", _to_float, f, _F64)
    return _wrap(np.asarray(f._value, np.float64), _F64)


def _sub_byte(name, by_kind, ts, dt, bits=False):
    """Op ``name`` on i2 / i4 / ui2 / ui4 operands ``ts`` (of type ``dt``) as the CPU
    computes it: in int8 / uint8 (widened), the result wrapped to ``dt``'s width (given
    to the device function as the width if ``bits``; :mod:`.subbyte`)."""
    fn = by_kind.get(dt.kind)
    if fn is None:
        raise SpecError(name, "device", f"has no cuda kernel for element type {dt.name}")
    ws = [widen(t) for t in ts]
    if len(ws) == 2:
        r = _run2(name, fn, ws[0], ws[1], param=dt.bits if bits else None)
    elif bits:
        r = from_holder(device_empty(ws[0].shape, ws[0]._dtype.np), ws[0]._dtype)
        launch_1d(_kernel1p(fn), r.size, _dev(name, ws[0]), dt.bits, flat(r._value))
    else:
        r = _run1(name, fn, ws[0])
    return wrap(r, dt)


_C64, _C128 = as_dtype("c64"), as_dtype("c128")
_PART = {_C64: _F32, _C128: _F64}  # a complex type's part type
_COMPLEX = {"add": _add, "subtract": _sub, "negate": _neg}  # (operators; multiply: fused)
_REAL_RESULT = ("abs", "real", "imag")


def complex_op(name, *ts):
    """Op ``name`` on c64 / c128 device operands ``ts`` (checked): one map kernel over the
    device function of :mod:`._complex_math` (or an operator); abs, real and imag give
    the part type."""
    dt = ts[0]._dtype
    fn = (_COMPLEX.get(name) or _complex_functions(dt.np).get(name)) if dt in _PART else None
    if fn is None:
        raise SpecError(
            name,
            "device",
            f"has no cuda kernel for element type {dt.name} (complex kernels: add, subtract, "
            f"multiply, divide, negate, abs, sign, power, atan2, cbrt, maximum, "
            f"minimum, clamp, "
            f"exponential, "
            f"exponential_minus_one, log, log_plus_one, logistic, sqrt, rsqrt, sine, cosine, "
            f"tan, tanh, real, imag, compare EQ/NE, select, convert)",
        )
    out_dt = _PART[dt] if name in _REAL_RESULT else dt
    if len(ts) == 1:
        return _run1(name, fn, ts[0], out_dt)
    return _run2(name, fn, ts[0], ts[1], out_dt)


def _bits(t):
    """A narrow tensor as its ui16 / ui8 bit patterns (a view: device or 0-d CPU)."""
    v = t._value
    dt = _UI16 if v.dtype.itemsize == 2 else _UI8
    return _wrap(v.view(dt.np), dt)


def _stand_in(t):
    """A CPU tensor of ``t``'s type and shape that allocates one element (stride 0)."""
    if not isinstance(t, Tensor) or not hasattr(t._value, "copy_to_host"):
        return t
    one = np.zeros(1, t._dtype.np)
    v = np.lib.stride_tricks.as_strided(one, t.shape, (0,) * t.ndim) if t.ndim else one.reshape(())
    return _wrap(v, t._dtype)


def _zero_d(dt):
    """A 0-d CPU tensor of element type ``dt`` (a stand-in for checks of attributes and
    types, once the shapes have been checked)."""
    return _wrap(np.zeros((), dt.np), dt)


_compare_checked = {}


def compare(lhs, rhs, comparison_direction, compare_type=None):
    x, y = B._binary("compare", lhs, rhs, B._ANY, shape_label="C2")
    # direction and compare type (I3, I4, C3): the CPU op on 0-d stand-ins (O(1)), once
    # per (types, direction, compare type) that passed
    key = (x._dtype, y._dtype, comparison_direction, compare_type)
    try:
        seen = key in _compare_checked
    except TypeError:  # (an unhashable attribute: the CPU op names the error)
        key, seen = None, False
    if not seen:
        _get_op("compare").kernels["cpu"](
            _zero_d(x._dtype), _zero_d(y._dtype), comparison_direction, compare_type
        )
        if key is not None:
            if len(_compare_checked) > 1024:
                _compare_checked.clear()
            _compare_checked[key] = True
    direction = str(comparison_direction).upper()
    if compare_type is not None and str(compare_type).upper() == "TOTALORDER":  # (floats)
        return _run2("compare", _CMP[direction], _total_key(x), _total_key(y), _I1)
    if is_small_float(x._dtype):  # (exact in float32)
        x, y = to_f32(x), to_f32(y)
    elif is_sub(x._dtype):  # (exact in int8 / uint8)
        x, y = widen(x), widen(y)
    if x._dtype.kind == "complex":  # (EQ / NE: both parts; the others NumPy's order)
        return _run2("compare", _COMPLEX_CMP[direction], x, y, _I1)
    _supported("compare", x)
    return _run2("compare", _CMP[direction], x, y, _I1)


def _total_key_k(u, bits, signless, out):
    """The CPU's totalOrder key of float bit patterns ``u`` (``bits`` wide): the
    magnitude for a clear sign bit, -magnitude - 1 for a set one (f8E8M0FNU, no sign
    bit: the pattern itself)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        b = np.uint64(u[i])
        if signless:
            out[i] = np.int64(b)
        else:
            top = np.uint64(bits - 1)
            mag = np.int64(b & ((np.uint64(1) << top) - np.uint64(1)))
            out[i] = -mag - 1 if (b >> top) & np.uint64(1) else mag


_I64 = as_dtype("i64")


def _total_key(t):
    """compare's TOTALORDER key of float tensor ``t`` (device, or a 0-d weak scalar) as
    an i64 tensor of its shape; the order of the keys is the CPU's (xops.ops.elementwise.
    arithmetic._total_order_key): -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN."""
    dt = t._dtype
    u = _dev("compare", t)
    u = u.view(np.dtype(f"u{u.dtype.itemsize}"))
    out = device_empty(t.shape, np.int64)
    launch_1d(_k(_total_key_k), t.size, u, dt.bits, int(dt.name == "f8E8M0FNU"), flat(out))
    return from_holder(out, _I64)


def _select1(p, t, f):
    return t if p else f


def _clamp1(a, v, b):
    v = a if a > v else v
    return b if b < v else v


def _fclamp1(a, v, b):
    if v != v or a != a:  # maximum(v, min): NaN propagates, +0 > -0
        v = v + a
    elif a > v or (a == v and math.copysign(1.0, v) < 0):
        v = a
    if v != v or b != b:  # minimum(v, max): -0 < +0
        v = v + b
    elif b < v or (b == v and math.copysign(1.0, b) < 0):
        v = b
    return v


def _kernel3(fn):
    return _map_kernel(fn, "map3")


def _run3(name, fn, ts, out_dt, shape):
    out = device_empty(shape, out_dt.np)
    devs = [_dev(name, t) for t in ts]
    steps = [int(t.ndim != 0) for t in ts]
    launch_1d(_kernel3(fn), math.prod(shape), *devs, *steps, flat(out))
    return from_holder(out, out_dt)


def select(pred, on_true, on_false):
    p, tb, fb = select_checks(pred, on_true, on_false)  # (a weak branch comes broadcast)
    t, f = operands("select", on_true, on_false)
    if is_small_float(tb._dtype) or is_sub(tb._dtype):  # a choice of bit patterns
        bt, bf = _bits(t), _bits(f)
        r = _run3("select", _select1, (p, bt, bf), bt._dtype, tb.shape)
        return from_holder(r._value.view(storage_dtype(tb._dtype.np)), tb._dtype)
    if tb._dtype not in _PART:  # (c64, c128: a choice of values, as the other types)
        _supported("select", tb)
    return _run3("select", _select1, (p, t, f), tb._dtype, tb.shape)


def clamp(min, operand, max):  # noqa: A002  (the op's own parameter names)
    x, lo, hi = clamp_checks(min, operand, max)
    if is_small_float(x._dtype):
        return _narrow("clamp", _fclamp1, (lo, x, hi), x._dtype)
    if is_sub(x._dtype):  # (in range: nothing to wrap)
        ws = tuple(widen(t) for t in (lo, x, hi))
        return wrap(_run3("clamp", _clamp1, ws, wide_type(x._dtype), x.shape), x._dtype)
    if x._dtype in _PART:  # c64, c128: minimum(maximum(x, min), max) in NumPy's order
        fns = _complex_functions(x._dtype.np)
        return _run3("clamp", _complex_clamp(fns["maximum"], fns["minimum"]), (lo, x, hi),
                     x._dtype, x.shape)  # fmt: skip
    _supported("clamp", x)
    fn = _fclamp1 if x._dtype.kind == "float" else _clamp1
    return _run3("clamp", fn, (lo, x, hi), x._dtype, x.shape)


_clamps = {}


def _complex_clamp(maximum, minimum):
    """The complex clamp's device function over those of maximum and minimum (one per
    complex type)."""
    fn = _clamps.get(maximum)
    if fn is None:
        hi_of, lo_of = cuda.jit(device=True)(maximum), cuda.jit(device=True)(minimum)

        def clamp_c(lo, x, hi):
            return lo_of(hi_of(x, lo), hi)

        fn = _clamps[maximum] = clamp_c
    return fn


def _to_float(a):
    return a


def _to_bool(a):
    return a != 0


def convert(operand, dtype):
    (x,) = operands("convert", operand, names=["operand"])
    dst = _result_dtype("convert", dtype)
    if x._dtype.kind == "complex" or dst.kind == "complex":
        return _convert_complex(x, dst)
    if is_sub(x._dtype) or is_sub(dst):
        return _convert_sub(x, dst)
    if is_small_float(x._dtype) or is_small_float(dst):
        return _convert_narrow(x, dst)
    _supported("convert", x, _zero_d(dst))
    src = x._dtype
    if dst.kind == "bool":
        fn = _to_bool
    elif src.kind == "float" and dst.kind in _I:
        return _float_to_int(x, dst)
    else:
        fn = _to_float  # integer wrap / float rounding by the store, as the CPU's astype
    return _run1("convert", fn, x, dst)


def _f2i_k(x, lo_f, hi1_f, lo, hi, out):
    """Float -> integer, the CPU's rule: NaN -> 0, truncation toward zero, saturation to
    [lo, hi] (``lo_f``, ``hi1_f``: lo and hi + 1 as exact floats; trunc(a) <= lo exactly
    when a <= lo, as lo is an integer <= 0, and trunc(a) >= hi + 1 when a >= hi + 1)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        a = x[i]
        if a != a:
            out[i] = 0
        elif a <= lo_f:
            out[i] = lo
        elif a >= hi1_f:
            out[i] = hi
        else:
            out[i] = a  # (the store truncates toward zero; a is in range)


def _float_to_int(x, dst):
    """convert f32 / f64 tensor ``x`` to integer type ``dst`` (i2 / i4 / ui2 / ui4: in
    their range, then wrapped to their storage)."""
    sub = is_sub(dst)
    hold = wide_type(dst) if sub else dst
    out = device_empty(x.shape, hold.np)
    lo, hi = int(dst.min), int(dst.max)
    c = hold.np.type
    launch_1d(_k(_f2i_k), x.size, _dev("convert", x), float(lo), float(hi + 1), c(lo), c(hi),
              flat(out))  # fmt: skip
    r = from_holder(out, hold)
    return wrap(r, dst) if sub else r


def _convert_complex(x, dst):
    """convert from or to c64 / c128, as the CPU: complex -> complex rounds each part
    once (the store); complex -> other drops the imaginary part, then converts the real
    part; other -> complex converts to the part type (one rounding), imaginary part +0."""
    src = x._dtype
    if src is dst:
        return from_holder(x._value, dst)
    if src.kind == "complex" and dst.kind == "complex":  # (c64 <-> c128)
        return _run1("convert", _to_float, x, dst)
    if src.kind == "complex":
        return convert(complex_op("real", x), dst)
    if dst not in _PART:
        raise SpecError("convert", "device", f"has no cuda kernel for {src.name} -> {dst.name}")
    part = _PART[dst]
    return _run1("convert", _to_float, x if src is part else convert(x, part), dst)


def _convert_sub(x, dst):
    """convert from or to i2 / i4 / ui2 / ui4 (:mod:`.subbyte`): from them widened to
    int8 / uint8 (exact); to them from an integer or i1 wrapped to the width (the CPU's
    wrap)."""
    src = x._dtype
    if src is dst:
        return from_holder(x._value, dst)
    if is_sub(src):
        x = widen(x)
        if not is_sub(dst):
            return convert(x, dst)
    elif src.kind not in ("bool", *_I):  # a float: saturated to dst's range, then wrapped
        return _float_to_int(to_f32(x) if is_small_float(src) else x, dst)
    return wrap(x, dst)


def _convert_narrow(x, dst):
    """convert from or to a small float (bf16, f16, f8, f6, f4; see :mod:`.narrow`):
    through float32 (exact) from them; to them rounded once from f32 / f64 bits, from
    integers through float64 (exact, or sticky for 64-bit integers)."""
    src = x._dtype
    if src is dst:
        return from_holder(x._value, dst)
    if is_small_float(src):
        if dst.kind in _I:
            return _float_to_int(to_f32(x), dst)  # (exact in float32)
        f = to_f32(x)
        if is_small_float(dst):
            return encode(f, dst)
        return f if dst is _F32 else convert(f, dst)
    _supported("convert", x)
    if src.kind == "float":
        return encode(x, dst)
    if src.kind in _I and src.bits == 64:
        return encode(from_int(x), dst)
    return encode(_run1("convert", _to_float, x, _F64), dst)  # (exact: at most 32 bits)


KERNELS = {
    "add": _binary_op("add", B._ANY, {"bool": _or, "si": _add, "ui": _add, "float": _add}),
    "subtract": _binary_op("subtract", B._NUM, {"si": _sub, "ui": _sub, "float": _sub}),
    "multiply": _binary_op(
        "multiply", B._ANY, {"bool": _and, "si": _mul, "ui": _mul, "float": _mul}
    ),
    "divide": _binary_op("divide", B._NUM, {"si": _sdiv, "ui": _udiv, "float": _div}),
    "maximum": _binary_op(
        "maximum", B._ANY, {"bool": _or, "si": _imax, "ui": _imax, "float": _fmax}
    ),
    "minimum": _binary_op(
        "minimum", B._ANY, {"bool": _and, "si": _imin, "ui": _imin, "float": _fmin}
    ),
    "and": _binary_op("and", (B._B, B._SI, B._UI), {"bool": _and, "si": _and, "ui": _and}),
    "or": _binary_op("or", (B._B, B._SI, B._UI), {"bool": _or, "si": _or, "ui": _or}),
    "xor": _binary_op("xor", (B._B, B._SI, B._UI), {"bool": _xor, "si": _xor, "ui": _xor}),
    "negate": _unary_op("negate", B._NUM, {"si": _neg, "ui": _neg, "float": _neg}),
    "abs": _unary_op("abs", (B._SI, B._F, B._C), {"si": _abs, "float": _abs}),
    "not": _unary_op(
        "not", (B._B, B._SI, B._UI), {"bool": _not_bool, "si": _invert, "ui": _invert}
    ),
    "floor": _unary_op("floor", (B._F,), {"float": _floor}),
    "round_nearest_afz": _unary_op("round_nearest_afz", (B._F,), {"float": _round_afz}),
    "round_nearest_even": _unary_op("round_nearest_even", (B._F,), {"float": _round_even}),
    "ceil": _unary_op("ceil", (B._F,), {"float": _ceil}),
    "exponential": _unary_op("exponential", B._FC, {"float": _exp}),
    "log": _unary_op("log", B._FC, {"float": _log}),
    "sqrt": _unary_op("sqrt", B._FC, {"float": _sqrt}),
    "tanh": _unary_op("tanh", B._FC, {"float": _tanh}),
    "sine": _unary_op("sine", B._FC, {"float": _sin}),
    "cosine": _unary_op("cosine", B._FC, {"float": _cos}),
    "logistic": _unary_op("logistic", B._FC, {"float": _logistic}),
    "remainder": _binary_op("remainder", B._NUM, {"si": _srem, "ui": _urem, "float": _fmod}),
    "power": _binary_op("power", B._NUM, {"float": _pow}),
    "atan2": _binary_op("atan2", B._FC, {"float": _atan2}),
    "shift_left": _binary_op("shift_left", B._INT, {"si": _shl, "ui": _shl}, bits=True),
    "shift_right_arithmetic": _binary_op(
        "shift_right_arithmetic", B._INT, {"si": _sar, "ui": _sar_u}, bits=True
    ),
    "shift_right_logical": _binary_op(
        "shift_right_logical", B._INT, {"si": _shr, "ui": _shr_u}, bits=True
    ),
    "cbrt": _unary_op("cbrt", B._FC, {"float": _cbrt}),
    "sign": _unary_op("sign", (B._SI, B._F, B._C), {"si": _isign, "float": _fsign}),
    "is_finite": _unary_op("is_finite", (B._F,), {"float": _isfinite}, out_kind="bool"),
    "rsqrt": _unary_op("rsqrt", B._FC, {"float": _rsqrt}),
    "exponential_minus_one": _unary_op("exponential_minus_one", B._FC, {"float": _expm1}),
    "log_plus_one": _unary_op("log_plus_one", B._FC, {"float": _log1p}),
    "tan": _unary_op("tan", B._FC, {"float": _tan}),
    "erf": _unary_op("erf", (B._F,), {"float": _erf}),
    "popcnt": _unary_op("popcnt", B._INT, {"si": _popcnt, "ui": _popcnt}, bits=True),
    "count_leading_zeros": _unary_op(
        "count_leading_zeros", B._INT, {"si": _clz, "ui": _clz}, bits=True
    ),
    "compare": compare,
    "select": select,
    "clamp": clamp,
    "convert": convert,
}
