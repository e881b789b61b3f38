"""Gradient rules of the elementwise and conversion ops.

Real rules: central finite differences in float64 (tests/gradcheck.py), first order for
every rule and second order (a Hessian-vector product through the rules' own rules) for
the smooth ones, on inputs kept away from singularities and kinks. Complex rules follow
``jax.vjp`` (no conjugation: a holomorphic f sends g back as g * f'(z)); they are checked
against finite differences in that pairing, Re sum(ct * dz) = Re sum(u * J dz), and
against ``jax.vjp`` itself where JAX is installed. Kinks (ties, clamp boundaries, abs at
0, pow at 0) are pinned to JAX's choices.
"""

import numpy as np
import pytest

import xops as xo
from xops.ops import conversion as _conversion
from xops.ops import elementwise as _elementwise

from gradcheck import check_grads

RNG = np.random.default_rng(1234)
N = 7


def _normal(n=N):
    return RNG.standard_normal(n)


def _pos(n=N, lo=0.5, hi=2.0):
    return RNG.uniform(lo, hi, n)


def _away0(n=N, lo=0.5, hi=2.0):
    return RNG.uniform(lo, hi, n) * RNG.choice([-1.0, 1.0], n)


def _cnormal(n=N):
    return RNG.standard_normal(n) + 1j * RNG.standard_normal(n)


def _cpos(n=N):
    """Complex values in the right half plane, |z| in [0.5, 2]: away from branch cuts."""
    r, t = RNG.uniform(0.5, 2.0, n), RNG.uniform(-1.2, 1.2, n)
    return r * np.exp(1j * t)


def _off_integers(n=N):
    """Values at least 0.2 from every integer and every half integer."""
    return RNG.integers(-4, 4, n) + RNG.choice([0.2, 0.3, 0.7, 0.8], n)


# ---------------------------------------------------------------------------------------
# Every public op is a primitive
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mod", [_elementwise, _conversion], ids=["elementwise", "conversion"])
def test_every_public_op_is_a_primitive(mod):
    for name in mod.__all__:
        op = getattr(xo, name)
        assert hasattr(op, "op_name"), f"xo.{name} is not a @primitive: it would cut the graph"
        assert op.op_name == name.rstrip("_"), (name, op.op_name)


def test_every_float_op_has_a_rule_except_bitcast_convert():
    no_rule = {
        n for mod in (_elementwise, _conversion) for n in mod.__all__ if getattr(xo, n)._vjp is None
    }
    # integer / boolean results never record a node; bitcast_convert has no gradient
    assert no_rule == {
        "is_finite",
        "not_",
        "popcnt",
        "count_leading_zeros",
        "and_",
        "or_",
        "xor",
        "shift_left",
        "shift_right_arithmetic",
        "shift_right_logical",
        "compare",
        "bitcast_convert",
    }


# ---------------------------------------------------------------------------------------
# Real rules against finite differences
# ---------------------------------------------------------------------------------------

UNARY_SMOOTH = [
    ("abs", xo.abs, _away0),
    ("negate", xo.negate, _normal),
    ("exponential", xo.exponential, _normal),
    ("exponential_minus_one", xo.exponential_minus_one, _normal),
    ("log", xo.log, _pos),
    ("log_plus_one", xo.log_plus_one, lambda: _pos(lo=-0.5, hi=2.0)),
    ("logistic", xo.logistic, lambda: 3 * _normal()),
    ("sqrt", xo.sqrt, _pos),
    ("rsqrt", xo.rsqrt, _pos),
    ("cbrt", xo.cbrt, _away0),
    ("sine", xo.sine, lambda: 3 * _normal()),
    ("cosine", xo.cosine, lambda: 3 * _normal()),
    ("tan", xo.tan, lambda: RNG.uniform(-1.2, 1.2, N)),
    ("tanh", xo.tanh, lambda: 2 * _normal()),
    ("erf", xo.erf, lambda: 1.5 * _normal()),
    ("real", xo.real, _normal),
    ("imag", xo.imag, _normal),
]


@pytest.mark.parametrize("name,fn,gen", UNARY_SMOOTH, ids=[u[0] for u in UNARY_SMOOTH])
def test_unary_rules_first_and_second_order(name, fn, gen):
    check_grads(fn, [gen()], order=2)


PIECEWISE_CONSTANT = [xo.sign, xo.floor, xo.ceil, xo.round_nearest_afz, xo.round_nearest_even]


