"""Arithmetic elementwise ops and their gradient rules: abs, negate, sign, the rounding
ops (floor, ceil, round_nearest_afz, round_nearest_even), is_finite, real/imag/complex,
add, subtract, multiply, divide, remainder, maximum, minimum, and compare, select and
clamp. The dispatch fast-path registrations for add/subtract/multiply/divide are at the
end.
"""

import builtins

import numpy as np

from ...autodiff.helpers import broadcast_to as _broadcast_to, sum_to as _sum_to
from ...autodiff.tape import is_grad_enabled, primitive
from ...dtypes import all_dtypes, as_dtype
from ...kernels import elementwise as K
from ...kernels import pool as _pool
from ...tensor import Tensor, _wrap
from .._core import SpecError, as_tensor, check, compute, fast_binary, operands, result, tstr
from .._core import _fast_scalar, _quiet_call, fast_grad_of
from ._base import _ANY, _B, _C, _F, _FC, _INT, _NUM, _SI, _UI  # the element type classes
from ._base import _binary, _complex64_in_double, _fast2, _float_kernel2, _int_kernel, _is_weak
from ._base import _like, _narrow_bits2, _needs, _part_dtype, _quiet, _same, _same2, _unary, _zeros
from .bitwise import and_  # clamp's gradient rule

__all__ = [
    "abs",
    "negate",
    "sign",
    "floor",
    "ceil",
    "round_nearest_afz",
    "round_nearest_even",
    "is_finite",
    "real",
    "imag",
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "complex",
    "compare",
    "select",
    "clamp",
]


# ---------------------------------------------------------------------------------------
# Gradient-rule helpers (the rules themselves sit right below each op; the shared ones
# are xops.autodiff.helpers')
# ---------------------------------------------------------------------------------------


def _minmax_vjp(g, out, lhs, rhs, is_max):
    """maximum (``is_max``) / minimum: g goes to the operand equal to the result; where
    both are (a tie, -0 vs +0 included) each gets g/2, as jax.lax.max/min do. A NaN
    result (either operand NaN) sends nothing back."""
    fast = _minmax_vjp_cpu(g, out, lhs, rhs, is_max)
    if fast is not None:
        return fast
    x, y = _like(lhs, out), _like(rhs, out)
    at_x, at_y = compare(x, out, "EQ"), compare(y, out, "EQ")
    z, half = _zeros(g), multiply(g, 0.5)
    return (
        select(at_x, select(at_y, half, g), z) if _needs(lhs) else None,
        select(at_y, select(at_x, half, g), z) if _needs(rhs) else None,
    )


_MINMAX_FAST = (np.dtype(np.float32), np.dtype(np.float64))  # f32, f64 on the CPU


def _minmax_vjp_cpu(g, out, lhs, rhs, is_max):
    """_minmax_vjp's cotangents in one kernel pass each (``K.extremum_grad``), the same
    bits, for f32/f64 NumPy-held operands outside create_graph; None elsewhere (the
    composite rule). A weak scalar operand stays one element (issue 15: the relu of the
    spec training step, xo.maximum(h, 0.0), took two compares, a multiply and two
    selects per layer)."""
    r = out._value
    if is_grad_enabled() or type(r) is not np.ndarray or r.dtype not in _MINMAX_FAST:
        return None
    dt = out._dtype
    gv = g._value
    if dt.quantized or type(gv) is not np.ndarray or (gv.dtype, gv.shape) != (r.dtype, r.shape):
        return None
    flat = []
    for a in (lhs, rhs):
        v = (a if isinstance(a, Tensor) else as_tensor(a, dt))._value
        if type(v) is not np.ndarray or v.dtype != r.dtype or v.shape not in (r.shape, ()):
            return None
        flat.append(np.ascontiguousarray(v).reshape(-1))
    res, gv = np.ascontiguousarray(r).reshape(-1), np.ascontiguousarray(gv).reshape(-1)
    half = r.dtype.type(0.5)

    def grad(a, b):
        ga = _pool.empty(res.size, r.dtype)
        if b.size == res.size:
            K.extremum_grad(ga.size, gv, a, b, res, half, ga)
        else:  # a weak scalar: one element, never an array of it; from g and a alone
            K.extremum_grad_weak(ga.size, gv, a, b[0], half, is_max, ga)
        return _wrap(ga.reshape(r.shape), dt)

    x, y = flat
    if (_needs(lhs) and x.size != res.size) or (_needs(rhs) and y.size != res.size):
        return None
    return (grad(x, y) if _needs(lhs) else None, grad(y, x) if _needs(rhs) else None)


