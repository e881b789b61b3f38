"""Elementwise ops: StableHLO's unary and binary elementwise ops, select, clamp,
compare, complex/real/imag, and XLA's Erf and Tan.

Each op lists the element types the spec accepts ((I1)/(I2) labels) and checks that
operands have one type and one shape ((C1)). A Python scalar operand is weak: it takes
the other operand's element type and broadcasts like a 0-d value, as in ``jax.lax``.
Tensors of different shapes are an error here; the Python operators broadcast
NumPy-style through ``broadcast_in_dim`` first.

Where the work runs (measured in benchmarks/, written down in docs/kernels.md):
NumPy ufuncs for the ops whose NumPy semantics equal the spec's; Numba kernels
(``xops.kernels.elementwise``) for integer divide/remainder/power/shifts/clz,
IEEE-754-2019 maximum/minimum and round_nearest_afz.

Autodiff: every op is a ``@primitive``; the gradient rule of each float/complex op sits
right below it, written with xops ops (so rules record too and higher orders work).
Conventions, all those of ``jax.vjp`` of the matching ``jax.lax`` op:

* complex: no conjugation in linear maps; a holomorphic f sends g back as g * f'(z).
  real -> complex(g, 0); imag -> complex(0, -g); complex(lhs, rhs) -> (real(g), -imag(g));
  abs of complex -> complex(g) * conj(x) / |x| (0 at x = 0).
* kinks: abs'(0) = +1; maximum/minimum split a tie evenly (g/2 each, -0 vs +0 is a tie);
  clamp sends g to the operand only strictly inside (min, max), to min only where
  x < min < max, to max only where x > max (so at x == min or x == max nobody gets it);
  remainder is (g, -g * trunc(lhs / rhs)); power's exponent reads log(0) as 0.
* piecewise-constant float ops (sign, floor, ceil, round_*) give zeros; integer and
  boolean results (compare, is_finite, popcnt, ...) never record a node.
"""
import builtins

import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import as_dtype
from ..kernels import elementwise as K
from ..tensor import Tensor, _wrap
from . import _portable
from ._core import (SpecError, as_tensor, check, compute, fast_binary, kinds_str, operands,
                    result, tstr)

__all__ = [
    "abs", "negate", "sign", "exponential", "exponential_minus_one", "log", "log_plus_one",
    "logistic", "sqrt", "rsqrt", "cbrt", "sine", "cosine", "tan", "tanh", "erf", "floor",
    "ceil", "round_nearest_afz", "round_nearest_even", "is_finite", "not_", "popcnt",
    "count_leading_zeros", "real", "imag",
    "add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
    "atan2", "and_", "or_", "xor", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "complex", "compare", "select", "clamp",
]

_B, _SI, _UI, _F, _C = "bool", "si", "ui", "float", "complex"
_INT = (_SI, _UI)
_FC = (_F, _C)
_NUM = (_SI, _UI, _F, _C)
_ANY = (_B, _SI, _UI, _F, _C)
_PY = (bool, int, float, complex)


def _is_weak(x):
    """A Python scalar (weak type). NumPy scalars are not weak even where they subclass
    Python's (np.float64 is a float): like 0-d arrays they keep their own type and shape."""
    return isinstance(x, _PY) and not isinstance(x, np.generic)


def _quiet():
    """The spec defines NaN/inf results: no floating-point warnings."""
    return np.errstate(all="ignore")


# ---------------------------------------------------------------------------------------
# Shared machinery
# ---------------------------------------------------------------------------------------

def _unary(op, operand, kinds):
    (x,) = operands(op, operand, names=["operand"])
    if x._dtype.kind not in kinds:
        raise SpecError(op, "I1", f"operand must be a tensor of {kinds_str(kinds)} type, "
                                  f"got {tstr(x)}")
    return x


def _binary(op, lhs, rhs, kinds, shape_label="C1"):
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    if x._dtype is not y._dtype:
        raise SpecError(op, "C1", f"lhs and rhs must have the same element type, got "
                                  f"{tstr(x)} and {tstr(y)} (convert one with xo.convert)")
    if x._value.shape != y._value.shape and not (
            (_is_weak(lhs) and x.ndim == 0) or (_is_weak(rhs) and y.ndim == 0)):
        raise SpecError(op, shape_label, f"lhs and rhs must have the same shape, got {tstr(x)} "
                                         f"and {tstr(y)} (broadcast with xo.broadcast_in_dim, or "
                                         f"use the Python operators, which broadcast like NumPy)")
    if x._dtype.kind not in kinds:
        raise SpecError(op, "I1", f"lhs and rhs must be tensors of {kinds_str(kinds)} type, "
                                  f"got {tstr(x)}")
    return x, y


def _flat_pair(x, y, wide):
    """Both operands broadcast, flattened and widened to ``wide`` for a kernel."""
    a, b = np.broadcast_arrays(compute(x), compute(y))
    return (np.ascontiguousarray(a.reshape(-1), dtype=wide),
            np.ascontiguousarray(b.reshape(-1), dtype=wide), a.shape)


def _int_kernel(kern_signed, kern_unsigned, x, y):
    """Run an integer binary kernel in int64 (uint64 for ui64) and wrap to x's type."""
    dt = x._dtype
    wide = np.uint64 if dt.kind == _UI and dt.bits == 64 else np.int64
    a, b, shape = _flat_pair(x, y, wide)
    out = np.empty_like(a)
    (kern_unsigned if wide is np.uint64 else kern_signed)(out.size, a, b, out)
    return result(out.reshape(shape), dt)


def _shift_kernel(kern, x, y):
    dt = x._dtype
    wide = np.uint64 if dt.kind == _UI and dt.bits == 64 else np.int64
    a, b, shape = _flat_pair(x, y, wide)
    out = np.empty_like(a)
    kern(out.size, a, b, out, dt.bits)
    return result(out.reshape(shape), dt)


def _float_kernel2(kern, x, y):
    a, b = np.broadcast_arrays(compute(x), compute(y))
    a = np.ascontiguousarray(a).reshape(-1)
    b = np.ascontiguousarray(b).reshape(-1)
    out = np.empty_like(a)
    kern(out.size, a, b, out)
    return result(out.reshape(np.broadcast_shapes(x.shape, y.shape)), x._dtype)