@pytest.mark.parametrize("fn", PIECEWISE_CONSTANT, ids=lambda f: f.op_name)
def test_piecewise_constant_ops_give_zeros(fn):
    check_grads(fn, [_off_integers()])  # finite differences: 0 away from the jumps
    # exactly zero everywhere, at the jumps too (never an error, never a NaN)
    x = xo.tensor([-2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, np.inf], "f64")
    g = xo.vjp(fn, x)[1](xo.tensor(np.full(9, 3.0)))[0]
    assert g.dtype == xo.float64 and g.tolist() == [0.0] * 9
    g32 = xo.grad(lambda t: xo.add(fn(t), t))(xo.tensor(0.5, "f32"))
    assert g32.dtype == xo.float32 and g32.item() == 1.0


def _sep_pair(n=N, gap=0.3):
    """Two arrays whose entries differ by at least ``gap`` (no ties)."""
    a = _normal(n)
    return a, a + RNG.uniform(gap, 1.0, n) * RNG.choice([-1.0, 1.0], n)


def _remainder_args():
    y = _away0(lo=0.7, hi=1.5)
    q = RNG.integers(-3, 4, N) + RNG.uniform(0.2, 0.8, N)  # x / y away from integers
    return q * y, y


BINARY = [
    ("add", xo.add, lambda: (_normal(), _normal()), 2),
    ("subtract", xo.subtract, lambda: (_normal(), _normal()), 2),
    ("multiply", xo.multiply, lambda: (_normal(), _normal()), 2),
    ("divide", xo.divide, lambda: (_normal(), _away0()), 2),
    ("remainder", xo.remainder, _remainder_args, 2),
    ("power", xo.power, lambda: (_pos(), 2 * _normal()), 2),
    (
        "power_neg_base_int_exp",
        xo.power,
        lambda: (_away0(), RNG.integers(-3, 4, N).astype(np.float64)),
        1,
    ),
    ("maximum", xo.maximum, _sep_pair, 2),
    ("minimum", xo.minimum, _sep_pair, 2),
    ("atan2", xo.atan2, lambda: (_normal(), _normal()), 2),
]


@pytest.mark.parametrize("name,fn,gen,order", BINARY, ids=[b[0] for b in BINARY])
def test_binary_rules(name, fn, gen, order):
    if name == "power_neg_base_int_exp":
        # d/dx only: x < 0 with integer y is smooth in x (the exponent's log(x) is NaN)
        x, y = gen()
        check_grads(lambda a: fn(a, xo.tensor(y)), [x], order=2)
        return
    check_grads(fn, list(gen()), order=order)


def test_select_and_clamp_finite_differences():
    p = xo.tensor(RNG.random(N) < 0.5)
    check_grads(lambda a, b: xo.select(p, a, b), [_normal(), _normal()], order=2)
    check_grads(lambda a, b: xo.select(xo.tensor(True), a, b), [_normal(), _normal()])
    x = np.array([-2.0, -0.7, 0.1, 0.4, 1.3, 2.2, -1.6])
    lo = np.array([-1.0, -1.0, -0.5, 0.6, -1.0, 0.0, -1.2])
    hi = np.array([1.0, 1.0, 0.5, 0.9, 1.0, 1.9, 1.0])
    check_grads(xo.clamp, [lo, x, hi], order=2)
    check_grads(lambda a, b, c: xo.clamp(a, b, c), [np.array(-0.5), x, np.array(1.0)], order=2)


def test_second_order_through_products_of_ops():
    def f(x, y):
        return xo.multiply(xo.sine(xo.multiply(x, y)), xo.exponential(xo.divide(x, y)))

    check_grads(f, [_normal(), _away0()], order=2)
    g = lambda x: xo.power(xo.add(xo.logistic(x), 0.5), xo.tanh(x))  # noqa: E731
    check_grads(g, [_normal()], order=2)
    # third order of a scalar function, by nesting xo.grad: d^3/dx^3 log(x) = 2 / x^3
    d3 = xo.grad(xo.grad(xo.grad(lambda x: xo.log(x))))(xo.tensor(1.5, "f64"))
    np.testing.assert_allclose(d3.item(), 2 / 1.5**3, rtol=1e-12)
    # d^2/dx^2 sqrt(x) = -x^(-3/2) / 4; d^2/dx^2 erf(x) = -4x e^(-x^2) / sqrt(pi)
    np.testing.assert_allclose(
        xo.grad(xo.grad(xo.sqrt))(xo.tensor(2.0, "f64")).item(), -0.25 * 2.0**-1.5, rtol=1e-12
    )
    np.testing.assert_allclose(
        xo.grad(xo.grad(xo.erf))(xo.tensor(0.7, "f64")).item(),
        -4 * 0.7 * np.exp(-0.49) / np.sqrt(np.pi),
        rtol=1e-12,
    )