def _piecewise_constant_vjp(g, out, operand):
    """The rule of sign, floor, ceil and the round ops: piecewise constant, so the
    gradient is zero almost everywhere."""
    return _zeros(g)


# ---------------------------------------------------------------------------------------
# Unary ops: sign and magnitude, rounding, complex parts
# ---------------------------------------------------------------------------------------


@primitive("abs", elementwise=True, quantized="dequantize")
def abs(operand):
    """stablehlo.abs: |x|. Signed integers wrap (abs(INT_MIN) = INT_MIN); complex
    operands give their real part type (C2).

    >>> xo.abs(xo.tensor([-2, 0, 2], "i32"))   # [2, 0, 2]
    xo.tensor([2, 0, 2], i32[3])
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
        return complex(
            divide(multiply(g, real(operand)), r), negate(divide(multiply(g, imag(operand)), r))
        )
    return select(compare(operand, 0.0, "GE"), g, negate(g))


@primitive("negate", elementwise=True, quantized="dequantize")
def negate(operand):
    """stablehlo.negate: -x. Integers wrap (unsigned: 2^N - x); -(+0.0) = -0.0.

    >>> xo.negate(xo.tensor([0, -2], "i32"))   # [0, 2]
    xo.tensor([0, 2], i32[2])
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


@primitive("sign", elementwise=True, quantized="dequantize")
def sign(operand):
    """stablehlo.sign: -1/0/+1 for integers; for floats NaN -> NaN, -0.0 -> -0.0,
    +0.0 -> +0.0; for complex x/|x| (NaN parts give (NaN, NaN), 0 gives 0).

    >>> xo.sign(xo.tensor([-1.5, -0.0, 2.0]))   # [-1, -0, 1]
    xo.tensor([-1., -0.,  1.], f32[3])
    """
    x = _unary("sign", operand, (_SI, _F, _C))
    return _same(x, _sign_impl)


sign.defvjp(_piecewise_constant_vjp)


