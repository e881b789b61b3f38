"""c64 and c128 elementwise ops on the device (xops/kernels/cuda: elementwise, complex,
_complex_math), and dot_general's GEMM in complex arithmetic (linalg), each compared
with the CPU op.

Bit for bit: add, subtract, negate, real, imag, complex, compare EQ/NE, select and every
convert (moves, or one rounding per part). Within a stated tolerance (NumPy's formulas,
computed in the part type; a GPU may contract a multiply-add, and libdevice's float
functions differ from the CPU's by an ulp): multiply, divide, abs, exponential, log and
sqrt, |dev - cpu| <= tol * (|cpu| + 1) with tol 2e-6 for c64 and 1e-14 for c128, on
finite values of moderate size; sign, power, tanh, sine, cosine, tan,
exponential_minus_one, log_plus_one, rsqrt and logistic part by part within a few ulp of
|cpu| on a grid (see _near), their special values bit for bit. Tiny shapes: the
simulator runs a Python thread per CUDA thread.
"""

import numpy as np
import pytest
from cuda_support import SIM, cu, needs_cuda

import xops as xo

pytestmark = needs_cuda

_rng = np.random.default_rng(41)
_TOL = {"c64": 2e-6, "c128": 1e-14, "f32": 2e-6, "f64": 1e-14}
COMPLEX = ("c64", "c128")


def _z(dt, n=8):
    v = _rng.standard_normal(n) * 2 + 1j * _rng.standard_normal(n) * 2
    v[:4] = [1.5 + 0j, -2.0 + 0j, 0.0 - 3.0j, -0.5 - 0.25j]  # real, negative real, axes
    return v.astype(np.complex64 if dt == "c64" else np.complex128)


def _exact(dev, ref):
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = np.atleast_1d(dev.numpy()), np.atleast_1d(ref.numpy())  # (0-d: no view)
    if a.dtype.kind in "fc":  # bits (NaN payloads included)
        a, b = (
            a.view(f"u{a.dtype.itemsize // (2 if a.dtype.kind == 'c' else 1)}"),
            b.view(f"u{b.dtype.itemsize // (2 if b.dtype.kind == 'c' else 1)}"),
        )
    np.testing.assert_array_equal(a, b)