def test_weak_scalar_operands():
    x = xo.tensor([0.5, 1.5, 3.0], "f64")
    v = np.array([0.5, 1.5, 3.0])
    cases = [
        (lambda t: xo.power(t, 2.0), 2 * v),
        (lambda t: xo.power(2.0, t), np.log(2.0) * 2.0**v),
        (lambda t: xo.divide(1.0, t), -1 / v**2),
        (lambda t: xo.divide(t, 4.0), np.full(3, 0.25)),
        (lambda t: xo.atan2(1.0, t), -1 / (1 + v**2)),
        (lambda t: xo.atan2(t, 2.0), 2 / (4 + v**2)),
        (lambda t: xo.remainder(t, 1.0), np.ones(3)),
        (lambda t: xo.remainder(7.0, t), -np.trunc(7.0 / v)),
        (lambda t: xo.maximum(t, 1.0), [0.0, 1.0, 1.0]),
        (lambda t: xo.minimum(1.5, t), [1.0, 0.5, 0.0]),
        (lambda t: xo.clamp(1.0, t, 2.0), [0.0, 1.0, 0.0]),
        (lambda t: xo.select(xo.tensor([True, False, True]), t, 0.0), [1.0, 0.0, 1.0]),
        (lambda t: xo.complex(t, 0.0), np.ones(3)),
        (lambda t: t**3 / 3.0 - 1.0 / t, v**2 + 1 / v**2),  # Python operators
    ]
    for f, want in cases:
        out, fn = xo.vjp(f, x)
        ct = xo.tensor(np.ones(3), out.dtype.name)
        g = fn(ct)[0]
        assert g.dtype == xo.float64
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-15)


def test_gradients_keep_the_operand_type():
    for dt in ["f32", "bf16", "f16"]:
        x = xo.tensor([0.5, 1.0, 2.0], dt)
        fns = [
            xo.exponential,
            xo.log,
            xo.sqrt,
            xo.tanh,
            xo.erf,
            xo.abs,
            xo.floor,
            lambda t: xo.maximum(t, 1.0),
            lambda t: xo.power(t, t),
            lambda t: xo.atan2(t, 1.0),
            lambda t: xo.clamp(0.7, t, 1.5),
        ]
        for f in fns:
            out, fn = xo.vjp(f, x)
            g = fn(xo.tensor([1.0, 1.0, 1.0], dt))[0]
            assert g.dtype == x.dtype and g.shape == (3,)
    g = xo.grad(lambda t: xo.exponential(t))(xo.tensor(1.0, "bf16"))
    assert g.dtype == xo.bfloat16 and abs(float(g.item()) - np.e) < 0.02


# ---------------------------------------------------------------------------------------
# Kinks: ties, boundaries, zeros
# ---------------------------------------------------------------------------------------


def test_maximum_minimum_ties_split_evenly():
    a = xo.tensor([1.0, 2.0, 3.0, -0.0, np.nan], "f64")
    b = xo.tensor([1.0, 5.0, 3.0, 0.0, 1.0], "f64")
    u = xo.tensor([2.0, 2.0, 4.0, 6.0, 1.0], "f64")
    for op in (xo.maximum, xo.minimum):
        ga, gb = xo.vjp(op, a, b)[1](u)
        first = 0.0 if op is xo.maximum else 2.0  # 2 vs 5: max takes b, min takes a
        assert ga.tolist() == [1.0, first, 2.0, 3.0, 0.0]  # ties (-0 vs +0 too): g/2 each
        assert gb.tolist() == [1.0, 2.0 - first, 2.0, 3.0, 0.0]  # NaN: nothing flows
    # the same tensor on both sides gets the whole cotangent
    x = xo.tensor([1.5, -2.0], "f64")
    g = xo.vjp(lambda t: xo.maximum(t, t), x)[1](xo.tensor([1.0, 3.0], "f64"))[0]
    assert g.tolist() == [1.0, 3.0]
    # the sum of both gradients is g: d/dt max(t, t + 0) along the tie
    g = xo.grad(lambda t: xo.minimum(t, xo.multiply(t, 1.0)))(xo.tensor(2.0, "f64"))
    assert g.item() == 1.0