def _rounding(name, ufunc, about, example, shows):
    """The rounding primitive ``stablehlo.<name>`` (floor, ceil, round_nearest_even):
    NumPy's ``ufunc`` on real floats; piecewise constant, so its gradient is zero. Its
    docstring: ``about`` and the example ``xo.<name>(xo.tensor(example))``, whose values
    print as ``shows``."""

    def fn(operand):
        return _same(_unary(name, operand, (_F,)), ufunc)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""stablehlo.{name}: {about}.

    >>> xo.{name}(xo.tensor({example}))
    xo.tensor([{shows}], f32[{len(example)}])
    """
    op = primitive(name, elementwise=True, quantized="dequantize")(fn)
    op.defvjp(_piecewise_constant_vjp)
    return op


floor = _rounding(
    "floor", np.floor, "keeps the sign of zero (floor(-0.0) = -0.0)", [-0.8, 2.5], "-1., 2."
)
ceil = _rounding("ceil", np.ceil, "ceil(-0.25) = -0.0", [-0.8, 0.2], "-0., 1.")


@primitive("round_nearest_afz", elementwise=True, quantized="dequantize")
def round_nearest_afz(operand):
    """stablehlo.round_nearest_afz: round half away from zero (-2.5 -> -3, 0.5 -> 1).

    >>> xo.round_nearest_afz(xo.tensor([-2.5, 0.4, 0.5, 0.6, 2.5]))   # [-3, 0, 1, 1, 3]
    xo.tensor([-3.,  0.,  1.,  1.,  3.], f32[5])
    """
    x = _unary("round_nearest_afz", operand, (_F,))
    a = np.ascontiguousarray(compute(x)).reshape(-1)
    out = _pool.empty(a.shape, a.dtype)
    K.round_nearest_afz(out.size, a, out)
    return result(out.reshape(x.shape), x._dtype)


round_nearest_afz.defvjp(_piecewise_constant_vjp)


round_nearest_even = _rounding(
    "round_nearest_even",
    np.rint,
    "ties to even (2.5 -> 2, -2.5 -> -2)",
    [-2.5, 0.4, 0.5, 0.6, 2.5],
    "-2., 0., 0., 1., 2.",
)


@primitive("is_finite", elementwise=True)
def is_finite(operand):
    """stablehlo.is_finite: true where x is neither inf nor NaN (i1 result).

    >>> xo.is_finite(xo.tensor([1.0, float("inf"), float("nan")]))   # [True, False, False]
    xo.tensor([ True, False, False], i1[3])
    """
    x = _unary("is_finite", operand, (_F,))
    return result(np.isfinite(compute(x)), as_dtype("i1"))


def _complex_part(name, part, of_real, about, shows):
    """The primitive ``stablehlo.<name>`` (real, imag): ``part`` of a complex operand, in
    its part type (C2); a float operand gives ``of_real(x)``. Its docstring: ``about``,
    and the example on 1 + 2j, whose value prints as ``shows``."""

    def fn(operand):
        x = _unary(name, operand, _FC)
        if x._dtype.kind == _F:
            return of_real(x)
        return result(part(compute(x)), _part_dtype(x._dtype))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""stablehlo.{name}: {about}.

    >>> xo.{name}(xo.tensor([1 + 2j]))
    xo.tensor([{shows}], f32[1])
    """
    return primitive(name, elementwise=True)(fn)


def _zeros_of(x):
    return result(np.zeros(x.shape, x._dtype.compute), x._dtype)


real = _complex_part(
    "real", np.real, lambda x: x, "the real part (a float is returned as is)", "1."
)


@real.defvjp
def _real_vjp(g, out, operand):
    if operand._dtype.kind == _C:
        return complex(g, _zeros(g))  # JAX: the cotangent becomes the real part
    return g


imag = _complex_part("imag", np.imag, _zeros_of, "the imaginary part (a float gives zeros)", "2.")


@imag.defvjp
def _imag_vjp(g, out, operand):
    if operand._dtype.kind == _C:
        return complex(_zeros(g), negate(g))  # JAX: complex(0, -g)
    return _zeros(g)  # imag of a real tensor is a constant zero


# ---------------------------------------------------------------------------------------
# Binary ops
# ---------------------------------------------------------------------------------------


def _wrapping(name, ufunc, code, i1, example, shows):
    """The primitive ``stablehlo.<name>`` (add, subtract, multiply): ``ufunc`` on
    integers (which wrap), floats and complex; narrow floats run the Numba kernel ``code``
    on their bits (through float32 where it has none for them). ``i1``: the op's logical
    function on booleans (None: no i1). Its docstring's example: ``xo.<name>`` on the
    two operands ``example``, whose values print as ``shows``."""
    kinds = _NUM if i1 is None else _ANY

    def fn(lhs, rhs):
        x, y = _binary(name, lhs, rhs, kinds)
        if x._dtype.kind == _B:
            return _same2(x, y, i1)
        if not x._dtype.is_narrow:  # hot path: no conversion at all
            return _fast2(ufunc, x, y)
        z = _narrow_bits2(x, y, code)
        return _same2(x, y, ufunc) if z is None else z

    fn.__name__ = fn.__qualname__ = name
    logical = "no i1" if i1 is None else f"i1 {name} is logical {i1.__name__[8:].upper()}"
    fn.__doc__ = f"""stablehlo.{name}: integers wrap; {logical}.

    >>> xo.{name}(xo.tensor({example[0]}), xo.tensor({example[1]}))
    xo.tensor([{shows}], i64[2])
    """
    return primitive(name, elementwise=True, quantized="dequantize")(fn)