def _fast2(ufunc, x, y):
    """Hot path for types NumPy computes in directly: no conversion. Quiet (IEEE
    overflow/invalid are defined results) and always an ndarray (a ufunc on 0-d
    arrays returns a NumPy scalar)."""
    with _quiet():
        return _wrap(np.asarray(ufunc(x._value, y._value)), x._dtype)


def _make_complex(re, im, dtype):
    """re + i*im built part by part: the expression ``re + 1j * im`` turns an infinite
    ``im`` into a NaN real part (0 * inf)."""
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype)
    out.real = re
    out.imag = im
    return out


def _same(x, fn):
    """Apply a NumPy function in x's compute domain; result has x's element type.
    complex64 is evaluated in complex128 and rounded once: NumPy's complex64 functions
    lose thousands of ULPs where a part cancels (log1p near |1 + z| = 1, expm1, rsqrt,
    logistic), and the StableHLO reference interpreter computes complex ops in double."""
    with _quiet():
        a = compute(x)
        if a.dtype == np.complex64:
            a = a.astype(np.complex128)
        if a.size >= K.THREADED_THRESHOLD:  # exp, tanh, ... in blocks on every core
            return result(K.threaded_unary(fn, a), x._dtype)
        return result(fn(a), x._dtype)


def _complex64_in_double(fn):
    """A binary NumPy function that evaluates complex64 operands in complex128 (the
    caller rounds once to complex64): complex64 division and pow lose hundreds of ULP
    where a part cancels; the StableHLO reference interpreter computes both in double."""
    def wide(a, b):
        if a.dtype == np.complex64:
            return fn(a.astype(np.complex128), b.astype(np.complex128))
        return fn(a, b)
    wide.__name__ = getattr(fn, "__name__", "wide")
    return wide


def _same2(x, y, fn):
    a, b = compute(x), compute(y)
    if x._dtype.name == "f8E8M0FNU":
        # E8M0 spans float32's whole exponent range and has no zero: a product or
        # quotient below float32's subnormals would become 0 in float32 and then NaN,
        # where rounding the exact result once gives the smallest value, 2^-127
        a, b = a.astype(np.float64), b.astype(np.float64)
    with _quiet():
        return result(fn(a, b), x._dtype)


def _part_dtype(dt):
    """f32 for c64, f64 for c128; real types are their own part type."""
    if dt.kind == _C:
        return as_dtype("f32" if dt.np == np.complex64 else "f64")
    return dt


# ---------------------------------------------------------------------------------------
# Gradient-rule helpers. Rules are written with xops ops only, so that under
# create_graph / nested xo.grad they are recorded too (second and higher order).
# ---------------------------------------------------------------------------------------

def _needs(a):
    """Whether argument ``a`` gets a cotangent (the engine drops all others)."""
    return isinstance(a, Tensor) and a.requires_grad


def _zeros(t):
    """Zeros of t's element type and shape: a stride-0 broadcast of one constant."""
    from .movement import broadcast_in_dim, constant
    return broadcast_in_dim(constant(0, t._dtype), [], t.shape)


def _like(a, ref):
    """Operand ``a`` of a recorded binary op as a Tensor of ``ref``'s shape. A weak Python
    scalar becomes a constant of ref's element type broadcast to its shape, so that a
    rule's own ops never meet two Python scalars; tensors come back as they are (their
    graph is kept)."""
    if isinstance(a, Tensor):
        return a
    from .movement import broadcast_in_dim
    t = as_tensor(a, ref._dtype)
    return t if t.shape == ref.shape else broadcast_in_dim(t, [], ref.shape)


def _broadcast_to(t, ref):
    """0-d ``t`` broadcast to ref's shape (clamp's min and max); others as they are."""
    if t.shape == ref.shape:
        return t
    from .movement import broadcast_in_dim
    return broadcast_in_dim(t, [], ref.shape)


def _sum_to(g, ref):
    """``g`` summed to 0-d where ``ref`` (the operand it is the cotangent of) is 0-d."""
    if ref.ndim == 0 and g.ndim > 0:
        from .movement import constant
        from .reduction import reduce
        return reduce(g, constant(0, g._dtype), list(range(g.ndim)), add)
    return g


def _minmax_vjp(g, out, lhs, rhs):
    """maximum/minimum: g goes to the operand equal to the result; where both are
    (a tie, -0 vs +0 included) each gets g/2, as jax.lax.max/min do. A NaN result
    (either operand NaN) sends nothing back."""
    x, y = _like(lhs, out), _like(rhs, out)
    at_x, at_y = compare(x, out, "EQ"), compare(y, out, "EQ")
    z, half = _zeros(g), multiply(g, 0.5)
    return (select(at_x, select(at_y, half, g), z) if _needs(lhs) else None,
            select(at_y, select(at_x, half, g), z) if _needs(rhs) else None)


# ---------------------------------------------------------------------------------------
# Unary ops
# ---------------------------------------------------------------------------------------

@primitive("abs")
def abs(operand):
    """stablehlo.abs: |x|. Signed integers wrap (abs(INT_MIN) = INT_MIN); complex
    operands give their real part type (C2).

    >>> xo.abs(xo.tensor([-2, 0, 2], "i32"))   # [2, 0, 2]
    """
    x = _unary("abs", operand, (_SI, _F, _C))
    with _quiet():
        return result(np.abs(compute(x)), _part_dtype(x._dtype))


@abs.defvjp
def _abs_vjp(g, out, operand):
    # real: g where x >= 0 (so +g at +-0, as jax.lax.abs), -g below; complex (JAX):
    # complex(g) * conj(x) / |x|, and 0 at x = 0
    if operand._dtype.kind == _C:
        r = select(compare(out, 0.0, "EQ"), 1.0, out)  # |x|, with 1 where x = 0
        return complex(divide(multiply(g, real(operand)), r),
                       negate(divide(multiply(g, imag(operand)), r)))
    return select(compare(operand, 0.0, "GE"), g, negate(g))


@primitive("negate")
def negate(operand):
    """stablehlo.negate: -x. Integers wrap (unsigned: 2^N - x); -(+0.0) = -0.0.

    >>> xo.negate(xo.tensor([0, -2], "i32"))   # [0, 2]
    """
    x = _unary("negate", operand, _NUM)
    return _same(x, np.negative)


@negate.defvjp
def _negate_vjp(g, out, operand):
    return (negate(g),)


