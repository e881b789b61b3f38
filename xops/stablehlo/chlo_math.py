"""CHLO's elementwise math ops (``chlo.asin``, ``chlo.lgamma``, ``chlo.broadcast_add``...).

JAX lowers many ``jax.numpy``/``jax.scipy.special`` functions to CHLO ops, which
``stablehlo-opt --chlo-legalize-to-stablehlo`` (and XLA) expand into StableHLO
approximations. xops runs them as ops of their own, each the exact function rounded
once to the element type: the value is computed in float64 (complex128) with NumPy or
SciPy and rounded to the result type, so it is as close to the mathematical value as the
expansions are (the JAX test programs check them within 3 ULP, or within 0.001 with
``check.expect_almost_eq``). Each is an autodiff primitive; its gradient rule, where
given, is built from xops ops (``lgamma' = digamma``, ``asin' = 1/sqrt(1 - x^2)``, ...),
so a loaded program differentiates through it.

* real and complex: ``acos acosh asin asinh atan atanh cosh sinh`` (C99's branch cuts,
  which are XLA's);
* real: ``lgamma digamma erfc erf_inv bessel_i1e``, ``polygamma(n, x)``,
  ``zeta(x, q)`` (Hurwitz), ``next_after(x, y)`` (on the bit patterns of the element
  type, so bf16/f16 step by their own ULP);
* ``is_inf``, ``is_pos_inf``, ``is_neg_inf``, ``conj`` as xops compositions;
* ``chlo.broadcast_<op>``: NumPy-style broadcasting (or the op's
  ``broadcast_dimensions``) followed by the StableHLO op.
"""

import numpy as np

import xops as xo

from ..autodiff.tape import primitive
from ..errors import SpecError
from ..ops._core import compute, operands, result, tstr
from ..tensor import Tensor

__all__ = [
    "CHLO_MATH_OPS",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bessel_i1e",
    "cosh",
    "digamma",
    "erf_inv",
    "erfc",
    "lgamma",
    "next_after",
    "polygamma",
    "sinh",
    "zeta",
]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _operand(name, x, complex_ok):
    (x,) = operands(name, x, names=["operand"])
    kinds = ("float", "complex") if complex_ok else ("float",)
    if x._dtype.kind not in kinds:
        what = "floating-point or complex" if complex_ok else "floating-point"
        raise SpecError(name, "", f"operand must be a tensor of {what} type, got {tstr(x)}")
    return x


def _wide(x):
    """x's values in float64 / complex128."""
    a = compute(x)
    return a.astype(np.complex128 if x._dtype.kind == "complex" else np.float64)


def _apply(name, x, fn, complex_ok=True):
    """fn over x's values in double precision, rounded once to x's element type."""
    x = _operand(name, x, complex_ok)
    with np.errstate(all="ignore"):
        out = fn(_wide(x))
    return result(np.asarray(out), x._dtype)


# ---------------------------------------------------------------------------------------
# Unary functions: inverse trigonometric and hyperbolic (real and complex), special (real)
# ---------------------------------------------------------------------------------------


def _special(name):
    """scipy.special's function ``name``, imported on its first call: keeps `import xops`
    fast."""

    def call(*args):
        import scipy.special as sp

        return getattr(sp, name)(*args)

    return call


def _nonpositive_integer(x):
    return (x <= 0) & (x == np.floor(x))


def _lgamma(x):
    out = _special("gammaln")(x)
    return np.where(_nonpositive_integer(x), np.inf, out)  # poles: log|Gamma| = +inf


def _digamma(x):
    out = _special("psi")(x)
    return np.where(_nonpositive_integer(x), np.nan, out)  # CHLO: NaN at the poles


# The unary ops: name -> formula. The inverse trigonometric and hyperbolic functions take
# real and complex operands, the special functions real ones.
_COMPLEX_OK = {
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
}
_REAL = {
    "lgamma": _lgamma,
    "digamma": _digamma,
    "erfc": _special("erfc"),
    "erf_inv": _special("erfinv"),
    "bessel_i1e": _special("i1e"),
}
# name -> what it computes, and its docstring's example: the operand's and the result's values
_ABOUT = {
    "asin": ("arcsine (principal branch)", [0.0, 1.0], "0. , 1.5707964"),
    "acos": ("arccosine (principal branch)", [1.0], "0."),
    "atan": ("arctangent", [1.0], "0.7853982"),
    "asinh": ("inverse hyperbolic sine", [0.0], "0."),
    "acosh": ("inverse hyperbolic cosine (NaN below 1 for real operands)", [1.0], "0."),
    "atanh": ("inverse hyperbolic tangent (NaN outside [-1, 1] for real operands)", [0.0], "0."),
    "sinh": ("hyperbolic sine", [0.0], "0."),
    "cosh": ("hyperbolic cosine, even, >= 1", [0.0, -1.0, 1.0], "1. , 1.5430807, 1.5430807"),
    "lgamma": ("log|Gamma(x)| (+inf at the poles 0, -1, -2, ...)", [1.0, 3.0], "0. , 0.6931472"),
    "digamma": ("psi(x) = d/dx log Gamma(x) (NaN at 0, -1, -2, ...)", [1.0], "-0.5772157"),
    "erfc": ("1 - erf(x), without the cancellation for large x", [0.0], "1."),
    "erf_inv": ("the inverse of erf on (-1, 1); +-inf at +-1, NaN outside", [0.0], "0."),
    "bessel_i1e": ("exp(-|x|) I1(x): the scaled modified Bessel function, order 1", [0.0], "0."),
}
_UNARY_OPS = []  # the primitives below, in declaration order


