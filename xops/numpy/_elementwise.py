"""Element-wise functions of the array API standard (2024.12), with promotion and
broadcasting (:mod:`xops.numpy._base`).

Where the spec has the op (add, sine, atan2, ...) the function is that op. The rest
are composed from spec ops, or — where a composition would lose accuracy or IEEE
special cases (asin, cosh, hypot, logaddexp, floor division, ...) — computed with
NumPy inside a tape primitive whose gradient rule is written with xops ops (so second
derivatives work).
"""

import numpy as np

from ..autodiff.tape import primitive
from ..errors import SpecError
from ..ops import elementwise as E
from ..ops._core import compute, result, tstr
from ..tensor import Tensor
from . import _dtypes as D
from ._base import array, binary, from_numpy, to

_B, _SI, _UI, _F, _C = "bool", "si", "ui", "float", "complex"
_NUM = (_SI, _UI, _F, _C)
_INT = (_SI, _UI)
_INEXACT = (_F, _C)
_REAL = (_SI, _UI, _F)
_INT_BOOL = (_B, _SI, _UI)

_WORDS = {
    _B: "boolean",
    _SI: "signed integer",
    _UI: "unsigned integer",
    _F: "real floating",
    _C: "complex floating",
}


def _need(op, t, kinds):
    if t._dtype.kind not in kinds:
        raise SpecError(
            op, "", f"needs a {' or '.join(_WORDS[k] for k in kinds)} array, got {tstr(t)}"
        )
    return t


def _one(x, op, kinds=_NUM):
    if type(x) is not Tensor:
        x = array(x, op)
    if x._dtype.kind not in kinds:
        _need(op, x, kinds)
    return x


def _two(x1, x2, op, kinds=_NUM):
    a, b = binary(x1, x2, op)
    if a._dtype.kind not in kinds:
        _need(op, a, kinds)
    return a, b


def _two_float(x1, x2, op):
    """Two real operands, promoted together and then to their float type (math functions
    of two arguments: atan2, copysign, hypot, logaddexp)."""
    a, b = _two(x1, x2, op, _REAL)
    dt = D.float_of(a._dtype)
    return to(a, dt), to(b, dt)


def _inexact(x, op, kinds=_NUM):
    """One operand, ints/bools converted to the default float (for math functions)."""
    x = _one(x, op, kinds)
    return x if x._dtype.kind in _INEXACT else to(x, D.default_float)


def _math(name, fn):
    """The standard's one-argument math function ``name``: ``fn`` of the operand, whose
    integers and bools are first converted to the default float."""

    def f(x, /):
        return fn(_inexact(x, name))

    f.__name__ = f.__qualname__ = name
    return f


def _arithmetic(name, fn, kinds=_NUM):
    """The standard's add, subtract or multiply: ``fn`` of the operands as they are when
    both are tensors of one dtype and shape (the operators' fast path), else of the
    operands promoted together (``kinds``: the element kinds it accepts)."""

    def f(x1, x2, /):
        if (
            type(x1) is Tensor
            and type(x2) is Tensor
            and x1._dtype is x2._dtype
            and x1._value.shape == x2._value.shape
        ):
            return fn(x1, x2)
        return fn(*_two(x1, x2, name, kinds))

    f.__name__ = f.__qualname__ = name
    return f


def _rounding(name, fn):
    """The standard's rounding function ``name`` (real operands): ``fn`` for floats;
    integers are returned as they are."""

    def f(x, /):
        x = _one(x, name, _REAL)
        return fn(x) if x._dtype.kind == _F else x

    f.__name__ = f.__qualname__ = name
    return f


# ---------------------------------------------------------------------------------------
# NumPy-computed primitives (accuracy and IEEE special cases), xops gradient rules
# ---------------------------------------------------------------------------------------


def _np_unary(name, fn):
    @primitive(name)
    def op(x):
        with np.errstate(all="ignore"):
            return result(fn(compute(x)), x._dtype)

    op.__name__ = name
    return op


def _np_binary(name, fn):
    @primitive(name)
    def op(x1, x2):
        with np.errstate(all="ignore"):
            return result(fn(compute(x1), compute(x2)), x1._dtype)

    op.__name__ = name
    return op