def test_clamp_gradients_exact():
    x = xo.tensor([-3.0, -1.0, 0.0, 1.0, 3.0, 0.5], "f64")
    lo = xo.tensor([-1.0, -1.0, -1.0, -1.0, -1.0, 2.0], "f64")  # last: min > max
    hi = xo.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], "f64")
    u = xo.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "f64")
    g_lo, g_x, g_hi = xo.vjp(xo.clamp, lo, x, hi)[1](u)
    # strictly inside -> operand; x < min < max -> min; x > max -> max; boundaries: none
    assert g_x.tolist() == [0.0, 0.0, 3.0, 0.0, 0.0, 0.0]
    assert g_lo.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert g_hi.tolist() == [0.0, 0.0, 0.0, 0.0, 5.0, 0.0]
    # 0-d min and max: their gradients are summed
    g_lo, g_x, g_hi = xo.vjp(xo.clamp, xo.tensor(-1.0, "f64"), x, xo.tensor(1.0, "f64"))[1](u)
    assert g_lo.shape == () and g_lo.item() == 1.0
    assert g_hi.shape == () and g_hi.item() == 5.0
    assert g_x.tolist() == [0.0, 0.0, 3.0, 0.0, 0.0, 6.0]


def test_select_gradients_exact():
    p = xo.tensor([True, False, True])
    a, b = xo.tensor([1.0, 2.0, 3.0], "f64"), xo.tensor([4.0, 5.0, 6.0], "f64")
    u = xo.tensor([7.0, 8.0, 9.0], "f64")
    ga, gb = xo.vjp(lambda s, t: xo.select(p, s, t), a, b)[1](u)
    assert ga.tolist() == [7.0, 0.0, 9.0] and gb.tolist() == [0.0, 8.0, 0.0]
    ga, gb = xo.vjp(lambda s, t: xo.select(xo.tensor(False), s, t), a, b)[1](u)  # 0-d pred
    assert ga.tolist() == [0.0, 0.0, 0.0] and gb.tolist() == [7.0, 8.0, 9.0]
    # the pred gets nothing, also when it comes from the operands themselves
    g = xo.grad(lambda t: xo.select(xo.compare(t, 2.0, "GT"), t, xo.multiply(t, t)))(
        xo.tensor(1.5, "f64")
    )
    assert g.item() == 3.0


def test_abs_and_power_at_zero():
    x = xo.tensor([-0.0, 0.0, -2.0], "f64")
    assert xo.vjp(xo.abs, x)[1](xo.tensor([1.0, 1.0, 1.0], "f64"))[0].tolist() == [1.0, 1.0, -1.0]
    z = xo.tensor([0j, 3 + 4j], "c128")
    assert xo.vjp(xo.abs, z)[1](xo.tensor([1.0, 1.0], "f64"))[0].tolist() == [0j, 0.6 - 0.8j]
    gx, gy = xo.vjp(xo.power, xo.tensor([0.0, 2.0], "f64"), xo.tensor([2.0, 3.0], "f64"))[1](
        xo.tensor([1.0, 1.0], "f64")
    )
    assert gx.tolist() == [0.0, 12.0]
    assert gy.tolist() == [0.0, pytest.approx(8 * np.log(2.0), rel=1e-15)]  # log(0) read as 0


def test_remainder_rhs_gradient_is_minus_trunc():
    x, y = xo.tensor([5.5, -5.5, 7.0], "f64"), xo.tensor([2.0, 2.0, -3.0], "f64")
    gx, gy = xo.vjp(xo.remainder, x, y)[1](xo.tensor([1.0, 1.0, 1.0], "f64"))
    assert gx.tolist() == [1.0, 1.0, 1.0] and gy.tolist() == [-2.0, 2.0, 2.0]


# ---------------------------------------------------------------------------------------
# Complex rules (jax.vjp convention)
# ---------------------------------------------------------------------------------------


def _pair(a, b):
    """JAX's pairing: Re sum(a * b), no conjugate (real values are complex with 0 imag)."""
    return float(np.sum(np.real(np.asarray(a, np.complex128) * np.asarray(b, np.complex128))))