def _sign_impl(v):
    if v.dtype.kind == "c":
        nan = np.isnan(v.real) | np.isnan(v.imag)
        s = np.where(v == 0, v, v / np.abs(v))
        return np.where(nan, np.array(builtins.complex(np.nan, np.nan), v.dtype), s)
    if v.dtype.kind == "f":
        return np.where(v == 0, v, np.sign(v))  # keeps -0.0; NaN -> NaN
    return np.sign(v)


@primitive("sign")
def sign(operand):
    """stablehlo.sign: -1/0/+1 for integers; for floats NaN -> NaN, -0.0 -> -0.0,
    +0.0 -> +0.0; for complex x/|x| (NaN parts give (NaN, NaN), 0 gives 0).

    >>> xo.sign(xo.tensor([-1.5, -0.0, 2.0]))   # [-1, -0, 1]
    """
    x = _unary("sign", operand, (_SI, _F, _C))
    return _same(x, _sign_impl)


@sign.defvjp
def _sign_vjp(g, out, operand):
    return _zeros(g)  # piecewise constant: zero almost everywhere


@primitive("exponential")
def exponential(operand):
    """stablehlo.exponential: e^x (float or complex).

    >>> xo.exponential(xo.tensor([0.0, 1.0]))   # [1, 2.7182817]
    """
    return _same(_unary("exponential", operand, _FC), np.exp)


@exponential.defvjp
def _exponential_vjp(g, out, operand):
    return (multiply(g, out),)


def _complex_expm1(z):
    # e^z - 1 = (e^x - 1) cos y - 2 sin^2(y/2) + i e^x sin y: no cancellation near 0
    x, y = z.real, z.imag
    re = np.expm1(x) * np.cos(y) - 2.0 * np.sin(y / 2) ** 2
    im = np.where(y == 0, y, np.exp(x) * np.sin(y))  # expm1(inf + 0i) = inf + 0i
    return _make_complex(re, im, z.dtype)


@primitive("exponential_minus_one")
def exponential_minus_one(operand):
    """stablehlo.exponential_minus_one: e^x - 1, accurate near 0 (complex too).

    >>> xo.exponential_minus_one(xo.tensor([0.0, 1e-10], "f64"))   # [0, 1e-10]
    """
    x = _unary("exponential_minus_one", operand, _FC)
    return _same(x, _complex_expm1 if x._dtype.kind == _C else np.expm1)


@exponential_minus_one.defvjp
def _exponential_minus_one_vjp(g, out, operand):
    return multiply(g, add(out, 1.0))


@primitive("log")
def log(operand):
    """stablehlo.log: natural logarithm; log(0) = -inf, log(x<0) = NaN.

    >>> xo.log(xo.tensor([1.0, 2.0]))   # [0, 0.6931472]
    """
    return _same(_unary("log", operand, _FC), np.log)


@log.defvjp
def _log_vjp(g, out, operand):
    return divide(g, operand)


def _complex_log1p(z):
    # log|1+z| = log1p(x(2+x) + y^2)/2 is accurate for small z but overflows for large
    # |z| (x*x > max), where log(hypot(1+x, y)) has no cancellation to fear
    x, y = z.real, z.imag
    small = (np.abs(x) < 0.5) & (np.abs(y) < 0.5)
    re = np.where(small, 0.5 * np.log1p(x * (2.0 + x) + y * y), np.log(np.hypot(1.0 + x, y)))
    return _make_complex(re, np.arctan2(y, 1.0 + x), z.dtype)


@primitive("log_plus_one")
def log_plus_one(operand):
    """stablehlo.log_plus_one: log(1 + x), accurate near 0 (complex too).

    >>> xo.log_plus_one(xo.tensor([0.0, -1.0]))   # [0, -inf]
    """
    x = _unary("log_plus_one", operand, _FC)
    return _same(x, _complex_log1p if x._dtype.kind == _C else np.log1p)


@log_plus_one.defvjp
def _log_plus_one_vjp(g, out, operand):
    return divide(g, add(operand, 1.0))


def _logistic_impl(v):
    if v.dtype.kind == "c":
        # e^z / (1 + e^z) where Re z < 0: 1 / (1 + e^-z) would divide by inf - inf*i (NaN)
        e = np.exp(np.where(v.real < 0, v, -v))
        return np.where(v.real < 0, e / (1 + e), 1 / (1 + e)).astype(v.dtype)
    e = np.exp(-np.abs(v))  # never overflows
    return np.where(v >= 0, 1 / (1 + e), e / (1 + e)).astype(v.dtype)


@primitive("logistic")
def logistic(operand):
    """stablehlo.logistic: 1 / (1 + e^-x), overflow-safe for large |x|.

    >>> xo.logistic(xo.tensor([0.0, 100.0]))   # [0.5, 1]
    """
    return _same(_unary("logistic", operand, _FC), _logistic_impl)


@logistic.defvjp
def _logistic_vjp(g, out, operand):
    return multiply(g, multiply(out, subtract(1.0, out)))


@primitive("sqrt")
def sqrt(operand):
    """stablehlo.sqrt: sqrt(-0.0) = -0.0, sqrt(x<0) = NaN, complex principal branch.

    >>> xo.sqrt(xo.tensor([4.0, -0.0]))   # [2, -0]
    """
    return _same(_unary("sqrt", operand, _FC), np.sqrt)


@sqrt.defvjp
def _sqrt_vjp(g, out, operand):
    return multiply(g, divide(0.5, out))


@primitive("rsqrt")
def rsqrt(operand):
    """stablehlo.rsqrt: 1/sqrt(x); rsqrt(+0) = +inf, rsqrt(-0) = -inf.

    >>> xo.rsqrt(xo.tensor([4.0, 0.0]))   # [0.5, inf]
    """
    return _same(_unary("rsqrt", operand, _FC), lambda v: 1 / np.sqrt(v))


@rsqrt.defvjp
def _rsqrt_vjp(g, out, operand):
    return multiply(g, multiply(divide(out, operand), -0.5))  # -x^(-3/2) / 2


@primitive("cbrt")
def cbrt(operand):
    """stablehlo.cbrt: cube root; negative reals give negative roots, complex the
    principal root.

    >>> xo.cbrt(xo.tensor([8.0, -27.0]))   # [2, -3]
    """
    x = _unary("cbrt", operand, _FC)
    # reals: the same bits on every CPU, exact on perfect cubes (NumPy's SIMD and
    # scalar cbrt loops differ in the last bit; see xops.ops._portable)
    return _same(x, (lambda v: np.power(v, 1 / 3)) if x._dtype.kind == _C else _portable.cbrt)


