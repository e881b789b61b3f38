"""Transcendental elementwise ops and their gradient rules: exponential,
exponential_minus_one, log, log_plus_one, logistic, sqrt, rsqrt, cbrt, sine, cosine, tan,
tanh, erf, power and atan2.

Floats run NumPy's functions in the op's compute domain; complex64 operands are evaluated
in complex128 and rounded once (see ``_base._same``); integer power runs a Numba kernel.
"""

import numpy as np

from ...autodiff.tape import primitive
from ...kernels import elementwise as K
from .. import _portable
from .._core import compute, result
from ._base import (
    _C,
    _F,
    _NARROW_FORMATS,
    _FC,
    _INT,
    _NUM,
    _SI,
    _binary,
    _complex64_in_double,
    _int_kernel,
    _like,
    _make_complex,
    _needs,
    _same,
    _same2,
    _quiet,
    _unary,
)
from .arithmetic import add, compare, divide, multiply, negate, select, subtract

__all__ = [
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "logistic",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sine",
    "cosine",
    "tan",
    "tanh",
    "erf",
    "power",
    "atan2",
]


def _f32_or(name, x, fallback):
    """The float32 function ``name`` of xops.kernels.transcendental on x's values where x
    is a real float type computed in float32 (f32, bf16, f16, the f8 family): the
    result is rounded once more to x's type (as XLA computes narrow types in float32).
    f64 and complex run ``fallback`` (NumPy's function) through ``_same``."""
    if x._dtype.kind != _F or x._dtype.compute != np.float32:
        return _same(x, fallback)
    fmt = _NARROW_FORMATS.get(x._dtype.name)
    if name == "exp" and fmt is not None:  # bf16, f16: one pass on the bit patterns
        a = np.ascontiguousarray(x._value).reshape(-1)
        out = np.empty_like(a)
        K.narrow_exp(a.view(np.uint16), out.view(np.uint16), fmt)
        return result(out.reshape(x.shape), x._dtype)
    with _quiet():
        a = np.ascontiguousarray(compute(x)).reshape(-1)
        out = np.empty_like(a)
        K.unary_f32(name, a, out)
        return result(out.reshape(x.shape), x._dtype)


@primitive("exponential", elementwise=True, quantized="dequantize")
def exponential(operand):
    """stablehlo.exponential: e^x (float or complex).

    >>> xo.exponential(xo.tensor([0.0, 1.0]))   # [1, 2.7182817] (e rounded once to f32)
    xo.tensor([1.       , 2.7182817], f32[2])
    """
    return _f32_or("exp", _unary("exponential", operand, _FC), np.exp)


@exponential.defvjp
def _exponential_vjp(g, out, operand):
    return (multiply(g, out),)


def _complex_expm1(z):
    # e^z - 1 = (e^x - 1) cos y - 2 sin^2(y/2) + i e^x sin y: no cancellation near 0
    x, y = z.real, z.imag
    re = np.expm1(x) * np.cos(y) - 2.0 * np.sin(y / 2) ** 2
    im = np.where(y == 0, y, np.exp(x) * np.sin(y))  # expm1(inf + 0i) = inf + 0i
    return _make_complex(re, im, z.dtype)


@primitive("exponential_minus_one", elementwise=True, quantized="dequantize")
def exponential_minus_one(operand):
    """stablehlo.exponential_minus_one: e^x - 1, accurate near 0 (complex too).

    >>> xo.exponential_minus_one(xo.tensor([0.0, 1e-10], "f64"))   # [0, 1e-10]
    xo.tensor([0.e+00, 1.e-10], f64[2])
    """
    x = _unary("exponential_minus_one", operand, _FC)
    return _f32_or("expm1", x, _complex_expm1 if x._dtype.kind == _C else np.expm1)


@exponential_minus_one.defvjp
def _exponential_minus_one_vjp(g, out, operand):
    return multiply(g, add(out, 1.0))