def _unary_primitive(name):
    """The primitive ``chlo.<name>`` of ``_COMPLEX_OK`` or ``_REAL``: its formula over the
    operand's values in double precision, rounded once to its element type (see
    :func:`_apply`). Gradient rules are attached below it (``@op.defvjp``)."""
    op_name = f"chlo.{name}"
    complex_ok = name in _COMPLEX_OK
    formula = (_COMPLEX_OK if complex_ok else _REAL)[name]
    about, operand, shows = _ABOUT[name]

    def fn(operand):
        return _apply(op_name, operand, formula, complex_ok)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{op_name}: {about}.

    >>> {name}(xo.tensor({operand}))
    xo.tensor([{shows}], f32[{len(operand)}])
    """
    op = primitive(op_name)(fn)
    _UNARY_OPS.append(op)
    return op


asin = _unary_primitive("asin")
acos = _unary_primitive("acos")
atan = _unary_primitive("atan")
asinh = _unary_primitive("asinh")
acosh = _unary_primitive("acosh")
atanh = _unary_primitive("atanh")
sinh = _unary_primitive("sinh")
cosh = _unary_primitive("cosh")


def _one_minus_sq(x):
    return xo.multiply(xo.subtract(1, x), xo.add(1, x))  # (1 - x)(1 + x): no cancellation


@asin.defvjp
def _asin_vjp(g, out, x):
    return xo.multiply(g, xo.rsqrt(_one_minus_sq(x)))


@acos.defvjp
def _acos_vjp(g, out, x):
    return xo.negate(xo.multiply(g, xo.rsqrt(_one_minus_sq(x))))


@atan.defvjp
def _atan_vjp(g, out, x):
    return xo.divide(g, xo.add(1, xo.multiply(x, x)))


@asinh.defvjp
def _asinh_vjp(g, out, x):
    return xo.multiply(g, xo.rsqrt(xo.add(xo.multiply(x, x), 1)))


@acosh.defvjp
def _acosh_vjp(g, out, x):
    # 1 / (sqrt(x - 1) sqrt(x + 1)): the branch that holds for complex x too
    return xo.divide(g, xo.multiply(xo.sqrt(xo.subtract(x, 1)), xo.sqrt(xo.add(x, 1))))


@atanh.defvjp
def _atanh_vjp(g, out, x):
    return xo.divide(g, _one_minus_sq(x))


@sinh.defvjp
def _sinh_vjp(g, out, x):
    return xo.multiply(g, cosh(x))


@cosh.defvjp
def _cosh_vjp(g, out, x):
    return xo.multiply(g, sinh(x))


lgamma = _unary_primitive("lgamma")
digamma = _unary_primitive("digamma")
erfc = _unary_primitive("erfc")
erf_inv = _unary_primitive("erf_inv")
bessel_i1e = _unary_primitive("bessel_i1e")  # (no gradient rule)


@erfc.defvjp
def _erfc_vjp(g, out, x):
    # -2/sqrt(pi) e^(-x^2)
    return xo.multiply(
        g, xo.multiply(xo.exponential(xo.negate(xo.multiply(x, x))), -1.1283791670955126)
    )


@erf_inv.defvjp
def _erf_inv_vjp(g, out, x):
    # sqrt(pi)/2 e^(erf_inv(x)^2)
    return xo.multiply(g, xo.multiply(xo.exponential(xo.multiply(out, out)), 0.88622692545275801))


@lgamma.defvjp
def _lgamma_vjp(g, out, x):
    return xo.multiply(g, digamma(x))


@digamma.defvjp
def _digamma_vjp(g, out, x):
    return xo.multiply(g, polygamma(xo.broadcast_in_dim(xo.constant(1, x.dtype), [], x.shape), x))


def _pair(name, a, b):
    x, y = operands(name, a, b, names=["lhs", "rhs"])
    for t in (x, y):
        if t._dtype.kind != "float":
            raise SpecError(
                name, "", f"operands must be floating-point tensors, got {tstr(x)} and {tstr(y)}"
            )
    if x._dtype is not y._dtype or x.shape != y.shape:
        raise SpecError(name, "", f"operands must have the same type, got {tstr(x)} and {tstr(y)}")
    return x, y


def _apply2(name, a, b, fn):
    """fn over the values of same-typed float tensors a and b in float64, rounded once to
    their element type."""
    x, y = _pair(name, a, b)
    with np.errstate(all="ignore"):
        out = fn(_wide(x), _wide(y))
    return result(out, x._dtype)


def _polygamma(n, x):
    n_int = np.isfinite(n) & (n == np.floor(n)) & (n >= 0)
    safe_n = np.where(n_int, n, 0).astype(np.int64)
    out = _special("polygamma")(safe_n, x)
    out = np.where(n == 0, _digamma(x), out)
    return np.where(n_int, out, np.nan)  # CHLO: NaN unless n is a natural number


@primitive("chlo.polygamma")
def polygamma(n, x):
    """chlo.polygamma: the n-th derivative of digamma (NaN unless n = 0, 1, 2, ...).

    >>> polygamma(xo.tensor([0.0, 1.0]), xo.tensor([1.0, 1.0]))   # [digamma(1), pi^2 / 6]
    xo.tensor([-0.5772157,  1.644934 ], f32[2])
    """
    return _apply2("chlo.polygamma", n, x, _polygamma)


@polygamma.defvjp
def _polygamma_vjp(g, out, n, x):
    return None, xo.multiply(g, polygamma(xo.add(n, 1), x))


def _zeta(s, q):
    out = _special("zeta")(s, q)
    # Hurwitz zeta is defined for s > 1; CHLO gives NaN elsewhere except s = 1 (+inf)
    out = np.where(s == 1, np.inf, out)
    return np.where(s < 1, np.nan, out)


@primitive("chlo.zeta")
def zeta(x, q):
    """chlo.zeta: the Hurwitz zeta function sum_k (q + k)^-x (x > 1).

    >>> zeta(xo.tensor([2.0]), xo.tensor([1.0]))   # [pi^2 / 6]
    xo.tensor([1.644934], f32[1])
    """
    return _apply2("chlo.zeta", x, q, _zeta)


@zeta.defvjp
def _zeta_vjp(g, out, x, q):
    return None, xo.multiply(g, xo.negate(xo.multiply(x, zeta(xo.add(x, 1), q))))


@primitive("chlo.next_after")
def next_after(x, y):
    """chlo.next_after: the next representable value after x in the direction of y, on
    the element type's own bit patterns (x itself when x == y; NaN if either is NaN).

    >>> next_after(xo.tensor([1.0], "bf16"), xo.tensor([2.0], "bf16"))   # [1.0078125]
    xo.tensor([1.00781], bf16[1])
    """
    x, y = _pair("chlo.next_after", x, y)
    dt = x._dtype
    u = _UINT[np.dtype(dt.np).itemsize]
    bits = np.ascontiguousarray(x._value).view(u).astype(np.uint64)
    a, b = compute(x).astype(np.float64), compute(y).astype(np.float64)
    sign = np.uint64(1) << np.uint64(dt.bits - 1)
    away = (a != 0) & ((a < b) == (a > 0))  # moving away from zero: magnitude + 1
    stepped = np.where(away, bits + np.uint64(1), bits - np.uint64(1))
    # from +-0 the first step is the smallest subnormal with y's sign
    tiny = np.where(b < 0, sign | np.uint64(1), np.uint64(1))
    out_bits = np.where(a == 0, tiny, stepped)
    nan_bits = np.ascontiguousarray(np.full(x.shape, np.nan, dt.np)).view(u).astype(np.uint64)
    out_bits = np.where(np.isnan(a) | np.isnan(b), nan_bits, out_bits)
    out = np.where(a == b, np.ascontiguousarray(y._value).view(u).astype(np.uint64), out_bits)
    return result(out.astype(u).view(dt.np), dt)


# ---------------------------------------------------------------------------------------
# Compositions
# ---------------------------------------------------------------------------------------


def _inf_like(x, negative=False):
    v = -np.inf if negative else np.inf
    return xo.broadcast_in_dim(xo.constant(v, x.dtype), [], list(x.shape))


def is_inf(x):
    return xo.compare(xo.abs(x), _inf_like(x), "EQ")


def is_pos_inf(x):
    return xo.compare(x, _inf_like(x), "EQ")


def is_neg_inf(x):
    return xo.compare(x, _inf_like(x, True), "EQ")


def conj(x):
    if not isinstance(x, Tensor) or x.dtype.kind != "complex":
        return x
    return xo.complex(xo.real(x), xo.negate(xo.imag(x)))


# ---------------------------------------------------------------------------------------
# chlo.broadcast_<op>: implicit broadcasting, then the op
# ---------------------------------------------------------------------------------------


def _broadcast_operands(op, args, out_shape):
    """Each operand broadcast to ``out_shape``: by ``broadcast_dimensions`` (for the
    lower-rank operand) when given, else aligned at the trailing dimensions."""
    dims_attr = op.attrs.get("broadcast_dimensions")
    out = []
    for a in args:
        if not isinstance(a, Tensor) or list(a.shape) == list(out_shape):
            out.append(a)
            continue
        if dims_attr is not None and a.ndim < len(out_shape):
            from .handlers import ints

            dims = ints(dims_attr)
        else:
            dims = list(range(len(out_shape) - a.ndim, len(out_shape)))
        if len(dims) != a.ndim:
            raise SpecError(op.name, "", f"cannot broadcast {a.shape} to {out_shape}")
        # size-1 dims stretch: broadcast_in_dim allows operand dim 1 -> any size
        out.append(xo.broadcast_in_dim(a, dims, list(out_shape)))
    return out


def _out_shape(op, args):
    shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
    try:
        return list(np.broadcast_shapes(*shapes))
    except ValueError:
        t = op.result_types[0] if op.result_types else None
        if t is not None and getattr(t, "is_static", False):
            return list(t.shape)
        raise SpecError(op.name, "", f"operand shapes {shapes} do not broadcast") from None


def _broadcasting(fn):
    def handler(ctx, op, args):
        shape = _out_shape(op, args)
        return fn(ctx, op, _broadcast_operands(op, args, shape))

    handler.__name__ = f"broadcasting_{getattr(fn, '__name__', 'op')}"
    return handler


def _xo_binary(name):
    def run(ctx, op, args):
        return getattr(xo, name)(*args)

    run.__name__ = name
    return run


def _compare(ctx, op, args):
    from .handlers import enum

    return xo.compare(
        args[0],
        args[1],
        enum(op.attrs.get("comparison_direction")),
        compare_type=enum(op.attrs.get("compare_type")),
    )


def _unary(fn):
    def handler(ctx, op, args):
        return fn(args[0])

    handler.__name__ = f"run_{fn.__name__}"
    return handler


def _binary(fn):
    def handler(ctx, op, args):
        return fn(args[0], args[1])

    handler.__name__ = f"run_{fn.__name__}"
    return handler


def _constant_like(ctx, op, args):
    x = args[0]
    v = op.attrs.get("value")
    from .ir import DenseAttr
    from .literals import constant_tensor

    if isinstance(v, DenseAttr):
        v = constant_tensor(v).tolist()
    return xo.broadcast_in_dim(xo.constant(v, x.dtype), [], list(x.shape))


_BINARY_XO = {
    "add": "add",
    "atan2": "atan2",
    "divide": "divide",
    "maximum": "maximum",
    "minimum": "minimum",
    "multiply": "multiply",
    "power": "power",
    "remainder": "remainder",
    "shift_left": "shift_left",
    "shift_right_arithmetic": "shift_right_arithmetic",
    "shift_right_logical": "shift_right_logical",
    "subtract": "subtract",
    "and": "and_",
    "or": "or_",
    "xor": "xor",
    "complex": "complex",
}

# name -> (handler, xo functions it needs)
CHLO_MATH_OPS = {}
for _f in _UNARY_OPS:
    CHLO_MATH_OPS[_f.op_name] = (_unary(_f), [])
for _f in (is_inf, is_pos_inf, is_neg_inf, conj):
    CHLO_MATH_OPS[f"chlo.{_f.__name__}"] = (_unary(_f), ["compare"])
for _f in (polygamma, zeta, next_after):
    CHLO_MATH_OPS[_f.op_name] = (_broadcasting(_binary(_f)), [])
    CHLO_MATH_OPS[f"chlo.broadcast_{_f.op_name[5:]}"] = CHLO_MATH_OPS[_f.op_name]
for _n, _x in _BINARY_XO.items():
    CHLO_MATH_OPS[f"chlo.broadcast_{_n}"] = (_broadcasting(_xo_binary(_x)), [_x])
CHLO_MATH_OPS["chlo.broadcast_compare"] = (_broadcasting(_compare), ["compare"])
CHLO_MATH_OPS["chlo.broadcast_select"] = (
    _broadcasting(lambda ctx, op, args: xo.select(*args)),
    ["select"],
)
CHLO_MATH_OPS["chlo.constant_like"] = (_constant_like, ["broadcast_in_dim"])