@cbrt.defvjp
def _cbrt_vjp(g, out, operand):
    return multiply(g, divide(1 / 3, multiply(out, out)))  # x^(-2/3) / 3


@primitive("sine")
def sine(operand):
    """stablehlo.sine.

    >>> xo.sine(xo.tensor([0.0]))   # [0]
    """
    return _same(_unary("sine", operand, _FC), np.sin)


@sine.defvjp
def _sine_vjp(g, out, operand):
    return (multiply(g, cosine(operand)),)


@primitive("cosine")
def cosine(operand):
    """stablehlo.cosine.

    >>> xo.cosine(xo.tensor([0.0]))   # [1]
    """
    return _same(_unary("cosine", operand, _FC), np.cos)


@cosine.defvjp
def _cosine_vjp(g, out, operand):
    return (negate(multiply(g, sine(operand))),)


@primitive("tan")
def tan(operand):
    """stablehlo.tan (XLA Tan; in the current spec and conformance suite).

    >>> xo.tan(xo.tensor([0.0]))   # [0]
    """
    return _same(_unary("tan", operand, _FC), np.tan)


@tan.defvjp
def _tan_vjp(g, out, operand):
    return multiply(g, add(1.0, multiply(out, out)))


@primitive("tanh")
def tanh(operand):
    """stablehlo.tanh.

    >>> xo.tanh(xo.tensor([0.0, 100.0]))   # [0, 1]
    """
    return _same(_unary("tanh", operand, _FC), np.tanh)


@tanh.defvjp
def _tanh_vjp(g, out, operand):
    # (1 + t)(1 - t) rather than 1 - t^2: no cancellation near |t| = 1
    return multiply(multiply(g, add(1.0, out)), subtract(1.0, out))


@primitive("erf")
def erf(operand):
    """XLA Erf: the error function (real floating-point types), from SciPy's erf.

    >>> xo.erf(xo.tensor([0.0, 10.0]))   # [0, 1]
    """
    from scipy.special import erf as _erf  # imported on first use: keeps `import xops` fast
    return _same(_unary("erf", operand, (_F,)), _erf)


_TWO_OVER_SQRT_PI = 1.1283791670955126


@erf.defvjp
def _erf_vjp(g, out, operand):
    return multiply(g, multiply(exponential(negate(multiply(operand, operand))),
                                _TWO_OVER_SQRT_PI))


@primitive("floor")
def floor(operand):
    """stablehlo.floor: keeps the sign of zero (floor(-0.0) = -0.0).

    >>> xo.floor(xo.tensor([-0.8, 2.5]))   # [-1, 2]
    """
    return _same(_unary("floor", operand, (_F,)), np.floor)


@floor.defvjp
def _floor_vjp(g, out, operand):
    return _zeros(g)


@primitive("ceil")
def ceil(operand):
    """stablehlo.ceil: ceil(-0.25) = -0.0.

    >>> xo.ceil(xo.tensor([-0.8, 0.2]))   # [-0, 1]
    """
    return _same(_unary("ceil", operand, (_F,)), np.ceil)


@ceil.defvjp
def _ceil_vjp(g, out, operand):
    return _zeros(g)


@primitive("round_nearest_afz")
def round_nearest_afz(operand):
    """stablehlo.round_nearest_afz: round half away from zero (-2.5 -> -3, 0.5 -> 1).

    >>> xo.round_nearest_afz(xo.tensor([-2.5, 0.4, 0.5, 0.6, 2.5]))   # [-3, 0, 1, 1, 3]
    """
    x = _unary("round_nearest_afz", operand, (_F,))
    a = np.ascontiguousarray(compute(x)).reshape(-1)
    out = np.empty_like(a)
    K.round_nearest_afz(out.size, a, out)
    return result(out.reshape(x.shape), x._dtype)


@round_nearest_afz.defvjp
def _round_nearest_afz_vjp(g, out, operand):
    return _zeros(g)


@primitive("round_nearest_even")
def round_nearest_even(operand):
    """stablehlo.round_nearest_even: ties to even (2.5 -> 2, -2.5 -> -2).

    >>> xo.round_nearest_even(xo.tensor([-2.5, 0.4, 0.5, 0.6, 2.5]))   # [-2, 0, 0, 1, 2]
    """
    return _same(_unary("round_nearest_even", operand, (_F,)), np.rint)


@round_nearest_even.defvjp
def _round_nearest_even_vjp(g, out, operand):
    return _zeros(g)


@primitive("is_finite")
def is_finite(operand):
    """stablehlo.is_finite: true where x is neither inf nor NaN (i1 result).

    >>> xo.is_finite(xo.tensor([1.0, float("inf"), float("nan")]))   # [True, False, False]
    """
    x = _unary("is_finite", operand, (_F,))
    return result(np.isfinite(compute(x)), as_dtype("i1"))


@primitive("not")
def not_(operand):
    """stablehlo.not: logical NOT for i1, bitwise NOT for integers.

    >>> xo.not_(xo.tensor([True, False]))   # [False, True]
    """
    x = _unary("not", operand, (_B, _SI, _UI))
    return _same(x, np.logical_not if x._dtype.kind == _B else np.invert)


def _bits_u64(x):
    """x's two's-complement bit patterns within its own width, as uint64."""
    v = compute(x).astype(np.int64 if x._dtype.kind == _SI else np.uint64).view(np.uint64)
    if x._dtype.bits < 64:
        v = v & np.uint64((1 << x._dtype.bits) - 1)
    return v


@primitive("popcnt")
def popcnt(operand):
    """stablehlo.popcnt: number of set bits within the type's width (i64 -1 -> 64).

    >>> xo.popcnt(xo.tensor([0, 1, 2, 127], "i64"))   # [0, 1, 1, 7]
    """
    x = _unary("popcnt", operand, _INT)
    return result(np.bitwise_count(_bits_u64(x)), x._dtype)