@primitive("log", elementwise=True, quantized="dequantize")
def log(operand):
    """stablehlo.log: natural logarithm; log(0) = -inf, log(x<0) = NaN.

    >>> xo.log(xo.tensor([1.0, 2.0]))   # [0, 0.6931472]
    xo.tensor([0.       , 0.6931472], f32[2])
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


@primitive("log_plus_one", elementwise=True, quantized="dequantize")
def log_plus_one(operand):
    """stablehlo.log_plus_one: log(1 + x), accurate near 0 (complex too).

    >>> xo.log_plus_one(xo.tensor([0.0, -1.0]))   # [0, -inf]
    xo.tensor([  0., -inf], f32[2])
    """
    x = _unary("log_plus_one", operand, _FC)
    return _f32_or("log1p", x, _complex_log1p if x._dtype.kind == _C else np.log1p)


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


@primitive("logistic", elementwise=True, quantized="dequantize")
def logistic(operand):
    """stablehlo.logistic: 1 / (1 + e^-x), overflow-safe for large |x|.

    >>> xo.logistic(xo.tensor([0.0, 100.0]))   # [0.5, 1]
    xo.tensor([0.5, 1. ], f32[2])
    """
    return _f32_or("logistic", _unary("logistic", operand, _FC), _logistic_impl)


@logistic.defvjp
def _logistic_vjp(g, out, operand):
    return multiply(g, multiply(out, subtract(1.0, out)))


@primitive("sqrt", elementwise=True, quantized="dequantize")
def sqrt(operand):
    """stablehlo.sqrt: sqrt(-0.0) = -0.0, sqrt(x<0) = NaN, complex principal branch.

    >>> xo.sqrt(xo.tensor([4.0, -0.0]))   # [2, -0]
    xo.tensor([ 2., -0.], f32[2])
    """
    return _same(_unary("sqrt", operand, _FC), np.sqrt)


@sqrt.defvjp
def _sqrt_vjp(g, out, operand):
    return multiply(g, divide(0.5, out))


@primitive("rsqrt", elementwise=True, quantized="dequantize")
def rsqrt(operand):
    """stablehlo.rsqrt: 1/sqrt(x); rsqrt(+0) = +inf, rsqrt(-0) = -inf.

    >>> xo.rsqrt(xo.tensor([4.0, 0.0]))   # [0.5, inf]
    xo.tensor([0.5, inf], f32[2])
    """
    return _same(_unary("rsqrt", operand, _FC), lambda v: 1 / np.sqrt(v))


@rsqrt.defvjp
def _rsqrt_vjp(g, out, operand):
    return multiply(g, multiply(divide(out, operand), -0.5))  # -x^(-3/2) / 2


@primitive("cbrt", elementwise=True, quantized="dequantize")
def cbrt(operand):
    """stablehlo.cbrt: cube root; negative reals give negative roots, complex the
    principal root.

    >>> xo.cbrt(xo.tensor([8.0, -27.0]))   # [2, -3]
    xo.tensor([ 2., -3.], f32[2])
    """
    x = _unary("cbrt", operand, _FC)
    # reals: the same bits on every CPU, exact on perfect cubes (NumPy's SIMD and
    # scalar cbrt loops differ in the last bit; see xops.ops._portable)
    return _same(x, (lambda v: np.power(v, 1 / 3)) if x._dtype.kind == _C else _portable.cbrt)


@cbrt.defvjp
def _cbrt_vjp(g, out, operand):
    return multiply(g, divide(1 / 3, multiply(out, out)))  # x^(-2/3) / 3


def _trig(name, ufunc, about, at_zero):
    """The primitive ``stablehlo.<name>`` (sine, cosine, tan): NumPy's ``ufunc`` on float
    and complex operands (see ``_base._same``). Its docstring: the op's name, ``about``,
    and an example at 0 (``at_zero``: the value there)."""

    def fn(operand):
        return _same(_unary(name, operand, _FC), ufunc)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""stablehlo.{name}{about}.

    >>> xo.{name}(xo.tensor([0.0]))   # [{at_zero}]
    xo.tensor([{at_zero}.], f32[1])
    """
    return primitive(name, elementwise=True, quantized="dequantize")(fn)


sine = _trig("sine", np.sin, "", 0)
cosine = _trig("cosine", np.cos, "", 1)
tan = _trig("tan", np.tan, " (XLA Tan; in the current spec and conformance suite)", 0)