_asin = _np_unary("asin", np.arcsin)
_asin.defvjp(lambda g, out, x: E.multiply(g, E.rsqrt(E.subtract(1.0, E.multiply(x, x)))))
_acos = _np_unary("acos", np.arccos)
_acos.defvjp(lambda g, out, x: E.negate(E.multiply(g, E.rsqrt(E.subtract(1.0, E.multiply(x, x))))))
_atan = _np_unary("atan", np.arctan)
_atan.defvjp(lambda g, out, x: E.divide(g, E.add(1.0, E.multiply(x, x))))
_asinh = _np_unary("asinh", np.arcsinh)
_asinh.defvjp(lambda g, out, x: E.multiply(g, E.rsqrt(E.add(E.multiply(x, x), 1.0))))
_acosh = _np_unary("acosh", np.arccosh)
_acosh.defvjp(
    lambda g, out, x: E.divide(g, E.multiply(E.sqrt(E.subtract(x, 1.0)), E.sqrt(E.add(x, 1.0))))
)
_atanh = _np_unary("atanh", np.arctanh)
_atanh.defvjp(lambda g, out, x: E.divide(g, E.subtract(1.0, E.multiply(x, x))))
_sinh = _np_unary("sinh", np.sinh)
_cosh = _np_unary("cosh", np.cosh)
_sinh.defvjp(lambda g, out, x: E.multiply(g, _cosh(x)))
_cosh.defvjp(lambda g, out, x: E.multiply(g, _sinh(x)))
_log2 = _np_unary("log2", np.log2)
_log2.defvjp(lambda g, out, x: E.divide(g, E.multiply(x, float(np.log(2.0)))))
_log10 = _np_unary("log10", np.log10)
_log10.defvjp(lambda g, out, x: E.divide(g, E.multiply(x, float(np.log(10.0)))))
_trunc = _np_unary("trunc", np.trunc)
_trunc.defvjp(lambda g, out, x: E.multiply(g, 0.0))

_hypot = _np_binary("hypot", np.hypot)


@_hypot.defvjp
def _hypot_vjp(g, out, x1, x2):
    safe = E.select(E.compare(out, 0.0, "EQ"), E.add(out, 1.0), out)
    return E.multiply(g, E.divide(x1, safe)), E.multiply(g, E.divide(x2, safe))


_logaddexp = _np_binary("logaddexp", np.logaddexp)


@_logaddexp.defvjp
def _logaddexp_vjp(g, out, x1, x2):
    # d/dx1 = exp(x1 - out); where both are -inf (out = -inf) the split is even
    both = E.compare(out, float("-inf"), "EQ")
    w1 = E.select(both, E.add(E.multiply(out, 0.0), 0.5), E.exponential(E.subtract(x1, out)))
    return E.multiply(g, w1), E.multiply(g, E.subtract(1.0, w1))


_copysign = _np_binary("copysign", np.copysign)


@_copysign.defvjp
def _copysign_vjp(g, out, x1, x2):
    same = E.compare(_signbit_t(x1), _signbit_t(out), "EQ")
    return E.select(same, g, E.negate(g)), E.multiply(g, 0.0)


def _np_floor_divide(a, b):
    """NumPy's floor division with the standard's infinite cases: +-inf // finite is an
    infinity (Python and NumPy give NaN, which the standard only tolerates), and a finite
    x // an infinity of the other sign is -0 (Python and NumPy give -1)."""
    out = np.floor_divide(a, b)
    inf_fin = np.isinf(a) & np.isfinite(b) & (b != 0)
    fin_inf = np.isfinite(a) & (a != 0) & np.isinf(b) & (np.signbit(a) != np.signbit(b))
    if inf_fin.any() or fin_inf.any():
        out = np.where(fin_inf, -0.0, np.where(inf_fin, a / b, out)).astype(out.dtype)
    return out


_float_floordiv = _np_binary("floor_divide", _np_floor_divide)
_float_floordiv.defvjp(lambda g, out, x1, x2: (E.multiply(g, 0.0), E.multiply(g, 0.0)))
_float_mod = _np_binary("remainder", np.remainder)


@_float_mod.defvjp
def _float_mod_vjp(g, out, x1, x2):
    return g, E.negate(E.multiply(g, _float_floordiv(x1, x2)))


_nextafter = _np_binary("nextafter", np.nextafter)
_nextafter.defvjp(lambda g, out, x1, x2: (E.multiply(g, 0.0), E.multiply(g, 0.0)))


def _floor_op(x1, x2, op, float_fn, int_ufunc):
    """``//`` or ``%`` of real operands: the float primitive ``float_fn`` for floats,
    NumPy's ``int_ufunc`` (its integer results, division by zero included) otherwise."""
    a, b = _two(x1, x2, op, _REAL)
    if a._dtype.kind == _F:
        return float_fn(a, b)
    with np.errstate(all="ignore"):
        return from_numpy(int_ufunc(compute(a), compute(b)), a._dtype)


def _signbit_t(t):
    return from_numpy(np.signbit(compute(t)), D.bool)