add = _wrapping("add", np.add, K.ADD, np.logical_or, ([1, 2], [5, 6]), "6, 8")
subtract = _wrapping("subtract", np.subtract, K.SUBTRACT, None, ([6, 8], [5, 6]), "1, 2")
multiply = _wrapping(
    "multiply", np.multiply, K.MULTIPLY, np.logical_and, ([1, 2], [5, 6]), " 5, 12"
)


@add.defvjp
def _add_vjp(g, out, lhs, rhs):
    return g, g


@subtract.defvjp
def _subtract_vjp(g, out, lhs, rhs):
    return g, negate(g)


@multiply.defvjp
def _multiply_vjp(g, out, lhs, rhs):
    return (multiply(g, rhs) if _needs(lhs) else None, multiply(g, lhs) if _needs(rhs) else None)


@primitive("divide", elementwise=True, quantized="dequantize")
def divide(lhs, rhs):
    """stablehlo.divide: integers truncate toward zero; x/0 = -1 (all ones) and
    INT_MIN/-1 = INT_MIN, as XLA on CPU (the spec leaves both implementation-defined);
    floats follow IEEE 754.

    >>> xo.divide(xo.tensor([17, -10, 8, -8], "i32"), xo.tensor([3, 3, -3, -3], "i32"))
    ... # [5, -3, -2, 2]
    xo.tensor([ 5, -3, -2,  2], i32[4])
    """
    x, y = _binary("divide", lhs, rhs, _NUM)
    if x._dtype.kind in _INT:
        return _int_kernel(K.int_divide, K.uint_divide, x, y, K.divide_small)
    return _same2(x, y, _complex64_in_double(np.divide))


@divide.defvjp
def _divide_vjp(g, out, lhs, rhs):
    gx = divide(g, _like(rhs, out))
    gy = negate(multiply(gx, out)) if _needs(rhs) else None  # -g x / y^2
    return gx if _needs(lhs) else None, gy


@primitive("remainder", elementwise=True, quantized="dequantize")
def remainder(lhs, rhs):
    """stablehlo.remainder: the sign follows the dividend (C fmod, not Python's %);
    integers: x % 0 = x and INT_MIN % -1 = 0 (XLA on CPU). Complex remainder is left
    undefined by the spec (openxla/stablehlo#997) and is an error.

    >>> xo.remainder(xo.tensor([17, -17, 17, -17]), xo.tensor([3, 3, -3, -3]))   # [2, -2, 2, -2]
    xo.tensor([ 2, -2,  2, -2], i64[4])
    """
    x, y = _binary("remainder", lhs, rhs, _NUM)
    check(
        x._dtype.kind != _C,
        "remainder",
        "I1",
        lambda: (
            f"complex remainder is not defined by the spec yet (openxla/stablehlo#997), "
            f"got {tstr(x)}"
        ),
    )
    if x._dtype.kind in _INT:
        return _int_kernel(K.int_remainder, K.uint_remainder, x, y, K.remainder_small)
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