def _rand_like(a):
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return RNG.standard_normal(a.shape) + 1j * RNG.standard_normal(a.shape)
    return RNG.standard_normal(a.shape)


def check_vjp_jax_convention(f, args, eps=1e-6, rtol=1e-6, atol=1e-8):
    """Finite differences in JAX's pairing: Re sum(ct * dz) == Re sum(u * J dz)."""
    args = [np.asarray(a) for a in args]
    out, fn = xo.vjp(f, *[xo.tensor(a) for a in args])
    u = _rand_like(out)
    dirs = [_rand_like(a) for a in args]
    cts = fn(xo.tensor(u.astype(np.asarray(out).dtype)))
    reverse = sum(_pair(c, d) for c, d in zip(cts, dirs))
    plus = np.asarray(f(*[xo.tensor(a + eps * d) for a, d in zip(args, dirs)]))
    minus = np.asarray(f(*[xo.tensor(a - eps * d) for a, d in zip(args, dirs)]))
    forward = _pair(u, (plus - minus) / (2 * eps))
    assert np.isclose(reverse, forward, rtol=rtol, atol=atol), (reverse, forward)


# (name, xops fn, jax.lax fn name or callable, input generators)
COMPLEX = [
    ("exponential", xo.exponential, "exp", [_cnormal]),
    ("log", xo.log, "log", [_cpos]),
    ("sine", xo.sine, "sin", [_cnormal]),
    ("cosine", xo.cosine, "cos", [_cnormal]),
    ("tan", xo.tan, "tan", [lambda: 0.5 * _cnormal()]),
    ("tanh", xo.tanh, "tanh", [lambda: 0.5 * _cnormal()]),
    ("sqrt", xo.sqrt, "sqrt", [_cpos]),
    ("rsqrt", xo.rsqrt, "rsqrt", [_cpos]),
    ("log_plus_one", xo.log_plus_one, "log1p", [lambda: _cpos() - 0.3]),
    ("exponential_minus_one", xo.exponential_minus_one, "expm1", [_cnormal]),
    ("logistic", xo.logistic, "logistic", [_cnormal]),
    ("cbrt", xo.cbrt, lambda lax, z: lax.pow(z, np.array(1 / 3, z.dtype)), [_cpos]),
    ("negate", xo.negate, "neg", [_cnormal]),
    ("abs", xo.abs, "abs", [_cnormal]),
    ("real", xo.real, "real", [_cnormal]),
    ("imag", xo.imag, "imag", [_cnormal]),
    ("add", xo.add, "add", [_cnormal, _cnormal]),
    ("subtract", xo.subtract, "sub", [_cnormal, _cnormal]),
    ("multiply", xo.multiply, "mul", [_cnormal, _cnormal]),
    ("divide", xo.divide, "div", [_cnormal, _cpos]),
    ("power", xo.power, "pow", [_cpos, _cnormal]),
    ("atan2", xo.atan2, "atan2", [_cpos, _cpos]),
    ("complex", xo.complex, "complex", [_normal, _normal]),
    (
        "select",
        lambda a, b: xo.select(xo.tensor([True, False] * 3 + [True]), a, b),
        lambda lax, a, b: lax.select(np.array([True, False] * 3 + [True]), a, b),
        [_cnormal, _cnormal],
    ),
]