@primitive("count_leading_zeros")
def count_leading_zeros(operand):
    """stablehlo.count_leading_zeros: clz(0) = bit width; counts within the type's width.

    >>> xo.count_leading_zeros(xo.tensor([0, 1, -1], "i64"))   # [64, 63, 0]
    """
    x = _unary("count_leading_zeros", operand, _INT)
    a = np.ascontiguousarray(_bits_u64(x).reshape(-1))
    out = np.empty_like(a)
    K.count_leading_zeros(out.size, a, out, x._dtype.bits)
    return result(out.reshape(x.shape), x._dtype)


@primitive("real")
def real(operand):
    """stablehlo.real: the real part (a float operand is returned as is).

    >>> xo.real(xo.tensor([1 + 2j]))   # [1] (f32)
    """
    x = _unary("real", operand, _FC)
    if x._dtype.kind == _F:
        return x
    return result(compute(x).real, _part_dtype(x._dtype))


@real.defvjp
def _real_vjp(g, out, operand):
    if operand._dtype.kind == _C:
        return complex(g, _zeros(g))  # JAX: the cotangent becomes the real part
    return g


@primitive("imag")
def imag(operand):
    """stablehlo.imag: the imaginary part (a float operand gives zeros of its type).

    >>> xo.imag(xo.tensor([1 + 2j]))   # [2] (f32)
    """
    x = _unary("imag", operand, _FC)
    if x._dtype.kind == _F:
        return result(np.zeros(x.shape, x._dtype.compute), x._dtype)
    return result(compute(x).imag, _part_dtype(x._dtype))


@imag.defvjp
def _imag_vjp(g, out, operand):
    if operand._dtype.kind == _C:
        return complex(_zeros(g), negate(g))  # JAX: complex(0, -g)
    return _zeros(g)  # imag of a real tensor is a constant zero


# ---------------------------------------------------------------------------------------
# Binary ops
# ---------------------------------------------------------------------------------------

@primitive("add")
def add(lhs, rhs):
    """stablehlo.add: integers wrap; i1 add is logical OR.

    >>> xo.add(xo.tensor([1, 2]), xo.tensor([5, 6]))   # [6, 8]
    """
    x, y = _binary("add", lhs, rhs, _ANY)
    if x._dtype.kind == _B:
        return _same2(x, y, np.logical_or)
    if not x._dtype.is_narrow:  # hot path: no conversion at all
        return _fast2(np.add, x, y)
    return _same2(x, y, np.add)


@add.defvjp
def _add_vjp(g, out, lhs, rhs):
    return g, g


@primitive("subtract")
def subtract(lhs, rhs):
    """stablehlo.subtract: integers wrap; no i1.

    >>> xo.subtract(xo.tensor([6, 8]), xo.tensor([5, 6]))   # [1, 2]
    """
    x, y = _binary("subtract", lhs, rhs, _NUM)
    if not x._dtype.is_narrow:
        return _fast2(np.subtract, x, y)
    return _same2(x, y, np.subtract)


@subtract.defvjp
def _subtract_vjp(g, out, lhs, rhs):
    return g, negate(g)


@primitive("multiply")
def multiply(lhs, rhs):
    """stablehlo.multiply: integers wrap; i1 multiply is logical AND.

    >>> xo.multiply(xo.tensor([1, 2]), xo.tensor([5, 6]))   # [5, 12]
    """
    x, y = _binary("multiply", lhs, rhs, _ANY)
    if x._dtype.kind == _B:
        return _same2(x, y, np.logical_and)
    if not x._dtype.is_narrow:
        return _fast2(np.multiply, x, y)
    return _same2(x, y, np.multiply)


@multiply.defvjp
def _multiply_vjp(g, out, lhs, rhs):
    return (multiply(g, rhs) if _needs(lhs) else None,
            multiply(g, lhs) if _needs(rhs) else None)


@primitive("divide")
def divide(lhs, rhs):
    """stablehlo.divide: integers truncate toward zero; x/0 = -1 (all ones) and
    INT_MIN/-1 = INT_MIN, as XLA on CPU (the spec leaves both implementation-defined);
    floats follow IEEE 754.

    >>> xo.divide(xo.tensor([17, -10, 8, -8], "i32"), xo.tensor([3, 3, -3, -3], "i32"))
    ... # [5, -3, -2, 2]
    """
    x, y = _binary("divide", lhs, rhs, _NUM)
    if x._dtype.kind in _INT:
        return _int_kernel(K.int_divide, K.uint_divide, x, y)
    return _same2(x, y, _complex64_in_double(np.divide))


@divide.defvjp
def _divide_vjp(g, out, lhs, rhs):
    gx = divide(g, _like(rhs, out))
    gy = negate(multiply(gx, out)) if _needs(rhs) else None  # -g x / y^2
    return gx if _needs(lhs) else None, gy


@primitive("remainder")
def remainder(lhs, rhs):
    """stablehlo.remainder: the sign follows the dividend (C fmod, not Python's %);
    integers: x % 0 = x and INT_MIN % -1 = 0 (XLA on CPU). Complex remainder is left
    undefined by the spec (openxla/stablehlo#997) and is an error.

    >>> xo.remainder(xo.tensor([17, -17, 17, -17]), xo.tensor([3, 3, -3, -3]))   # [2, -2, 2, -2]
    """
    x, y = _binary("remainder", lhs, rhs, _NUM)
    check(x._dtype.kind != _C, "remainder", "I1",
          lambda: f"complex remainder is not defined by the spec yet (openxla/stablehlo#997), "
                  f"got {tstr(x)}")
    if x._dtype.kind in _INT:
        return _int_kernel(K.int_remainder, K.uint_remainder, x, y)
    return _same2(x, y, np.fmod)


@remainder.defvjp
def _remainder_vjp(g, out, lhs, rhs):
    # fmod(x, y) = x - y * trunc(x / y): (g, -g trunc(x / y)) away from the jumps at
    # multiples of y (jax.lax.rem); trunc(q) = sign(q) floor(|q|)
    gy = None
    if _needs(rhs):
        q = divide(_like(lhs, out), _like(rhs, out))
        gy = negate(multiply(g, multiply(sign(q), floor(abs(q)))))
    return g if _needs(lhs) else None, gy