def _extremum(name, kernel, ufunc, i1, zeros, shows):
    """The primitive ``stablehlo.<name>`` (maximum, minimum): IEEE 754-2019 on real
    floats (the Numba ``kernel``), ``ufunc`` on integers and complex (lexicographic on
    (real, imag)), ``i1`` (logical or / and) on booleans; the rule ``_minmax_vjp``. Its
    docstring names how signed zeros order (``zeros``) and shows the example on
    [1, -0] and [3, 0], whose values print as ``shows``."""

    def fn(lhs, rhs):
        x, y = _binary(name, lhs, rhs, _ANY)
        k = x._dtype.kind
        if k == _F:
            return _float_kernel2(kernel, x, y)
        return _same2(x, y, i1 if k == _B else ufunc)

    fn.__name__ = fn.__qualname__ = name
    word = i1.__name__.removeprefix("logical_").upper()
    fn.__doc__ = f"""stablehlo.{name}: IEEE 754-2019 {name} for floats (NaN if either is
    NaN, {zeros}); i1 is {word}; complex compares (real, imag) lexicographically.

    >>> xo.{name}(xo.tensor([1.0, -0.0]), xo.tensor([3.0, 0.0]))
    xo.tensor([{shows}], f32[2])
    """
    op = primitive(name, elementwise=True, quantized="dequantize")(fn)
    is_max = name == "maximum"

    def rule(g, out, lhs, rhs):
        return _minmax_vjp(g, out, lhs, rhs, is_max)

    rule.__name__ = rule.__qualname__ = f"_{name}_vjp"
    op.defvjp(rule)
    return op


maximum = _extremum("maximum", K.float_maximum, np.maximum, np.logical_or, "+0 > -0", "3., 0.")
minimum = _extremum("minimum", K.float_minimum, np.minimum, np.logical_and, "-0 < +0", " 1., -0.")


def _extremum_fast(op, kernel):
    """Give maximum / minimum (``op``) the dispatch fast path (xops.autodiff.tape
    .primitive) of the calls their body answers with the float ``kernel`` without a
    conversion: f32 / f64 CPU Tensors, the second operand a Tensor of the first one's
    type and shape or a weak Python scalar exactly representable in it (a relu's
    ``xo.maximum(h, 0.0)``). ``op._fast_grad`` takes the same calls where an operand
    requires a gradient (the rule reads the operands as given). Anything else returns
    None: the full path, every check."""
    types = {id(as_dtype("f32")), id(as_dtype("f64"))}

    def fast(args, grad=False):
        if len(args) != 2:
            return None
        x, y = args
        if type(x) is not Tensor or id(x._dtype) not in types or (x.requires_grad and not grad):
            return None
        dt, v = x._dtype, x._value
        if type(v) is not np.ndarray:
            return None
        if type(y) is Tensor:
            w = y._value
            if y._dtype is not dt or (y.requires_grad and not grad):
                return None
            if type(w) is not np.ndarray or w.shape != v.shape:
                return None
        else:
            s = _fast_scalar(y, dt)
            if s is None:
                return None
            y = _wrap(s, dt)
        return _float_kernel2(kernel, x, y)

    op._fast, op._fast_grad = fast, fast_grad_of(fast)


_extremum_fast(maximum, K.float_maximum)
_extremum_fast(minimum, K.float_minimum)