def _host(fn, t, out_dt=None):
    """A non-differentiable result computed with NumPy on the compute values."""
    with np.errstate(all="ignore"):
        r = fn(compute(t))
    return from_numpy(r, out_dt or t._dtype)


# ---------------------------------------------------------------------------------------
# The standard's element-wise functions
# ---------------------------------------------------------------------------------------


def abs(x, /):
    x = _one(x, "abs")
    return x if x._dtype.kind == _UI else E.abs(x)


acos = _math("acos", _acos)
acosh = _math("acosh", _acosh)


add = _arithmetic("add", E.add)


asin = _math("asin", _asin)
asinh = _math("asinh", _asinh)
atan = _math("atan", _atan)


def atan2(x1, x2, /):
    return E.atan2(*_two_float(x1, x2, "atan2"))


atanh = _math("atanh", _atanh)


def bitwise_and(x1, x2, /):
    return E.and_(*_two(x1, x2, "bitwise_and", _INT_BOOL))


def bitwise_left_shift(x1, x2, /):
    return E.shift_left(*_two(x1, x2, "bitwise_left_shift", _INT))


def bitwise_invert(x, /):
    return E.not_(_one(x, "bitwise_invert", _INT_BOOL))


def bitwise_or(x1, x2, /):
    return E.or_(*_two(x1, x2, "bitwise_or", _INT_BOOL))


def bitwise_right_shift(x1, x2, /):
    a, b = _two(x1, x2, "bitwise_right_shift", _INT)
    fn = E.shift_right_logical if a._dtype.kind == _UI else E.shift_right_arithmetic
    return fn(a, b)


def bitwise_xor(x1, x2, /):
    return E.xor(*_two(x1, x2, "bitwise_xor", _INT_BOOL))


ceil = _rounding("ceil", E.ceil)


def clip(x, /, min=None, max=None):
    """Clamp to [min, max] (either may be None, a Python scalar or an array that
    broadcasts with x); the result keeps x's type."""
    x = _one(x, "clip", _REAL)
    out = x
    for bound, fn in ((min, maximum), (max, minimum)):
        if bound is None:
            continue
        if isinstance(bound, Tensor):
            b = to(bound, x._dtype)
        else:
            b = array(bound, "clip") if not isinstance(bound, (int, float)) else bound
            if isinstance(b, Tensor):
                b = to(b, x._dtype)
            elif x._dtype.kind in _INT:
                b = int(np.clip(b, x._dtype.min, x._dtype.max)) if not np.isnan(b) else b
        out = fn(out, b)
    return to(out, x._dtype)


def conj(x, /):
    x = _one(x, "conj")
    if x._dtype.kind != _C:
        return x
    return E.complex(E.real(x), E.negate(E.imag(x)))


def copysign(x1, x2, /):
    return _copysign(*_two_float(x1, x2, "copysign"))


cos = _math("cos", E.cosine)
cosh = _math("cosh", _cosh)


def divide(x1, x2, /):
    """True division: integers and bools divide as the default float (f32)."""
    a, b = _two(x1, x2, "divide")
    if a._dtype.kind not in _INEXACT:
        a, b = to(a, D.default_float), to(b, D.default_float)
    return E.divide(a, b)


def equal(x1, x2, /):
    return E.compare(*binary(x1, x2, "equal"), "EQ")


exp = _math("exp", E.exponential)


def _expm1(x):
    """exponential_minus_one; complex: the standard's special cases, which are those of
    exp(z) - 1 with C99 Annex G's cexp where a part is infinite or NaN (expm1(-inf + i inf)
    = -1 + 0j, expm1(inf + i NaN) = inf + NaN j, ...; the spec op's formula gives NaN
    there), and a zero real part +0 (expm1(-0 + 0j) = 0 + 0j)."""
    y = E.exponential_minus_one(x)
    if x._dtype.kind != _C:
        return y
    special = logical_not(isfinite(x))
    y = E.select(special, E.subtract(*binary(E.exponential(x), 1.0, "expm1")), y)
    return E.add(*binary(y, complex(0.0, -0.0), "expm1"))  # (-0 + 0 = +0; nothing else)


expm1 = _math("expm1", _expm1)


floor = _rounding("floor", E.floor)


def floor_divide(x1, x2, /):
    """Floor division (``//``): rounds toward -inf, as Python and NumPy."""
    return _floor_op(x1, x2, "floor_divide", _float_floordiv, np.floor_divide)


def greater(x1, x2, /):
    return E.compare(*_two(x1, x2, "greater", _REAL + (_B,)), "GT")


def greater_equal(x1, x2, /):
    return E.compare(*_two(x1, x2, "greater_equal", _REAL + (_B,)), "GE")


def hypot(x1, x2, /):
    return _hypot(*_two_float(x1, x2, "hypot"))