@primitive("power")
def power(lhs, rhs):
    """stablehlo.power: integers use square-and-multiply with wraparound, and a
    negative exponent gives 0 unless |lhs| = 1; floats follow IEEE pow (pow(x, 0) = 1).

    >>> xo.power(xo.tensor([-2, 0, 5], "i64"), xo.tensor([3, 0, -1], "i64"))   # [-8, 1, 0]
    """
    x, y = _binary("power", lhs, rhs, _NUM)
    if x._dtype.kind in _INT:
        def signed_pow(n, a, b, out):
            K.int_power(n, a, b, out, True)

        def unsigned_pow(n, a, b, out):
            K.int_power(n, a, b, out, False)
        return _int_kernel(signed_pow if x._dtype.kind == _SI else unsigned_pow,
                           unsigned_pow, x, y)
    return _same2(x, y, _complex64_in_double(np.power))


@power.defvjp
def _power_vjp(g, out, lhs, rhs):
    x, y = _like(lhs, out), _like(rhs, out)
    gx = gy = None
    if _needs(lhs):
        gx = multiply(g, multiply(y, power(x, subtract(y, 1.0))))
    if _needs(rhs):
        # g log(x) x^y, with log(x) read as 0 where x = 0 (jax.lax.pow): 0^y is flat in y
        # for y > 0, and this keeps a 0 * -inf NaN out of every gradient of 0^y
        safe = select(compare(x, 0.0, "EQ"), 1.0, x)
        gy = multiply(g, multiply(log(safe), out))
    return gx, gy


@primitive("maximum")
def maximum(lhs, rhs):
    """stablehlo.maximum: IEEE 754-2019 maximum for floats (NaN if either is NaN,
    +0 > -0); i1 is OR; complex compares (real, imag) lexicographically.

    >>> xo.maximum(xo.tensor([1.0, -0.0]), xo.tensor([3.0, 0.0]))   # [3, 0]
    """
    x, y = _binary("maximum", lhs, rhs, _ANY)
    k = x._dtype.kind
    if k == _F:
        return _float_kernel2(K.float_maximum, x, y)
    return _same2(x, y, np.logical_or if k == _B else np.maximum)


@maximum.defvjp
def _maximum_vjp(g, out, lhs, rhs):
    return _minmax_vjp(g, out, lhs, rhs)


@primitive("minimum")
def minimum(lhs, rhs):
    """stablehlo.minimum: IEEE 754-2019 minimum for floats (NaN if either is NaN,
    -0 < +0); i1 is AND; complex compares (real, imag) lexicographically.

    >>> xo.minimum(xo.tensor([1.0, -0.0]), xo.tensor([3.0, 0.0]))   # [1, -0]
    """
    x, y = _binary("minimum", lhs, rhs, _ANY)
    k = x._dtype.kind
    if k == _F:
        return _float_kernel2(K.float_minimum, x, y)
    return _same2(x, y, np.logical_and if k == _B else np.minimum)


@minimum.defvjp
def _minimum_vjp(g, out, lhs, rhs):
    return _minmax_vjp(g, out, lhs, rhs)


def _complex_atan2(y, x):
    # atan2(y, x) = -i * log((x + i*y) / sqrt(x^2 + y^2)), as the reference interpreter,
    # evaluated one complex precision up: x + i*y cancels and the log's argument is
    # near 1 whenever the result is small (c64 lost up to 3 digits)
    wide = np.clongdouble if x.dtype == np.complex128 else np.complex128
    yw, xw = y.astype(wide), x.astype(wide)
    return (-1j * np.log((xw + 1j * yw) / np.sqrt(xw * xw + yw * yw))).astype(x.dtype)


@primitive("atan2")
def atan2(lhs, rhs):
    """stablehlo.atan2: atan2(lhs = y, rhs = x); atan2(+-0, -0) = +-pi.

    >>> xo.atan2(xo.tensor([0.0, 1.0]), xo.tensor([-1.0, 0.0]))   # [3.1415927, 1.5707964]
    """
    x, y = _binary("atan2", lhs, rhs, _FC)
    return _same2(x, y, _complex_atan2 if x._dtype.kind == _C else np.arctan2)


@atan2.defvjp
def _atan2_vjp(g, out, lhs, rhs):
    # atan2(y = lhs, x = rhs): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
    y, x = _like(lhs, out), _like(rhs, out)
    g_r2 = divide(g, add(multiply(x, x), multiply(y, y)))
    return (multiply(g_r2, x) if _needs(lhs) else None,
            negate(multiply(g_r2, y)) if _needs(rhs) else None)


@primitive("and")
def and_(lhs, rhs):
    """stablehlo.and: logical for i1, bitwise for integers.

    >>> xo.and_(xo.tensor([1, 2]), xo.tensor([3, 4]))   # [1, 0]
    """
    x, y = _binary("and", lhs, rhs, (_B, _SI, _UI))
    return _same2(x, y, np.bitwise_and)


@primitive("or")
def or_(lhs, rhs):
    """stablehlo.or: logical for i1, bitwise for integers.

    >>> xo.or_(xo.tensor([1, 2]), xo.tensor([3, 4]))   # [3, 6]
    """
    x, y = _binary("or", lhs, rhs, (_B, _SI, _UI))
    return _same2(x, y, np.bitwise_or)


@primitive("xor")
def xor(lhs, rhs):
    """stablehlo.xor: logical for i1, bitwise for integers.

    >>> xo.xor(xo.tensor([1, 2]), xo.tensor([3, 4]))   # [2, 6]
    """
    x, y = _binary("xor", lhs, rhs, (_B, _SI, _UI))
    return _same2(x, y, np.bitwise_xor)


@primitive("shift_left")
def shift_left(lhs, rhs):
    """stablehlo.shift_left: rhs is read as unsigned; amounts >= the bit width give 0.

    >>> xo.shift_left(xo.tensor([-1, 0, 1]), xo.tensor([1, 2, 3]))   # [-2, 0, 8]
    """
    x, y = _binary("shift_left", lhs, rhs, _INT)
    return _shift_kernel(K.shift_left, x, y)


@primitive("shift_right_arithmetic")
def shift_right_arithmetic(lhs, rhs):
    """stablehlo.shift_right_arithmetic: fills with the sign bit; amounts >= the bit
    width give all sign bits (0 or -1).

    >>> xo.shift_right_arithmetic(xo.tensor([-1, 0, 8]), xo.tensor([1, 2, 3]))   # [-1, 0, 1]
    """
    x, y = _binary("shift_right_arithmetic", lhs, rhs, _INT)
    return _shift_kernel(K.shift_right_arithmetic, x, y)