@primitive("complex", elementwise=True)
def complex(lhs, rhs):
    """stablehlo.complex: a complex value from real (lhs) and imaginary (rhs) parts;
    f32 parts give c64, f64 parts give c128.

    >>> xo.complex(xo.tensor([1.0, 3.0]), xo.tensor([2.0, 4.0]))   # [1+2j, 3+4j]
    xo.tensor([1.+2.j, 3.+4.j], c64[2])
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
    return (real(g) if _needs(lhs) else None, negate(imag(g)) if _needs(rhs) else None)


# ---------------------------------------------------------------------------------------
# compare, select, clamp
# ---------------------------------------------------------------------------------------

_DIRECTIONS = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "GE": np.greater_equal,
    "GT": np.greater,
    "LE": np.less_equal,
    "LT": np.less,
}


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


@primitive("compare", elementwise=True, quantized="dequantize")
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
    xo.tensor([ True,  True], i1[2])
    """
    x, y = _binary("compare", lhs, rhs, _ANY, shape_label="C2")
    direction = str(comparison_direction).upper()
    if direction not in _DIRECTIONS:
        raise SpecError(
            "compare",
            "I3",
            f"comparison_direction must be one of "
            f"{', '.join(_DIRECTIONS)}, got {comparison_direction!r}",
        )
    dt = x._dtype
    expected = _default_compare_type(dt)
    ctype = expected if compare_type is None else str(compare_type).upper()
    check(
        ctype in ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"),
        "compare",
        "I4",
        lambda: (
            f"compare_type must be one of FLOAT, TOTALORDER, SIGNED, UNSIGNED, got {compare_type!r}"
        ),
    )
    allowed = {expected} | ({"TOTALORDER"} if dt.kind == _F else set())
    check(
        ctype in allowed,
        "compare",
        "C3",
        lambda: (
            f"compare_type {ctype} does not fit element type {dt.name} "
            f"(allowed: {', '.join(sorted(allowed))})"
        ),
    )
    fn = _DIRECTIONS[direction]
    if ctype == "TOTALORDER":
        return result(fn(_total_order_key(x), _total_order_key(y)), as_dtype("i1"))
    with _quiet():  # NumPy orders complex numbers lexicographically on (real, imag)
        return result(fn(compute(x), compute(y)), as_dtype("i1"))


def _compare_fast(args):
    """compare's dispatch fast path (``compare._fast``): ``(lhs, rhs, direction)`` with
    lhs a Tensor of a plain element type (held as computed, not quantized), rhs a Tensor
    of that type and shape or a weak Python scalar exactly representable in it, and the
    direction spelled as the spec does: the default compare_type, so the full path
    computes the same NumPy comparison. An argument may require a gradient: the i1
    result is never recorded."""
    if len(args) != 3:
        return None
    x, y, direction = args
    fn = _DIRECTIONS.get(direction) if type(direction) is str else None
    if fn is None or type(x) is not Tensor:
        return None
    dt = x._dtype
    if id(dt) not in _SELECT_PLAIN_TYPES or type(x._value) is not np.ndarray:
        return None
    a = x._value
    if type(y) is Tensor:
        b = y._value
        if y._dtype is not dt or type(b) is not np.ndarray or b.shape != a.shape:
            return None
    else:
        b = _fast_scalar(y, dt)
        if b is None:
            return None
    return _wrap(_quiet_call(fn, a, b), _I1)


# select runs on a Numba kernel (``select_bits``) over the branches' raw bit patterns
# from this many elements on: np.where branches per element (3 ms for 800K random
# predicates, against 0.08 ms); below it np.where's dispatch is the cheaper one.
_SELECT_KERNEL_MIN = 2048
_SELECT_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _is_scalar_branch(v):
    """A broadcast scalar: every stride 0 (a weak scalar, or zeros from broadcast_in_dim)."""
    return v.ndim == 0 or not builtins.any(v.strides)


_memory_order = K.memory_order  # (the kernels' rows_binary reads layouts alike)


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


def _select_kernel(p, t, f, c_order=False):
    """select with an i1 array ``p`` of t's shape, through ``K.select_bits``. Operands
    that share a memory layout (a transposed result, and what elementwise ops made of
    it) are read in memory order, and the result gets that layout too: no copies.
    ``c_order``: the caller knows every array is C-contiguous (or a 0-d scalar branch)."""
    if _is_scalar_branch(p):  # (a broadcast predicate, every stride 0: one whole branch;
        out = _pool.empty(p.shape, t.dtype)  # the kernel reads pred[i] for every i)
        np.copyto(out, t if p[(0,) * p.ndim] else f)  # (raw copies: NaN payloads kept)
        return out
    word = _SELECT_WORDS[t.dtype.itemsize]
    perm = None if c_order else _memory_order([a for a in (p, t, f) if not _is_scalar_branch(a)])
    shape = p.shape if perm is None else tuple(p.shape[d] for d in perm)
    out = _pool.empty(shape, t.dtype)
    K.select_bits(
        out.size,
        _select_flat(p, perm, np.bool_),
        _select_flat(t, perm, word),
        _select_flat(f, perm, word),
        out.reshape(-1).view(word),
    )
    return out if perm is None else np.transpose(out, np.argsort(perm))