def _close(dev, ref):
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    tol = _TOL[ref.dtype.name]
    np.testing.assert_allclose(dev.numpy(), ref.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", COMPLEX)
def test_arithmetic(dt):
    a, b = _z(dt), _z(dt)[::-1].copy()
    ha, hb = xo.tensor(a), xo.tensor(b)
    da, db = ha.to("cuda"), hb.to("cuda")
    for op in (xo.add, xo.subtract):
        _exact(op(da, db), op(ha, hb))
    _exact(xo.negate(da), xo.negate(ha))
    for op in (xo.multiply, xo.divide):
        _close(op(da, db), op(ha, hb))
    # weak Python scalars and a 0-d operand, both sides
    _exact(da + 2.0, ha + 2.0)
    _close(1j * da, 1j * ha)
    _close(xo.divide(2.5 - 1j, da), xo.divide(2.5 - 1j, ha))
    s = xo.tensor(np.array(0.5 - 2j, a.dtype))
    _close(da / s.to("cuda"), ha / s)  # (the operator broadcasts: a c128 move too)
    _exact(xo.broadcast_in_dim(s.to("cuda"), [], [3]), xo.broadcast_in_dim(s, [], [3]))


def test_division_scales_large_and_small_divisors():
    """Smith's division: |divisor| near the type's limits does not overflow."""
    a = np.array([1 + 1j, 3 - 2j, -1e30 + 1e30j], np.complex64)
    b = np.array([1e30 + 1e30j, 1e-30 - 2e-30j, 1e30 - 0j], np.complex64)
    _close(xo.divide(cu(a), cu(b)), xo.divide(xo.tensor(a), xo.tensor(b)))


@pytest.mark.parametrize("dt", COMPLEX)
def test_unary_functions(dt):
    z = _z(dt)
    h = xo.tensor(z)
    d = h.to("cuda")
    for op in (xo.abs, xo.exponential, xo.log, xo.sqrt):
        _close(op(d), op(h))
    assert xo.abs(d).dtype.name == ("f32" if dt == "c64" else "f64")
    for op in (xo.real, xo.imag):
        _exact(op(d), op(h))
    # sqrt's branch: negative reals give +i sqrt(|x|); -0 imaginary parts keep their sign
    w = np.array([-4 + 0j, -4 - 0j, 0j, 9 + 0j], z.dtype)
    w.imag[1] = -0.0
    _exact(xo.sqrt(cu(w)), xo.sqrt(xo.tensor(w)))


def test_real_and_imag_of_real_operands():
    for dt in ("f32", "f64", "bf16"):
        h = xo.convert(xo.tensor(np.array([1.5, -2.0, -0.0], np.float32)), dt)
        d = h.to("cuda")
        _exact(xo.real(d), xo.real(h))
        _exact(xo.imag(d), xo.imag(h))


def test_complex_from_parts():
    re = np.array([1.0, -0.0, np.inf, 2.5], np.float32)
    im = np.array([np.nan, 3.0, -1.0, -0.0], np.float32)
    for dt in (np.float32, np.float64):
        r, i = re.astype(dt), im.astype(dt)
        _exact(xo.complex(cu(r), cu(i)), xo.complex(xo.tensor(r), xo.tensor(i)))
        _exact(xo.complex(cu(r), 0.5), xo.complex(xo.tensor(r), 0.5))
    b = xo.convert(xo.tensor(re), "bf16").to("cuda")
    with pytest.raises(xo.SpecError, match=r"complex \(I1\): lhs must be a tensor of f32 or f64"):
        xo.complex(b, b)
    with pytest.raises(xo.SpecError, match=r"complex \(device\): operands live on different"):
        xo.complex(cu(re), xo.tensor(im))


def test_compare_and_select():
    a = np.array([1 + 2j, 1 + 2j, np.nan + 0j, 3 - 1j, -0.0 + 0j], np.complex64)
    b = np.array([1 + 2j, 1 - 2j, np.nan + 0j, 3 - 1j, 0.0 + 0j], np.complex64)
    ha, hb = xo.tensor(a), xo.tensor(b)
    for direction in ("EQ", "NE"):
        _exact(xo.compare(ha.to("cuda"), hb.to("cuda"), direction), xo.compare(ha, hb, direction))
    p = xo.tensor(np.array([True, False, True, False, True]))
    for t in (ha, xo.convert(ha, "c128")):
        f = xo.negate(t)
        _exact(xo.select(p.to("cuda"), t.to("cuda"), f.to("cuda")), xo.select(p, t, f))


@pytest.mark.parametrize("dt", COMPLEX)
def test_compare_orderings_in_numpys_complex_order(dt):
    """GE / GT / LE / LT (and EQ / NE) of every pair of a grid of parts (signed zeros,
    +-1, +-inf, NaN) as the CPU, which is NumPy's complex order: lexicographic on (real,
    imag), the real parts deciding only where neither imaginary part is NaN; the CPU's
    results are checked against that rule written out here too."""
    parts = np.array([0.0, -0.0, 1.0, -1.0, np.inf, np.nan])
    grid = np.empty(parts.size**2, np.complex128)
    grid.real, grid.imag = np.repeat(parts, parts.size), np.tile(parts, parts.size)
    x = np.repeat(grid, grid.size).astype(np.complex64 if dt == "c64" else np.complex128)
    y = np.tile(grid, grid.size).astype(x.dtype)
    ar, ai, br, bi = x.real, x.imag, y.real, y.imag
    ordered = ~np.isnan(ai) & ~np.isnan(bi)
    rule = {
        "GE": (ar > br) & ordered | (ar == br) & (ai >= bi),
        "GT": (ar > br) & ordered | (ar == br) & (ai > bi),
        "LE": (ar < br) & ordered | (ar == br) & (ai <= bi),
        "LT": (ar < br) & ordered | (ar == br) & (ai < bi),
        "EQ": (ar == br) & (ai == bi),
        "NE": (ar != br) | (ai != bi),
    }
    dx, dy = cu(x), cu(y)
    for direction, want in rule.items():
        ref = xo.compare(xo.tensor(x), xo.tensor(y), direction)
        np.testing.assert_array_equal(ref.numpy(), want)
        _exact(xo.compare(dx, dy, direction), ref)
    _exact(xo.compare(dx, dy, "LT", "FLOAT"), xo.compare(xo.tensor(x), xo.tensor(y), "LT"))


def test_convert():
    z = _z("c128")
    z[5] = 1e300 + 1e-300j  # overflows / underflows the c64 parts
    h = xo.tensor(z)
    d = h.to("cuda")
    for dst in ("c64", "c128", "f32", "f64", "i1", "bf16", "f16"):
        _exact(xo.convert(d, dst), xo.convert(h, dst))
    h64 = xo.convert(h, "c64")
    _exact(xo.convert(h64.to("cuda"), "c128"), xo.convert(h64, "c128"))
    x = np.array([0.1, -2.0, 1e-40, 3e38, -0.0], np.float64)
    for src in ("f64", "f32", "i32", "i1", "bf16", "ui8"):
        t = xo.convert(xo.tensor(x * 7), src)
        for dst in COMPLEX:
            _exact(xo.convert(t.to("cuda"), dst), xo.convert(t, dst))
    _exact(xo.convert(d, "i32"), xo.convert(d.to("cpu"), "i32"))  # (the real part, truncated)


@pytest.mark.parametrize("dt", COMPLEX)
def test_maximum_minimum_clamp_in_numpys_complex_order(dt):
    """maximum, minimum and clamp on the device give the CPU's values bit for bit: (real,
    imag) lexicographically, ties of the real parts decided by the imaginary ones, a NaN
    in the first operand's parts returned as it is, a NaN imaginary part of the second
    operand counting only in a tie, signed zeros as the CPU orders them."""
    nan, inf = np.nan, np.inf
    parts = [0.0, -0.0, 1.0, -1.0, 2.5, nan, inf, -inf]
    grid = np.array([complex(r, i) for r in parts for i in parts])
    a = np.repeat(grid, len(grid)).astype(np.complex64 if dt == "c64" else np.complex128)
    b = np.tile(grid, len(grid)).astype(a.dtype)
    a, b = a[::7].copy(), b[::7].copy()  # (a tenth of the 4096 pairs: simulator threads)
    ha, hb = xo.tensor(a), xo.tensor(b)
    da, db = ha.to("cuda"), hb.to("cuda")
    for op in (xo.maximum, xo.minimum):
        _exact(op(da, db), op(ha, hb))
        _exact(op(db, da), op(hb, ha))
    lo, hi = xo.tensor(np.asarray(-1 + 0.5j, a.dtype)), xo.tensor(np.asarray(2 - 1j, a.dtype))
    _exact(xo.clamp(lo.to("cuda"), da, hi.to("cuda")), xo.clamp(lo, ha, hi))
    _exact(xo.clamp(da, db, da), xo.clamp(ha, hb, ha))  # (full-shape bounds)


def test_ops_without_a_complex_kernel_raise_naming_the_type():
    """Every complex elementwise op the CPU takes has a kernel; another name (as a new op
    would reach it) raises the device error naming the type."""
    from xops.kernels.cuda.elementwise import complex_op

    d = cu(_z("c64"))
    with pytest.raises(
        xo.SpecError, match=r"remainder \(device\): has no cuda kernel for element type c128"
    ):
        complex_op("remainder", cu(_z("c128")), cu(_z("c128")))
    with pytest.raises(xo.SpecError, match=r"add \(device\): operands live on different devices"):
        xo.add(d, xo.tensor(_z("c64")))


# -- sign, power, tanh, sine, cosine, tan, exponential_minus_one, log_plus_one, rsqrt,
# logistic: computed in float64 for both types (the CPU computes complex64 in complex128
# and rounds once), compared part by part within _ULP ulp of the part type times |cpu|
# (c64 power rounds a float64 result once, so it differs from the CPU by at most an ulp of
# each part; c128 power and atan2 are computed more accurately than the CPU: see their
# tests).

_ULP = {"c64": 2, "c128": 8}
_WIDE = (
    xo.sign,
    xo.tanh,
    xo.sine,
    xo.cosine,
    xo.tan,
    xo.exponential_minus_one,
    xo.log_plus_one,
    xo.rsqrt,
    xo.logistic,
)


def _grid(dt):
    """Every (re, im) pair of signed zeros, tiny, moderate and large magnitudes (large:
    30, where cosh, sinh and e^x stay finite in float64; tanh past its rounding to +-1)."""
    tiny = 1e-30 if dt == "c64" else 1e-200
    parts = np.array([0.0, -0.0, tiny, -tiny, 0.3, -0.3, 2.5, -2.5, 30.0, -30.0])
    re, im = np.meshgrid(parts, parts)
    z = np.empty(re.size, np.complex128)
    z.real, z.imag = re.ravel(), im.ravel()
    return z.astype(np.complex64 if dt == "c64" else np.complex128)


def _near(dev, ref, ulp):
    """Same type and shape; NaN where the CPU has NaN, equal infinities, and finite parts
    within ``ulp`` ulp of the part type times |cpu| (each part, both signs of a zero)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy(), ref.numpy()
    _near_values(a, b, ulp)


def _near_values(a, b, ulp, floor=0.0):
    """:func:`_near` of arrays (``ulp`` a number or one per element; ``floor``: an absolute
    allowance added to each bound)."""
    eps = np.finfo(b.real.dtype).eps
    ulp = np.broadcast_to(np.asarray(ulp, np.float64), b.shape)
    for pa, pb in ((a.real, b.real), (a.imag, b.imag)):
        np.testing.assert_array_equal(np.isnan(pa), np.isnan(pb))
        inf = np.isinf(pb)
        np.testing.assert_array_equal(pa[inf], pb[inf])
        fin = np.isfinite(pb)
        lim = ulp[fin] * eps * np.abs(b[fin]).astype(np.float64)
        lim = lim + np.broadcast_to(np.asarray(floor, np.float64), b.shape)[fin]
        err = np.abs(pa[fin].astype(np.float64) - pb[fin])
        assert np.all(err <= lim), (np.max(err / lim), a, b)


@pytest.mark.parametrize("dt", COMPLEX)
def test_wide_unary_functions_on_a_grid(dt):
    h = xo.tensor(_grid(dt))
    d = h.to("cuda")
    for op in _WIDE:
        _near(op(d), op(h), _ULP[dt])


_POWER_EXPONENTS = (2, 3, -1, -2, 5, -7, 1, 0, 12, -3), (
    0.5, -1.5, 1.5 - 0.5j, -0.3 + 2j, 1j, 2.5 + 0j, 0.25 - 1j)  # fmt: skip


def _power_ulp(z, b):
    """c128 power's bound against the CPU, in ulp of |cpu|: 8 + 2 |b| |log a|. The CPU
    rounds w = b log a in float64 (log a's parts within an ulp, the product's roundings),
    an error of up to ~|b| |log a| ulp of 1 in w that e^w turns into a relative error; the
    device puts that error back (see _complex_math._cpow_exact)."""
    with np.errstate(all="ignore"):
        mag = np.abs(b.astype(np.complex128)) * np.abs(np.log(z.astype(np.complex128)))
    return 8 + 2 * np.where(np.isfinite(mag), mag, 0)


def _power_reference(z, b):
    """e^(b log a) in long double (x87's 64-bit significand: b log a within 2^-63 |b log a|,
    a few hundredths of a float64 ulp of the result here), rounded to complex128."""
    ld = np.clongdouble
    with np.errstate(all="ignore"):
        return np.exp(b.astype(ld) * np.log(z.astype(ld))).astype(np.complex128)


@pytest.mark.parametrize("dt", COMPLEX)
def test_power_on_a_grid(dt):
    """npy_cpow on the grid (nonzero bases) with integer exponents (repeated squaring, the
    CPU's products: _ULP ulp) and general ones (e^(b log a)). c64: within _ULP ulp of the
    CPU. c128 general exponents: within 8 + 2 |b| |log a| ulp of |cpu| (_power_ulp: the
    CPU's own rounding of b log a) and within 8 ulp of |ref| of the long double reference
    (_power_reference; plus 4 subnormal steps where the result underflows); measured
    under the simulator: at most 0.96 ulp of |ref| on this grid (|b log a| up to 1151),
    the CPU 405 ulp off, the device within 0.37 of the bound from the CPU."""
    z = _grid(dt)
    z = z[np.abs(z) > 0]  # (0^b is checked below)
    ctype = z.dtype
    ints, cplx = (np.array(e, ctype) for e in _POWER_EXPONENTS)
    for exps in (ints, cplx):
        b = np.resize(exps, z.size)
        h, e = xo.tensor(z), xo.tensor(b)
        got = xo.power(h.to("cuda"), e.to("cuda"))
        if dt == "c64" or exps is ints:
            _near(got, xo.power(h, e), _ULP[dt])
            continue
        _near(got, xo.power(h, e), _power_ulp(z, b))
        _near_values(got.numpy(), _power_reference(z, b), 8, 4 * 2.0**-1074)
    # a^0 = 1 (NaN too); 0^b = 0 where Re b > 0, else NaN + NaN i; a weak scalar exponent
    a = np.array([0, 0, 0, np.nan, 2 - 1j, 0], ctype)
    b = np.array([0, 2.5 + 1j, -1, 0, 0, 1j], ctype)
    _exact(xo.power(cu(a), cu(b)), xo.power(xo.tensor(a), xo.tensor(b)))
    h = xo.tensor(z[:10])
    _near(xo.power(h.to("cuda"), 2.0), xo.power(h, 2.0), _ULP[dt])
    ulp = _ULP[dt] if dt == "c64" else _power_ulp(z[:10], np.full(10, 0.5))
    _near(xo.power(h.to("cuda"), 0.5), xo.power(h, 0.5), ulp)


def _off_by_an_ulp(fn, step):
    """``fn`` whose finite nonzero results are moved ``step`` ulp (+1, -1, or alternately
    +1 and -1 from call to call for 0)."""
    calls = [0]

    def moved(*args):
        r = np.float64(fn(*args))
        if not np.isfinite(r) or r == 0:
            return r
        calls[0] += 1
        up = step > 0 or (step == 0 and calls[0] % 2)
        return np.nextafter(r, np.inf if up else -np.inf)

    return moved


@pytest.mark.skipif(not SIM, reason="patches the simulator's libm (a GPU runs libdevice's)")
@pytest.mark.parametrize("step", (1, -1, 0), ids=("up", "down", "alternating"))
def test_power_c128_stays_accurate_with_libm_off_by_an_ulp(monkeypatch, step):
    """c128 power's general path with every float64 exp, log, log1p, sin, cos, atan2 and
    hypot result of the device code moved by an ulp (the simulator runs NumPy's, which are
    glibc's, the CPU's; libdevice's may differ by an ulp or two): still within 8 ulp of |ref|
    of the long double reference (measured: 2.2 ulp; 0.96 unmoved), while the CPU's
    float64 formula is 405 ulp off on this grid (test_power_on_a_grid's general exponents, |b log a|
    up to ~1150, where the reference is still within an ulp)."""
    from xops.kernels.cuda import _complex_math as CM

    for name in ("_exp", "_log", "_log1p", "_sin", "_cos", "_atan2", "_hypot"):
        monkeypatch.setattr(CM, name, _off_by_an_ulp(getattr(CM, name), step))
    z = _grid("c128")
    z = z[np.abs(z) > 0]
    b = np.resize(np.array(_POWER_EXPONENTS[1], np.complex128), z.size)
    got = xo.power(cu(z), cu(b)).numpy()
    ref = _power_reference(z, b)
    _near_values(got, ref, 8, 4 * 2.0**-1074)
    cpu = xo.power(xo.tensor(z), xo.tensor(b)).numpy()
    fin = np.isfinite(ref) & (ref != 0)
    err = np.abs(cpu[fin] - ref[fin]) / (np.abs(ref[fin]) * np.finfo(np.float64).eps)
    assert err.max() > 100  # (the test would catch the float64 formula)


def _decimal_atan2(y, x):
    """atan2 of Decimals (the context's precision): atan t halved until |t| < 0.01 (atan t =
    2 atan(t / (1 + sqrt(1 + t^2)))), then its Taylor series; the quadrants as glibc."""
    from decimal import Decimal, localcontext

    pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
    with localcontext() as ctx:
        ctx.prec += 10
        if x == 0 and y == 0:
            return Decimal(0)
        t = x / y if abs(y) > abs(x) else y / x
        halvings = 0
        while abs(t) > Decimal("0.01"):
            t = t / (1 + (1 + t * t).sqrt())
            halvings += 1
        total, term, n = Decimal(0), t, 1
        while term != 0 and (total == 0 or abs(term) > abs(total) * Decimal(10) ** -ctx.prec):
            total += term / n
            term *= -t * t
            n += 2
        a = total * 2**halvings
        if abs(y) > abs(x):
            a = pi / 2 - a if y > 0 else -pi / 2 - a
        elif x < 0:
            a = a + pi if y >= 0 else a - pi
        return +a


def _atan2_reference(y, x, near):
    """atan2(y, x) = -i log q (q = (x + iy) / sqrt(x^2 + y^2)) to 40 digits: with u = x + iy,
    v = x - iy (exact, as fractions), q^2 = u / v, so log|q| = log(|u|^2 / |v|^2) / 4 and
    arg q = arg(u conj v) / 2 + k pi, k in -1, 0, 1 the nearest to ``near``'s real part
    (the branch: which side of a cut the CPU's signed zeros put q); rounded to complex128.
    Where u or v is 0 (x^2 + y^2 = 0): ``near``."""
    from decimal import Decimal, localcontext
    from fractions import Fraction as F

    out = np.empty(y.size, np.complex128)
    with localcontext() as ctx:
        ctx.prec = 40
        pairs = zip(y.astype(np.complex128), x.astype(np.complex128), near)
        for n, (yv, xv, cv) in enumerate(pairs):
            xr, xi, yr, yi = (F(float(v)) for v in (xv.real, xv.imag, yv.real, yv.imag))
            ur, ui, vr, vi = xr - yi, xi + yr, xr + yi, xi - yr
            wr, wi = ur * vr + ui * vi, ui * vr - ur * vi
            nu, nv = ur * ur + ui * ui, vr * vr + vi * vi
            if nu == 0 or nv == 0:
                out[n] = cv
                continue

            def dec(f):
                return Decimal(f.numerator) / Decimal(f.denominator)

            half = _decimal_atan2(dec(wi), dec(wr)) / 2
            pi = _decimal_atan2(Decimal(0), Decimal(-1))
            arg = min((half, half - pi, half + pi), key=lambda a: abs(float(a) - cv.real))
            d = dec((nu - nv) / nv)  # (|u|^2 / |v|^2 - 1, to its last digit when small)
            log = sum(d**k / k * (-1) ** (k + 1) for k in range(1, 6)) if abs(d) < 1e-10 else (
                dec(nu / nv).ln())  # fmt: skip
            out[n] = complex(float(arg), float(-log / 4))
    return out


def _atan2_pairs():
    """The grid in two orders, and pairs where x + iy cancels (u = x + iy small: y = i x
    (1 + d), d from 2^-52 to 2^-8) or y is small against x (the result small: its log part
    from |q| ~ 1)."""
    z = _grid("c128")
    ys, xs = [z, z], [z[::-1].copy(), np.roll(z, 7)]
    x = np.array([1 + 2j, -0.3 + 0.7j, 2.5 - 1e-3j, -30 - 0.3j, 1e-3 + 1j, 0.7 - 0.7j])
    for d in (2.0**-52, 2.0**-40, 3 * 2.0**-31, 2.0**-20, 2.0**-8):
        ys.append(1j * x * (1 + d))
        xs.append(x)
        ys.append(x * d * (0.5 - 1j))
        xs.append(x)
    return np.concatenate(ys), np.concatenate(xs)


def long_double_floor(y, x):
    """The CPU's own error in c128 atan2 (it computes it in long double: each step rounds
    to 2^-64 of its operands, x^2 + y^2 from terms of |x|^2 + |y|^2): 8 2^-64 (1 + (|x|^2 +
    |y|^2) / |x^2 + y^2|) absolute per part, |x^2 + y^2| = |x + iy| |x - iy| (the pair
    scaled by its largest part first; inf where it is infinite or NaN)."""
    y, x = y.astype(np.complex128), x.astype(np.complex128)
    with np.errstate(all="ignore"):
        m = np.max(np.abs(np.stack([x.real, x.imag, y.real, y.imag])), axis=0)
        m = np.where(m > 0, m, 1)
        x, y = x / m, y / m
        big = np.abs(x) ** 2 + np.abs(y) ** 2
        uv = np.abs(x + 1j * y) * np.abs(x - 1j * y)
        return 8 * 2.0**-64 * (1 + np.where(uv > 0, big / uv, np.inf))


def test_atan2_c128_on_a_grid():
    """c128 atan2 (the CPU: -i log((x + iy) / sqrt(x^2 + y^2)) in long double) on the grid
    in two orders and where x + iy cancels or y is small: within 4 ulp of |ref| part by
    part (_atan2_reference, exact to 40 digits; measured 0.22 ulp), and within 4 ulp of
    |cpu| plus the CPU's own long double error (long_double_floor; where the CPU's result
    is exactly zero the device's is too or lies within that floor). Where x + iy cancels
    the CPU misses the reference by up to 1.4e11 ulp (within that floor), c64's float64
    formula by 6e14."""
    y, x = _atan2_pairs()
    hy, hx = xo.tensor(y), xo.tensor(x)
    got = xo.atan2(hy.to("cuda"), hx.to("cuda")).numpy()
    cpu = xo.atan2(hy, hx).numpy()
    _near_values(got, _atan2_reference(y, x, cpu), 4)
    _near_values(got, cpu, 4, long_double_floor(y, x))
    y, x = np.array([1, -2, 0.5, 0]), np.array([1, 3, -4, -1])
    got = xo.atan2(cu(y.astype(np.complex128)), cu(x.astype(np.complex128))).numpy()
    np.testing.assert_allclose(got.real, np.arctan2(y, x), rtol=4 * np.finfo(np.float64).eps)
    np.testing.assert_array_equal(got.imag, 0)


@pytest.mark.parametrize("dt", COMPLEX)
def test_cbrt_on_a_grid(dt):
    """The principal cube root, np.power(z, 1 / 3) on the CPU: negative reals give
    e^(i pi / 3) times the real root; a zero gives a zero."""
    h = xo.tensor(_grid(dt))
    _near(xo.cbrt(h.to("cuda")), xo.cbrt(h), _ULP[dt])
    z = np.array([-8, 27j, 0], np.complex64 if dt == "c64" else np.complex128)
    _near(xo.cbrt(cu(z)), xo.cbrt(xo.tensor(z)), _ULP[dt])
    np.testing.assert_allclose(xo.cbrt(cu(z)).numpy()[:2], [1 + 3**0.5 * 1j, 3**0.5 * 1.5 + 1.5j],
                               rtol=1e-6)  # fmt: skip


def test_atan2_c64_on_a_grid():
    """atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)) on c64 (computed one precision
    up, as the CPU), y and x from the grid in two orders; real y and x agree with the
    real atan2 (the imaginary part 0 where both are real)."""
    z = _grid("c64")
    for y, x in ((z, z[::-1].copy()), (z, np.roll(z, 7))):
        hy, hx = xo.tensor(y), xo.tensor(x)
        _near(xo.atan2(hy.to("cuda"), hx.to("cuda")), xo.atan2(hy, hx), _ULP["c64"])
    y, x = np.array([1, -2, 0.5], np.complex64), np.array([1, 3, -4], np.complex64)
    got = xo.atan2(cu(y), cu(x)).numpy()
    np.testing.assert_allclose(got.real, np.arctan2(y.real, x.real), rtol=1e-6)
    np.testing.assert_allclose(got.imag, 0, atol=1e-6)


@pytest.mark.parametrize("dt", COMPLEX)
def test_wide_functions_special_values(dt):
    """NaN parts: sign gives NaN + NaN i; sign of a zero is the zero; rsqrt(0) = inf + NaN i
    (1 / 0 as NumPy divides); tanh(+-inf + iy) = +-1 + 0i for finite y; logistic(-inf) = 0."""
    inf, nan = np.inf, np.nan
    ctype = np.complex64 if dt == "c64" else np.complex128
    z = np.array([nan + 1j, 1 + 1j, 0, 0, inf + 1j, -inf - 2j, -inf + 0j], ctype)
    z[1] = complex(1, nan)
    z[2] = complex(-0.0, 0.0)
    z[3] = complex(0.0, -0.0)
    for op, part in ((xo.sign, z[:4]), (xo.rsqrt, z[2:4]), (xo.tanh, z[4:6]), (xo.logistic, z[6:])):
        _exact(op(cu(part)), op(xo.tensor(part)))


# -- dot_general: the device GEMM in complex arithmetic ------------------------------------


def _zmat(dt, shape):
    v = _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)
    return v.astype(np.complex64 if dt == "c64" else np.complex128)


def _gemm_close(dev, ref, bound):
    """Each part within ``bound`` (the sums' rounding: K products a part, each of two
    terms, summed in the part type in some order on either side)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy(), ref.numpy()
    assert np.all(np.abs(a.real - b.real) <= bound) and np.all(np.abs(a.imag - b.imag) <= bound)


@pytest.mark.parametrize("dt", COMPLEX)
def test_dot_general_batched_transposed_and_its_gradient(dt):
    """Batched (2, 5, 9) x (2, 9, 3), and a product of transposed operands, against the
    CPU (NumPy's complex matmul): within 2 (K + 2) eps sum |a||b| per part. The
    gradients (xo.vjp on the device: the rule's dot_general and transposes run there)
    likewise."""
    a, b = _zmat(dt, (2, 5, 9)), _zmat(dt, (2, 9, 3))
    eps = np.finfo(np.float32 if dt == "c64" else np.float64).eps
    kw = dict(
        lhs_batching_dimensions=[0],
        rhs_batching_dimensions=[0],
        lhs_contracting_dimensions=[2],
        rhs_contracting_dimensions=[1],
    )
    bound = 2 * 11 * eps * np.einsum("bik,bkj->bij", np.abs(a), np.abs(b))
    _gemm_close(
        xo.dot_general(cu(a), cu(b), **kw), xo.dot_general(xo.tensor(a), xo.tensor(b), **kw), bound
    )
    at, bt = a[0].T.copy(), b[1].T.copy()  # (9, 5), (3, 9): a[0] @ b[1], both transposed
    tkw = dict(lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[1])
    tb = 2 * 11 * eps * (np.abs(a[0]) @ np.abs(b[1]))
    _gemm_close(
        xo.dot_general(cu(at), cu(bt), **tkw),
        xo.dot_general(xo.tensor(at), xo.tensor(bt), **tkw),
        tb,
    )

    def f(x, y):
        return xo.dot_general(x, y, **kw)

    g = _zmat(dt, (2, 5, 3))
    _, pull_dev = xo.vjp(f, cu(a), cu(b))
    _, pull_cpu = xo.vjp(f, xo.tensor(a), xo.tensor(b))
    (da, db), (ca, cb) = pull_dev(cu(g)), pull_cpu(xo.tensor(g))
    _gemm_close(da, ca, 2 * 5 * eps * np.einsum("bij,bkj->bik", np.abs(g), np.abs(b)))
    _gemm_close(db, cb, 2 * 7 * eps * np.einsum("bik,bij->bkj", np.abs(a), np.abs(g)))


def test_dot_general_complex_preferred_element_type():
    """c64 operands with a c128 result: each operand converted on the device first (one
    exact widening), then the c128 GEMM, as the CPU."""
    a, b = _zmat("c64", (4, 6)), _zmat("c64", (6, 5))
    kw = dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    dev = xo.dot_general(cu(a), cu(b), preferred_element_type="c128", **kw)
    ref = xo.dot_general(xo.tensor(a), xo.tensor(b), preferred_element_type="c128", **kw)
    bound = 2 * 8 * np.finfo(np.float64).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    _gemm_close(dev, ref, bound)


# -- reduce: add and multiply bodies on complex --------------------------------------------


@pytest.mark.parametrize("dt", COMPLEX)
def test_reduce_add_and_multiply(dt, monkeypatch):
    """Sums (every dims choice, the split two-pass path too) and products on the device
    against the CPU's (its generic pairwise tree): each part within the rounding-order
    bound n eps sum|x| (products: 4 n eps |prod|, on factors near 1); the gradient of a
    sum runs on the device; other bodies (subtract) raise the device error."""
    from xops.kernels.cuda import reduction as RD

    x = _zmat(dt, (3, 4, 5))
    eps = np.finfo(np.float32 if dt == "c64" else np.float64).eps
    zero = np.zeros((), x.dtype)
    for dims in ([0], [1, 2], [0, 1, 2]):
        dev = xo.reduce(cu(x), cu(zero), dims, xo.add)
        ref = xo.reduce(xo.tensor(x), xo.tensor(zero), dims, xo.add)
        n = int(np.prod([x.shape[d] for d in dims]))
        _gemm_close(dev, ref, (n + 1) * eps * np.abs(x).sum(axis=tuple(dims)))
    monkeypatch.setattr(RD, "_SPLIT_CHUNK", 8)  # few results over many elements: two passes
    monkeypatch.setattr(RD, "_FEW", 10**6)
    dev = xo.reduce(cu(x), cu(zero), [0, 1, 2], xo.add)
    ref = xo.reduce(xo.tensor(x), xo.tensor(zero), [0, 1, 2], xo.add)
    _gemm_close(dev, ref, 61 * eps * np.abs(x).sum())
    near1 = (1 + 0.1 * x).astype(x.dtype)
    one = np.ones((), x.dtype)
    dev = xo.reduce(cu(near1), cu(one), [2], xo.multiply)
    ref = xo.reduce(xo.tensor(near1), xo.tensor(one), [2], xo.multiply)
    _gemm_close(dev, ref, 4 * 6 * eps * np.abs(ref.numpy()))
    g = xo.grad(lambda t: xo.real(xo.reduce(t, cu(zero), [0, 1, 2], xo.add)))(cu(x))
    assert g.device == "cuda:0" and g.dtype == xo.tensor(x).dtype
    np.testing.assert_array_equal(g.numpy(), np.ones_like(x))
    # another body: the generic tree on the device (tests/test_cuda_generic_reduce.py)
    _exact(
        xo.reduce(cu(x), cu(zero), [0], xo.subtract),
        xo.reduce(xo.tensor(x), xo.tensor(zero), [0], xo.subtract),
    )


def _ordered_zmat(dt, shape):
    """Complex values full of what NumPy's complex order decides by position: equal
    real parts (ties broken by the imaginary part), exact ties of signed zeros (the
    first one wins), and NaNs in either part (the first wins)."""
    v = _rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 2.0]), shape) + 1j * _rng.choice(
        np.array([0.0, -0.0, 0.5, -0.5]), shape
    )
    flat = v.reshape(-1)
    flat[_rng.choice(flat.size, flat.size // 6, replace=False)] = complex(np.nan, 1.0)
    flat[_rng.choice(flat.size, flat.size // 8, replace=False)] = complex(3.0, np.nan)
    flat[_rng.choice(flat.size, flat.size // 8, replace=False)] = complex(np.nan, -2.0)
    return v.astype(np.complex64 if dt == "c64" else np.complex128)


@pytest.mark.parametrize("dt", COMPLEX)
def test_reduce_maximum_and_minimum_bit_for_bit(dt, monkeypatch):
    """maximum / minimum bodies in NumPy's complex order (the CPU's np.maximum /
    np.minimum) over every dims choice and the split two-pass path, bit for bit as the
    CPU: which of two NaNs or of two tied zeros survives depends on the order, and the
    device keeps the earlier one as the CPU's tree does (contiguous runs per thread)."""
    from xops.kernels.cuda import reduction as RD

    x = _ordered_zmat(dt, (3, 4, 6))
    clean = _ordered_zmat(dt, (3, 4, 6))
    clean[np.isnan(clean.real) | np.isnan(clean.imag)] = 0.0  # (ties only, no NaN)
    lo = np.array(complex(-np.inf, -np.inf), x.dtype)
    hi = np.array(complex(np.inf, np.inf), x.dtype)
    for v in (x, clean):
        for dims in ([0], [2], [1, 2], [0, 1, 2]):
            for body, init in ((xo.maximum, lo), (xo.minimum, hi)):
                dev = xo.reduce(cu(v), cu(init), dims, body)
                _exact(dev, xo.reduce(xo.tensor(v), xo.tensor(init), dims, body))
    monkeypatch.setattr(RD, "_SPLIT_CHUNK", 8)  # few results over many elements: two passes
    monkeypatch.setattr(RD, "_FEW", 10**6)
    for v in (x, clean):
        for body, init in ((xo.maximum, lo), (xo.minimum, hi), (xo.maximum, v.reshape(-1)[5])):
            dev = xo.reduce(cu(v), cu(np.asarray(init)), [0, 1, 2], body)
            _exact(dev, xo.reduce(xo.tensor(v), xo.tensor(np.asarray(init)), [0, 1, 2], body))


# -- reduce_window: add and multiply bodies on complex -------------------------------------

# every attribute at once: padding with the init value, strides, base and window dilations
_WINDOW_KW = dict(
    window_dimensions=[1, 2, 3],
    window_strides=[1, 2, 1],
    base_dilations=[1, 1, 2],
    window_dilations=[1, 2, 1],
    padding=[(0, 0), (1, 1), (2, 0)],
)


@pytest.mark.parametrize("dt", COMPLEX)
def test_reduce_window_add_and_multiply(dt):
    """Window sums (padding with the init value, strides, base and window dilations) on
    the device bit for bit as the CPU's (both fold each window in row-major order from
    the init value, a part's sum in plain float adds: nothing to contract); products
    within 4 n eps |prod| per part (the parts' multiply-adds may be fused); a sum pool's
    gradient runs on the device; other bodies (subtract) raise the device error."""
    x = _zmat(dt, (2, 5, 6))
    eps = np.finfo(np.float32 if dt == "c64" else np.float64).eps
    zero, one = np.zeros((), x.dtype), np.ones((), x.dtype)
    kw = _WINDOW_KW
    dev = xo.reduce_window(cu(x), cu(zero), body=xo.add, **kw)
    ref = xo.reduce_window(xo.tensor(x), xo.tensor(zero), body=xo.add, **kw)
    _exact(dev, ref)
    near1 = (1 + 0.1 * x).astype(x.dtype)
    dev = xo.reduce_window(cu(near1), cu(one), body=xo.multiply, **kw)
    ref = xo.reduce_window(xo.tensor(near1), xo.tensor(one), body=xo.multiply, **kw)
    _gemm_close(dev, ref, 4 * 6 * eps * np.abs(ref.numpy()))
    pool = dict(window_dimensions=[1, 2, 2], window_strides=[1, 2, 2])

    def f(t):
        s = xo.reduce_window(t, cu(zero), body=xo.add, **pool)
        return xo.real(xo.reduce(s, cu(zero), [0, 1, 2], xo.add))

    g = xo.grad(f)(cu(x))
    assert g.device == "cuda:0"
    want = np.zeros(x.shape, x.dtype)
    want[:, :4, :6] = 1
    np.testing.assert_array_equal(g.numpy(), want)
    _exact(  # another body: the generic fold on the device
        xo.reduce_window(cu(x), cu(zero), body=xo.subtract, **pool),
        xo.reduce_window(xo.tensor(x), xo.tensor(zero), body=xo.subtract, **pool),
    )


@pytest.mark.parametrize("dt", COMPLEX)
def test_reduce_window_maximum_and_minimum_bit_for_bit(dt):
    """Max / min pooling of complex values (padding with the init value, strides, base
    and window dilations) bit for bit as the CPU's: each window folded from the init
    value in row-major order, NaNs and tied zeros resolved by position as there."""
    x = _ordered_zmat(dt, (2, 5, 6))
    kw = _WINDOW_KW
    for body, init in ((xo.maximum, -np.inf), (xo.minimum, np.inf), (xo.maximum, 0.0)):
        z = np.array(complex(init, init) if init else -0.0 + 0j, x.dtype)
        dev = xo.reduce_window(cu(x), cu(z), body=body, **kw)
        _exact(dev, xo.reduce_window(xo.tensor(x), xo.tensor(z), body=body, **kw))


# -- select_and_scatter: selection in NumPy's complex order --------------------------------


@pytest.mark.parametrize("dt", COMPLEX)
def test_select_and_scatter_selects_in_numpys_complex_order(dt):
    """Each select direction on values full of what the complex order decides by
    position (real-part ties, signed zeros, NaN parts), overlapping windows with
    padding: the selections, and so the add / maximum / minimum scatters, bit for bit
    as the CPU's; multiply within the rounding of the parts' multiply-adds (a GPU may
    fuse them); max pooling's gradient on the device."""
    from xops.ops._bodies import Body

    x = _ordered_zmat(dt, (5, 6))
    wd, ws, pad = [3, 2], [2, 1], [[1, 1], [1, 0]]
    n = [(p + lo + hi - w) // s + 1 for p, w, s, (lo, hi) in zip(x.shape, wd, ws, pad)]
    src = _zmat(dt, n)
    eps = np.finfo(np.float32 if dt == "c64" else np.float64).eps
    for direction in ("GE", "GT", "LE", "LT", "EQ", "NE"):
        select = Body.compare(direction)
        for scatter in (xo.add, xo.maximum, xo.minimum, xo.multiply):
            init = np.array(1 if scatter is xo.multiply else 0, x.dtype)
            args = (wd, ws, pad)
            dev = xo.select_and_scatter(
                cu(x), cu(src), cu(init), *args, select=select, scatter=scatter
            )
            ref = xo.select_and_scatter(
                xo.tensor(x), xo.tensor(src), xo.tensor(init), *args, select=select, scatter=scatter
            )
            if scatter is xo.multiply:  # (at most 6 windows hold an element)
                _gemm_close(dev, ref, 4 * 6 * eps * np.abs(ref.numpy()))
            else:
                _exact(dev, ref)
    pool = dict(window_dimensions=[2, 2], window_strides=[2, 2])
    lowest, zero = np.array(complex(-np.inf, -np.inf), x.dtype), np.zeros((), x.dtype)

    def f(t):
        m = xo.reduce_window(t, xo.tensor(lowest, device=t.device), body=xo.maximum, **pool)
        return xo.real(xo.reduce(m, xo.tensor(zero, device=t.device), [0, 1], xo.add))

    z = _zmat(dt, (4, 6))
    g = xo.grad(f)(cu(z))
    assert g.device == "cuda:0"
    _exact(g, xo.grad(f)(xo.tensor(z)))