def imag(x, /):
    """The imaginary part; a real array's is zeros of its own dtype (2024.12)."""
    x = _one(x, "imag")
    if x._dtype.kind == _C:
        return E.imag(x)
    return from_numpy(np.zeros(x.shape), x._dtype)


def isfinite(x, /):
    x = _one(x, "isfinite")
    return _host(np.isfinite, x, D.bool)


def isinf(x, /):
    x = _one(x, "isinf")
    return _host(np.isinf, x, D.bool)


def isnan(x, /):
    x = _one(x, "isnan")
    return _host(np.isnan, x, D.bool)


def less(x1, x2, /):
    return E.compare(*_two(x1, x2, "less", _REAL + (_B,)), "LT")


def less_equal(x1, x2, /):
    return E.compare(*_two(x1, x2, "less_equal", _REAL + (_B,)), "LE")


log = _math("log", E.log)
log1p = _math("log1p", E.log_plus_one)
log2 = _math("log2", _log2)
log10 = _math("log10", _log10)


def logaddexp(x1, x2, /):
    return _logaddexp(*_two_float(x1, x2, "logaddexp"))


def _logical(x1, x2, op, fn):
    a, b = binary(x1, x2, op)
    return fn(to(a, D.bool), to(b, D.bool))


def logical_and(x1, x2, /):
    return _logical(x1, x2, "logical_and", E.and_)


def logical_not(x, /):
    return E.not_(to(_one(x, "logical_not", (_B,) + _NUM), D.bool))


def logical_or(x1, x2, /):
    return _logical(x1, x2, "logical_or", E.or_)


def logical_xor(x1, x2, /):
    return _logical(x1, x2, "logical_xor", E.xor)


def maximum(x1, x2, /):
    """Element-wise maximum; NaN propagates (as the spec's maximum)."""
    return E.maximum(*_two(x1, x2, "maximum", _REAL))


def minimum(x1, x2, /):
    return E.minimum(*_two(x1, x2, "minimum", _REAL))


multiply = _arithmetic("multiply", E.multiply, _NUM + (_B,))


def negative(x, /):
    return E.negate(_one(x, "negative"))


def nextafter(x1, x2, /):
    a, b = _two(x1, x2, "nextafter", (_F,))
    return _nextafter(a, b)


def not_equal(x1, x2, /):
    return E.compare(*binary(x1, x2, "not_equal"), "NE")


def positive(x, /):
    return _one(x, "positive")


def pow(x1, x2, /):
    a, b = _two(x1, x2, "pow")
    if a._dtype.kind in _INT and np.any(compute(b) < 0):
        raise SpecError(
            "pow",
            "",
            f"integers to negative integer powers are not allowed "
            f"(as NumPy), got exponents {tstr(b)} < 0",
        )
    return E.power(a, b)


def real(x, /):
    """The real part; a real-valued array is returned as it is (2024.12: numeric input)."""
    x = _one(x, "real")
    return E.real(x) if x._dtype.kind == _C else x


def reciprocal(x, /):
    x = _inexact(x, "reciprocal")
    return E.divide(1.0, x)


def remainder(x1, x2, /):
    """``%``: the remainder of floor division, with the divisor's sign (Python, NumPy)."""
    return _floor_op(x1, x2, "remainder", _float_mod, np.remainder)


def round(x, /):
    """Round half to even (as the standard); integers are returned as they are."""
    x = _one(x, "round")
    k = x._dtype.kind
    if k == _F:
        return E.round_nearest_even(x)
    if k == _C:
        return E.complex(E.round_nearest_even(E.real(x)), E.round_nearest_even(E.imag(x)))
    return x


def sign(x, /):
    x = _one(x, "sign")
    if x._dtype.kind == _UI:
        return from_numpy(compute(x) != 0, x._dtype)
    if x._dtype.kind in (_F, _C):  # the standard: sign(-0) is 0 (+0), sign(+-0 +- 0j)
        # 0 + 0j; the spec op keeps the zero's signs (adding +0 changes nothing else)
        return E.add(E.sign(x), from_numpy(np.zeros(x.shape), x._dtype))
    return E.sign(x)


def signbit(x, /):
    return _signbit_t(_one(x, "signbit", (_F,)))


sin = _math("sin", E.sine)
sinh = _math("sinh", _sinh)


def square(x, /):
    x = _one(x, "square")
    return E.multiply(x, x)


sqrt = _math("sqrt", E.sqrt)


subtract = _arithmetic("subtract", E.subtract)


tan = _math("tan", E.tan)
tanh = _math("tanh", E.tanh)


trunc = _rounding("trunc", _trunc)


__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trunc",
]