@pytest.mark.parametrize("name,fn,ref,gens", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_rules_finite_differences(name, fn, ref, gens):
    args = [g() for g in gens]
    check_vjp_jax_convention(fn, args)
    check_grads(fn, args, order=2)  # the same pairing, plus a Hessian-vector product


@pytest.fixture(scope="module")
def jax_lax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("name,fn,ref,gens", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_rules_match_jax_vjp(jax_lax, name, fn, ref, gens):
    jax, lax = jax_lax, jax_lax.lax
    ref_fn = getattr(lax, ref) if isinstance(ref, str) else (lambda *a: ref(lax, *a))
    for dtype in ("c128", "c64"):
        args = [g() for g in gens]
        real_dt = np.float64 if dtype == "c128" else np.float32
        cplx_dt = np.complex128 if dtype == "c128" else np.complex64
        args = [a.astype(cplx_dt if a.dtype.kind == "c" else real_dt) for a in args]
        out, fn_x = xo.vjp(fn, *[xo.tensor(a) for a in args])
        u = _rand_like(out).astype(np.asarray(out).dtype)
        got = fn_x(xo.tensor(u))
        want = jax.vjp(ref_fn, *args)[1](u)
        tol = 1e-12 if dtype == "c128" else 2e-5
        for g, w, a in zip(got, want, args):
            assert g.numpy().dtype == a.dtype
            np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=tol, atol=tol)


COMPLEX_2ND = [
    "exponential",
    "log",
    "sine",
    "cosine",
    "tan",
    "tanh",
    "sqrt",
    "rsqrt",
    "logistic",
    "log_plus_one",
    "exponential_minus_one",
    "cbrt",
    "abs",
    "multiply",
    "divide",
    "power",
    "atan2",
]


@pytest.mark.parametrize("name", COMPLEX_2ND)
def test_complex_second_order_matches_jax(jax_lax, name):
    """The gradient of s = Re sum(vjp(u) * w) (a Hessian-vector product) against JAX."""
    jax, lax = jax_lax, jax_lax.lax
    _, fn, ref, gens = next(c for c in COMPLEX if c[0] == name)
    ref_fn = getattr(lax, ref) if isinstance(ref, str) else (lambda *a: ref(lax, *a))
    args = [g() for g in gens]
    u = _cnormal()
    ws = [_cnormal() for _ in args]

    def s_xo(*xs):
        cts = xo.vjp(fn, *xs)[1](xo.tensor(u if name != "abs" else u.real))
        total = None
        for c, w in zip(cts, ws):
            term = xo.real(xo.multiply(c, xo.tensor(w)))
            total = term if total is None else xo.add(total, term)
        return total  # a vector: its vjp with ones is the gradient of its sum

    def s_jax(*xs):
        cts = jax.vjp(ref_fn, *xs)[1](u if name != "abs" else u.real)
        return sum(lax.real(c * w) for c, w in zip(cts, ws))

    ones = np.ones(N)
    got = xo.vjp(s_xo, *[xo.tensor(a) for a in args])[1](xo.tensor(ones))
    want = jax.vjp(s_jax, *args)[1](ones)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Real rules against jax.vjp: pins the kink conventions
# ---------------------------------------------------------------------------------------


def test_real_kinks_match_jax_vjp(jax_lax):
    jax, lax = jax_lax, jax_lax.lax
    u = RNG.standard_normal(6)
    x = np.array([-1.0, 0.0, -0.0, 1.0, 1.0, 2.5])
    y = np.array([-1.0, 0.0, 0.0, 2.0, 1.0, -1.0])
    cases = [
        (xo.abs, lax.abs, [x]),
        (xo.maximum, lax.max, [x, y]),
        (xo.minimum, lax.min, [x, y]),
        (xo.power, lax.pow, [np.abs(x), y]),
        (xo.sign, lax.sign, [x]),
        (xo.clamp, lax.clamp, [np.full(6, -1.0), x, np.full(6, 1.0)]),
        (xo.remainder, lax.rem, [x + 3.3, np.array([2.0, 1.5, -1.5, 0.7, 1.1, -2.0])]),
        (xo.atan2, lax.atan2, [x, y + 3.0]),
    ]
    for f, ref, args in cases:
        got = xo.vjp(f, *[xo.tensor(a) for a in args])[1](xo.tensor(u))
        want = jax.vjp(ref, *args)[1](u)
        for g, w in zip(got, want):
            np.testing.assert_allclose(
                g.numpy(), np.asarray(w), rtol=1e-13, atol=0, err_msg=f.op_name
            )


# ---------------------------------------------------------------------------------------
# Conversion ops
# ---------------------------------------------------------------------------------------


def test_convert_float_round_trips():
    x32 = xo.tensor([0.1, -2.5, 3.0], "f32")
    u = xo.tensor([1.0, 0.3, 2.0], "f32")
    for mid in ("f64", "bf16", "f16", "f32"):
        out, fn = xo.vjp(lambda t: xo.convert(xo.convert(t, mid), "f32"), x32)
        g = fn(u)[0]
        assert g.dtype == xo.float32
        # the cotangent rounds to ``mid`` on its way back, as the value did
        want = xo.convert(xo.convert(u, mid), "f32")
        assert g.tolist() == want.tolist()
    g = xo.vjp(lambda t: xo.convert(t, "f64"), x32)[1](xo.tensor([0.1, 0.2, 0.3], "f64"))[0]
    assert g.dtype == xo.float32 and g.tolist() == np.array([0.1, 0.2, 0.3], np.float32).tolist()
    check_grads(
        lambda t: xo.multiply(xo.convert(xo.convert(t, "f32"), "f64"), t),
        [_normal()],
        order=2,
        rtol=1e-4,
        eps=1e-3,
    )


def test_convert_complex():
    x = xo.tensor([1.0, -2.0], "f32")
    z = xo.tensor([1 + 2j, -3 + 0.5j], "c64")
    # real -> complex: the cotangent's real part comes back
    g = xo.vjp(lambda t: xo.convert(t, "c64"), x)[1](xo.tensor([2 + 5j, 1 - 1j], "c64"))[0]
    assert g.dtype == xo.float32 and g.tolist() == [2.0, 1.0]
    # complex -> real keeps the real part: the cotangent comes back as complex(g, 0)
    g = xo.vjp(lambda t: xo.convert(t, "f32"), z)[1](xo.tensor([2.0, 3.0], "f32"))[0]
    assert g.dtype == xo.complex64 and g.tolist() == [2 + 0j, 3 + 0j]
    # c64 -> c128 -> c64 round trip
    g = xo.vjp(lambda t: xo.convert(xo.convert(t, "c128"), "c64"), z)[1](
        xo.tensor([1 + 1j, 2 - 1j], "c64")
    )[0]
    assert g.dtype == xo.complex64 and g.tolist() == [1 + 1j, 2 - 1j]
    check_vjp_jax_convention(lambda t: xo.convert(t, "f64"), [_cnormal()])
    check_vjp_jax_convention(lambda t: xo.convert(t, "c128"), [_normal()])


def test_convert_to_and_from_integers_carries_no_gradient():
    x = xo.tensor([1.7, -2.2, 3.5], "f64")
    assert not xo.convert(xo.tensor([1.0], requires_grad=True), "i32").requires_grad
    assert not xo.convert(xo.tensor([1.0], requires_grad=True), "i1").requires_grad
    # the path through the integer tensor is cut: only the direct one counts
    out, fn = xo.vjp(lambda t: xo.multiply(xo.convert(xo.convert(t, "i32"), "f64"), t), x)
    assert fn(xo.tensor([1.0, 1.0, 1.0], "f64"))[0].tolist() == [1.0, -2.0, 3.0]


def test_reduce_precision_is_identity_like():
    x = xo.tensor([0.1, 1.0 / 3, 100.0], "f64")
    u = xo.tensor([1.0 / 3, 0.1, 7.0], "f64")
    g = xo.vjp(lambda t: xo.reduce_precision(t, 5, 10), x)[1](u)[0]
    assert g.tolist() == xo.reduce_precision(u, 5, 10).tolist()  # as jax.lax.reduce_precision
    g = xo.vjp(lambda t: xo.reduce_precision(t, 11, 52), x)[1](u)[0]
    assert g.tolist() == u.tolist()


def test_no_rule_is_a_spec_error_naming_the_op():
    x = xo.tensor([1.0, 2.0], "f64", requires_grad=True)
    y = xo.bitcast_convert(x, "f32")  # f32[2, 2]: float bits reinterpreted
    assert y.requires_grad
    with pytest.raises(xo.SpecError, match=r"^bitcast_convert \(grad\): no gradient rule"):
        xo.multiply(y, 2.0).backward(xo.tensor(np.ones((2, 2)), "f32"))
    out, fn = xo.vjp(
        lambda t: xo.exponential(xo.bitcast_convert(t, "f32")), xo.tensor([1.0], "f64")
    )
    with pytest.raises(xo.SpecError, match="bitcast_convert"):
        fn(xo.tensor(np.ones((1, 2)), "f32"))
    # integer views record nothing at all: no error, no gradient path
    assert not xo.bitcast_convert(x, "i64").requires_grad


def test_integer_and_boolean_results_record_nothing():
    x = xo.tensor([0.5, -1.0, np.inf], "f64", requires_grad=True)
    for out in (xo.compare(x, 0.0, "GT"), xo.is_finite(x)):
        assert not out.requires_grad and out._node is None


def test_clamp_0d_bounds_second_order():
    x = np.array([-2.0, -0.7, 0.1, 0.4, 1.3, 2.2, -1.6])
    f = lambda lo, t, hi: xo.multiply(xo.clamp(lo, t, hi), xo.clamp(lo, t, hi))  # noqa: E731
    check_grads(f, [np.array(-0.5), x, np.array(1.0)], order=2)