@sine.defvjp
def _sine_vjp(g, out, operand):
    return (multiply(g, cosine(operand)),)


@cosine.defvjp
def _cosine_vjp(g, out, operand):
    return (negate(multiply(g, sine(operand))),)


@tan.defvjp
def _tan_vjp(g, out, operand):
    return multiply(g, add(1.0, multiply(out, out)))


@primitive("tanh", elementwise=True, quantized="dequantize")
def tanh(operand):
    """stablehlo.tanh.

    >>> xo.tanh(xo.tensor([0.0, 100.0]))   # [0, 1]
    xo.tensor([0., 1.], f32[2])
    """
    return _f32_or("tanh", _unary("tanh", operand, _FC), np.tanh)


@tanh.defvjp
def _tanh_vjp(g, out, operand):
    # (1 + t)(1 - t) rather than 1 - t^2: no cancellation near |t| = 1
    return multiply(multiply(g, add(1.0, out)), subtract(1.0, out))


@primitive("erf", elementwise=True, spec="xla")
def erf(operand):
    """XLA Erf: the error function (real floating-point types), from SciPy's erf.

    >>> xo.erf(xo.tensor([0.0, 10.0]))   # [0, 1]
    xo.tensor([0., 1.], f32[2])
    """
    from scipy.special import erf as _erf  # imported on first use: keeps `import xops` fast

    return _same(_unary("erf", operand, (_F,)), _erf)


_TWO_OVER_SQRT_PI = 1.1283791670955126


@erf.defvjp
def _erf_vjp(g, out, operand):
    return multiply(g, multiply(exponential(negate(multiply(operand, operand))), _TWO_OVER_SQRT_PI))


@primitive("power", elementwise=True, quantized="dequantize")
def power(lhs, rhs):
    """stablehlo.power: integers use square-and-multiply with wraparound, and a
    negative exponent gives 0 unless |lhs| = 1; floats follow IEEE pow (pow(x, 0) = 1).

    >>> xo.power(xo.tensor([-2, 0, 5], "i64"), xo.tensor([3, 0, -1], "i64"))   # [-8, 1, 0]
    xo.tensor([-8,  1,  0], i64[3])
    """
    x, y = _binary("power", lhs, rhs, _NUM)
    if x._dtype.kind in _INT:

        def signed_pow(n, a, b, out):
            K.int_power(n, a, b, out, True)

        def unsigned_pow(n, a, b, out):
            K.int_power(n, a, b, out, False)

        return _int_kernel(signed_pow if x._dtype.kind == _SI else unsigned_pow, unsigned_pow, x, y)
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


def _complex_atan2(y, x):
    # atan2(y, x) = -i * log((x + i*y) / sqrt(x^2 + y^2)), as the reference interpreter,
    # evaluated one complex precision up: x + i*y cancels and the log's argument is
    # near 1 whenever the result is small (c64 lost up to 3 digits)
    wide = np.clongdouble if x.dtype == np.complex128 else np.complex128
    yw, xw = y.astype(wide), x.astype(wide)
    return (-1j * np.log((xw + 1j * yw) / np.sqrt(xw * xw + yw * yw))).astype(x.dtype)


@primitive("atan2", elementwise=True, quantized="dequantize")
def atan2(lhs, rhs):
    """stablehlo.atan2: atan2(lhs = y, rhs = x); atan2(+-0, -0) = +-pi.

    >>> xo.atan2(xo.tensor([0.0, 1.0]), xo.tensor([-1.0, 0.0]))   # [3.1415927, 1.5707964]
    xo.tensor([3.1415927, 1.5707964], f32[2])
    """
    x, y = _binary("atan2", lhs, rhs, _FC)
    return _same2(x, y, _complex_atan2 if x._dtype.kind == _C else np.arctan2)


@atan2.defvjp
def _atan2_vjp(g, out, lhs, rhs):
    # atan2(y = lhs, x = rhs): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
    y, x = _like(lhs, out), _like(rhs, out)
    g_r2 = divide(g, add(multiply(x, x), multiply(y, y)))
    return (
        multiply(g_r2, x) if _needs(lhs) else None,
        negate(multiply(g_r2, y)) if _needs(rhs) else None,
    )