@primitive("select", elementwise=True, quantized="dequantize", result_type_from="on_true")
def select(pred, on_true, on_false):
    """stablehlo.select: on_true where pred else on_false; pred is i1, 0-d or of the
    operands' shape (C1); on_true and on_false have one type (C2). A Python scalar
    branch is weak: it takes the other branch's type and broadcasts.

    >>> xo.select(xo.tensor([True, False]), xo.tensor([1, 2]), xo.tensor([3, 4]))   # [1, 4]
    xo.tensor([1, 4], i64[2])
    """
    plain = _select_plain(pred, on_true, on_false)
    if plain is not None:
        return plain
    p, t, f = select_checks(pred, on_true, on_false)
    tv, fv = t._value, f._value
    if (
        p.ndim
        and tv.size >= _SELECT_KERNEL_MIN
        and tv.dtype.itemsize in _SELECT_WORDS
        and (builtins.any(tv.strides) or builtins.any(fv.strides))
    ):
        return _wrap(_select_kernel(p._value, tv, fv), t._dtype)
    return _wrap(np.where(p._value, tv, fv), t._dtype)


def _select_plain(pred, on_true, on_false):
    """select's everyday call answered without its general machinery, or None: an i1
    ``pred`` of at least _SELECT_KERNEL_MIN elements, branches of its shape that are
    C-contiguous Tensors of one plain element type (held as computed, not quantized)
    or one such Tensor and a weak Python scalar exactly representable in its type.
    That call passes every check (I1, C1, C2) and takes the kernel path in C order,
    as :func:`_select_kernel` would: the same arrays reach the same kernel."""
    if type(pred) is not Tensor or pred._dtype.kind != _B:
        return None
    pv = pred._value
    if type(pv) is not np.ndarray or not pv.ndim or pv.size < _SELECT_KERNEL_MIN:
        return None
    if type(on_true) is Tensor:
        dt = on_true._dtype
    elif type(on_false) is Tensor:
        dt = on_false._dtype
    else:
        return None
    if id(dt) not in _SELECT_PLAIN_TYPES:
        return None
    branches = []
    for b in (on_true, on_false):
        if type(b) is Tensor:
            v = b._value
            if b._dtype is not dt or type(v) is not np.ndarray or v.shape != pv.shape:
                return None
            if not v.flags.c_contiguous:
                return None
        else:
            v = _fast_scalar(b, dt)
            if v is None:
                return None
        branches.append(v)
    if not pv.flags.c_contiguous:
        return None
    tv, fv = branches
    if not (builtins.any(tv.strides) or builtins.any(fv.strides)):
        return None  # (two broadcast scalars: np.where in the full path)
    if dt.np.itemsize not in _SELECT_WORDS:
        return None
    return _wrap(_select_kernel(pv, tv, fv, c_order=True), dt)


def _select_fast(args):
    """select's dispatch fast path (``select._fast``): :func:`_select_plain` for
    positional calls in which nothing requires a gradient."""
    if len(args) != 3:
        return None
    for a in args:
        if type(a) is Tensor and a.requires_grad:
            return None
    return _select_plain(*args)


def select_checks(pred, on_true, on_false):
    """select's constraints (I1, C1, C2), reading only types and shapes: the operands as
    tensors ``(pred, on_true, on_false)``, a weak scalar branch broadcast (a stride-0
    view) to the other's shape."""
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
    check(
        t._dtype is f._dtype and t.shape == f.shape,
        "select",
        "C2",
        lambda: f"on_true and on_false must have the same type, got {tstr(t)} and {tstr(f)}",
    )
    check(
        p.ndim == 0 or p.shape == t.shape,
        "select",
        "C1",
        lambda: f"pred must be 0-d or have the operands' shape {list(t.shape)}, got {tstr(p)}",
    )
    return p, t, f