@primitive("shift_right_logical")
def shift_right_logical(lhs, rhs):
    """stablehlo.shift_right_logical: fills with zeros (signed values shift their bit
    pattern: i64 -1 >> 1 = 2^63 - 1); amounts >= the bit width give 0.

    >>> xo.shift_right_logical(xo.tensor([-1, 0, 8]), xo.tensor([1, 2, 3]))
    ... # [9223372036854775807, 0, 1]
    """
    x, y = _binary("shift_right_logical", lhs, rhs, _INT)
    return _shift_kernel(K.shift_right_logical, x, y)


@primitive("complex")
def complex(lhs, rhs):
    """stablehlo.complex: a complex value from real (lhs) and imaginary (rhs) parts;
    f32 parts give c64, f64 parts give c128.

    >>> xo.complex(xo.tensor([1.0, 3.0]), xo.tensor([2.0, 4.0]))   # [1+2j, 3+4j]
    """
    x, y = _binary("complex", lhs, rhs, (_F,))
    if x._dtype.name not in ("f32", "f64"):
        raise SpecError("complex", "I1", f"lhs must be a tensor of f32 or f64, got {tstr(x)}")
    a, b = np.broadcast_arrays(x._value, y._value)
    out = np.empty(a.shape, np.complex64 if x._dtype.name == "f32" else np.complex128)
    out.real = a
    out.imag = b
    return result(out, as_dtype("c64" if x._dtype.name == "f32" else "c128"))


@complex.defvjp
def _complex_vjp(g, out, lhs, rhs):
    # JAX: the real part's cotangent is real(g), the imaginary part's -imag(g)
    return (real(g) if _needs(lhs) else None,
            negate(imag(g)) if _needs(rhs) else None)


# ---------------------------------------------------------------------------------------
# compare, select, clamp
# ---------------------------------------------------------------------------------------

_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
               "GT": np.greater, "LE": np.less_equal, "LT": np.less}


def _default_compare_type(dt):
    return {_SI: "SIGNED", _UI: "UNSIGNED", _B: "UNSIGNED", _F: "FLOAT", _C: "FLOAT"}[dt.kind]


def _total_order_key(x):
    """An int64 key whose order is the IEEE totalOrder of x's float values:
    -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (bit patterns, not values)."""
    dt = x._dtype
    u = x._value.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize])
    u = u.astype(np.uint64)
    if dt.name == "f8E8M0FNU":  # no sign bit: the pattern order is the value order
        return u.astype(np.int64)
    sign = (u >> np.uint64(dt.bits - 1)) & np.uint64(1)
    mag = (u & np.uint64((1 << (dt.bits - 1)) - 1)).astype(np.int64)
    return np.where(sign.astype(bool), -mag - 1, mag)


@primitive("compare")
def compare(lhs, rhs, comparison_direction, compare_type=None):
    """stablehlo.compare: elementwise lhs <direction> rhs, an i1 tensor.

    ``comparison_direction`` is one of EQ, NE, GE, GT, LE, LT. ``compare_type`` (C3) is
    SIGNED for signed integers, UNSIGNED for unsigned integers and i1, FLOAT or
    TOTALORDER for floats, FLOAT for complex; None picks it from the element type.
    FLOAT is IEEE (NaN unordered, -0 == +0); TOTALORDER orders
    -NaN < -inf < -finite < -0 < +0 < +finite < +inf < +NaN by bit pattern (as XLA:
    equal NaNs are equal, -0 != +0; the FNUZ formats' one NaN, 0x80, sorts just below
    +0). Complex GE/GT/LE/LT compare (real, imag) lexicographically. lhs and rhs share
    an element type (C1) and a shape (C2).

    >>> xo.compare(xo.tensor([1.0, 2.0]), xo.tensor([1.0, 1.0]), "GE")   # [True, True]
    """
    x, y = _binary("compare", lhs, rhs, _ANY, shape_label="C2")
    direction = str(comparison_direction).upper()
    if direction not in _DIRECTIONS:
        raise SpecError("compare", "I3", f"comparison_direction must be one of "
                                         f"{', '.join(_DIRECTIONS)}, got {comparison_direction!r}")
    dt = x._dtype
    expected = _default_compare_type(dt)
    ctype = expected if compare_type is None else str(compare_type).upper()
    check(ctype in ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"), "compare", "I4",
          lambda: f"compare_type must be one of FLOAT, TOTALORDER, SIGNED, UNSIGNED, "
                  f"got {compare_type!r}")
    allowed = {expected} | ({"TOTALORDER"} if dt.kind == _F else set())
    check(ctype in allowed, "compare", "C3",
          lambda: f"compare_type {ctype} does not fit element type {dt.name} "
                  f"(allowed: {', '.join(sorted(allowed))})")
    fn = _DIRECTIONS[direction]
    if ctype == "TOTALORDER":
        return result(fn(_total_order_key(x), _total_order_key(y)), as_dtype("i1"))
    with _quiet():  # NumPy orders complex numbers lexicographically on (real, imag)
        return result(fn(compute(x), compute(y)), as_dtype("i1"))


# select runs on a Numba kernel (``select_bits``) over the branches' raw bit patterns
# from this many elements on: np.where branches per element (3 ms for 800K random
# predicates, against 0.08 ms); below it np.where's dispatch is the cheaper one.
_SELECT_KERNEL_MIN = 2048
_SELECT_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _is_scalar_branch(v):
    """A broadcast scalar: every stride 0 (a weak scalar, or zeros from broadcast_in_dim)."""
    return v.ndim == 0 or not builtins.any(v.strides)


def _memory_order(arrays):
    """A permutation of the dims in which every array is C-contiguous (all share one
    memory layout, e.g. all transposed alike), or None."""
    perm = np.argsort([-abs(s) for s in arrays[0].strides], kind="stable")
    for a in arrays:
        if not np.transpose(a, perm).flags.c_contiguous:
            return None
    return perm


def _select_flat(v, perm, word):
    """A branch or the predicate in memory order as a read-only 1-D array of ``word``s:
    one element for a broadcast scalar."""
    if _is_scalar_branch(v):
        a = np.array(v[(0,) * v.ndim]).reshape(1)
    elif perm is None:
        a = np.ascontiguousarray(v).reshape(-1)
    else:
        a = np.transpose(v, perm).reshape(-1)  # a view
    a = a.view(word)
    a.flags.writeable = False
    return a