_SELECT_PLAIN_TYPES = frozenset(
    id(d) for d in all_dtypes() if not d.quantized and d.compute == d.np and d.kind != _B
)
select._fast = _select_fast
compare._fast = _compare_fast
_I1 = as_dtype("i1")


@select.defvjp
def _select_vjp(g, out, pred, on_true, on_false):
    z = _zeros(g)
    return (
        None,
        select(pred, g, z) if _needs(on_true) else None,
        select(pred, z, g) if _needs(on_false) else None,
    )


@primitive("clamp", elementwise=True, quantized="dequantize", result_type_from="operand")
def clamp(min, operand, max):
    """stablehlo.clamp: minimum(maximum(operand, min), max) with the spec's maximum and
    minimum (NaN propagates; if min > max the result is max). min and max may be 0-d
    (C1, C2); all three share the element type (C3).

    >>> xo.clamp(xo.tensor([5, 10, 15]), xo.tensor([3, 13, 23]), xo.tensor([10, 15, 20]))
    ... # [5, 13, 20]
    xo.tensor([ 5, 13, 20], i64[3])
    """
    x, lo, hi = clamp_checks(min, operand, max)
    if x._dtype.kind == _F:
        lo_b = _wrap(np.broadcast_to(lo._value, x.shape), x._dtype)
        hi_b = _wrap(np.broadcast_to(hi._value, x.shape), x._dtype)
        return _float_kernel2(K.float_minimum, _float_kernel2(K.float_maximum, x, lo_b), hi_b)
    with _quiet():
        a = compute(x)
        return result(np.minimum(np.maximum(a, compute(lo)), compute(hi)), x._dtype)


def clamp_checks(min, operand, max):  # noqa: A002  (the op's own parameter names)
    """clamp's constraints (C1-C3), reading only types and shapes: ``(operand, min,
    max)`` as tensors."""
    x, lo, hi = operands("clamp", operand, min, max, names=["operand", "min", "max"])
    check(
        lo.ndim == 0 or lo.shape == x.shape,
        "clamp",
        "C1",
        lambda: (
            f"min must be 0-d or have operand's shape, got min {tstr(lo)} for operand {tstr(x)}"
        ),
    )
    check(
        hi.ndim == 0 or hi.shape == x.shape,
        "clamp",
        "C2",
        lambda: (
            f"max must be 0-d or have operand's shape, got max {tstr(hi)} for operand {tstr(x)}"
        ),
    )
    check(
        lo._dtype is x._dtype and hi._dtype is x._dtype,
        "clamp",
        "C3",
        lambda: (
            f"min, operand and max must have one element type, got {tstr(lo)}, "
            f"{tstr(x)}, {tstr(hi)}"
        ),
    )
    return x, lo, hi


@clamp.defvjp
def _clamp_vjp(g, out, min, operand, max):
    # As jax.lax.clamp: operand gets g where min < x < max; min gets g where x < min
    # (and min < max); max gets g where x > max. At x == min or x == max (and wherever
    # min >= max) none of them does: the boundary is a kink and its gradient is taken as
    # 0, as relu'(0) = 0. A 0-d min or max gets its gradient summed to 0-d.
    x, lo, hi = operands("clamp", operand, min, max, names=["operand", "min", "max"])
    lo_x, hi_x = _broadcast_to(lo, x.shape), _broadcast_to(hi, x.shape)
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
for _op, _ufunc, _kinds in (
    (add, np.add, _NUM),
    (subtract, np.subtract, _NUM),
    (multiply, np.multiply, _NUM),
    (divide, np.divide, (_F,)),
):
    fast_binary(_op, _ufunc, _kinds)


del _op, _ufunc, _kinds