def _select_kernel(p, t, f):
    """select with an i1 array ``p`` of t's shape, through ``K.select_bits``. Operands
    that share a memory layout (a transposed result, and what elementwise ops made of
    it) are read in memory order, and the result gets that layout too: no copies."""
    word = _SELECT_WORDS[t.dtype.itemsize]
    perm = _memory_order([a for a in (p, t, f) if not _is_scalar_branch(a)])
    shape = t.shape if perm is None else tuple(t.shape[d] for d in perm)
    out = np.empty(shape, t.dtype)
    K.select_bits(out.size, _select_flat(p, perm, np.bool_), _select_flat(t, perm, word),
                  _select_flat(f, perm, word), out.reshape(-1).view(word))
    return out if perm is None else np.transpose(out, np.argsort(perm))


@primitive("select")
def select(pred, on_true, on_false):
    """stablehlo.select: on_true where pred else on_false; pred is i1, 0-d or of the
    operands' shape (C1); on_true and on_false have one type (C2). A Python scalar
    branch is weak: it takes the other branch's type and broadcasts.

    >>> xo.select(xo.tensor([True, False]), xo.tensor([1, 2]), xo.tensor([3, 4]))   # [1, 4]
    """
    t, f = operands("select", on_true, on_false, names=["on_true", "on_false"])
    if isinstance(pred, (bool, np.bool_)):
        p = _wrap(np.array(bool(pred)), as_dtype("i1"))
    else:
        (p,) = operands("select", pred, names=["pred"])
    check(p._dtype.kind == _B, "select", "I1", lambda: f"pred must be an i1 tensor, got {tstr(p)}")
    # a Python scalar branch is weak (the other branch's type) and broadcasts like 0-d
    if _is_weak(on_true) and t.ndim == 0:
        t = _wrap(np.broadcast_to(t._value, f.shape), t._dtype)
    elif _is_weak(on_false) and f.ndim == 0:
        f = _wrap(np.broadcast_to(f._value, t.shape), f._dtype)
    check(t._dtype is f._dtype and t.shape == f.shape, "select", "C2",
          lambda: f"on_true and on_false must have the same type, got {tstr(t)} and {tstr(f)}")
    check(p.ndim == 0 or p.shape == t.shape, "select", "C1",
          lambda: f"pred must be 0-d or have the operands' shape {list(t.shape)}, got {tstr(p)}")
    tv, fv = t._value, f._value
    if (p.ndim and tv.size >= _SELECT_KERNEL_MIN and tv.dtype.itemsize in _SELECT_WORDS
            and (builtins.any(tv.strides) or builtins.any(fv.strides))):
        return _wrap(_select_kernel(p._value, tv, fv), t._dtype)
    return _wrap(np.where(p._value, tv, fv), t._dtype)


@select.defvjp
def _select_vjp(g, out, pred, on_true, on_false):
    z = _zeros(g)
    return (None, select(pred, g, z) if _needs(on_true) else None,
            select(pred, z, g) if _needs(on_false) else None)


@primitive("clamp")
def clamp(min, operand, max):
    """stablehlo.clamp: minimum(maximum(operand, min), max) with the spec's maximum and
    minimum (NaN propagates; if min > max the result is max). min and max may be 0-d
    (C1, C2); all three share the element type (C3).

    >>> xo.clamp(xo.tensor([5, 10, 15]), xo.tensor([3, 13, 23]), xo.tensor([10, 15, 20]))
    ... # [5, 13, 20]
    """
    x, lo, hi = operands("clamp", operand, min, max, names=["operand", "min", "max"])
    check(lo.ndim == 0 or lo.shape == x.shape, "clamp", "C1",
          lambda: f"min must be 0-d or have operand's shape, got min {tstr(lo)} for operand {tstr(x)}")
    check(hi.ndim == 0 or hi.shape == x.shape, "clamp", "C2",
          lambda: f"max must be 0-d or have operand's shape, got max {tstr(hi)} for operand {tstr(x)}")
    check(lo._dtype is x._dtype and hi._dtype is x._dtype, "clamp", "C3",
          lambda: f"min, operand and max must have one element type, got {tstr(lo)}, {tstr(x)}, {tstr(hi)}")
    if x._dtype.kind == _F:
        lo_b = _wrap(np.broadcast_to(lo._value, x.shape), x._dtype)
        hi_b = _wrap(np.broadcast_to(hi._value, x.shape), x._dtype)
        return _float_kernel2(K.float_minimum, _float_kernel2(K.float_maximum, x, lo_b), hi_b)
    with _quiet():
        a = compute(x)
        return result(np.minimum(np.maximum(a, compute(lo)), compute(hi)), x._dtype)


@clamp.defvjp
def _clamp_vjp(g, out, min, operand, max):
    # As jax.lax.clamp: operand gets g where min < x < max; min gets g where x < min
    # (and min < max); max gets g where x > max. At x == min or x == max (and wherever
    # min >= max) none of them does: the boundary is a kink and its gradient is taken as
    # 0, as relu'(0) = 0. A 0-d min or max gets its gradient summed to 0-d.
    x, lo, hi = operands("clamp", operand, min, max, names=["operand", "min", "max"])
    lo_x, hi_x = _broadcast_to(lo, x), _broadcast_to(hi, x)
    z = _zeros(g)
    g_lo = g_x = g_hi = None
    if _needs(operand):
        inside = and_(compare(x, lo_x, "GT"), compare(x, hi_x, "LT"))
        g_x = select(inside, g, z)
    if _needs(min):
        below = and_(compare(lo_x, x, "GT"), compare(lo_x, hi_x, "LT"))
        g_lo = _sum_to(select(below, g, z), lo)
    if _needs(max):
        g_hi = _sum_to(select(compare(hi_x, x, "LT"), g, z), hi)
    return g_lo, g_x, g_hi


# The dispatch fast path (xops.ops._core.fast_binary): the calls these bodies answer with
# the plain ufunc (non-narrow types of these kinds, one shape) skip the per-call checks.
# (divide: real floats only; integers run a kernel and complex64 computes in complex128)
for _op, _ufunc, _kinds in ((add, np.add, _NUM), (subtract, np.subtract, _NUM),
                            (multiply, np.multiply, _NUM), (divide, np.divide, (_F,))):
    fast_binary(_op, _ufunc, _kinds)
del _op, _ufunc, _kinds
