"""Special values of the complex elementwise ops on the device (xops/kernels/cuda/
_complex_math.py) against the CPU's, which are NumPy's and glibc's (cexp, clog, csqrt,
ctanh, csin, ccos, cpow: C99 Annex G) and NumPy's Smith division.

Every op on the grid of all (re, im) pairs of the parts +-0, +-the smallest subnormal,
+-1, +-a large finite value (1e300; c64: 3e38), +-inf and NaN of both signs (divide, power
and atan2: every pair of grid values), c64 and c128: NaN in the same parts as the CPU,
infinities and zeros bit for bit (their signs too), other finite values within _ULP ulp of
the part type times |cpu| (libdevice's functions and glibc's differ by an ulp or two;
under the simulator every part agrees bit for bit but c64 exp and sqrt's, which run
float32 formulas, within 2 ulp, and c128 power and atan2's, which are more accurate than
the CPU's: see their tests). A few of the rules
are also written out, and c64 operands of every magnitude check where its float32
formulas hand over to float64.

multiply is NumPy's loop on FMA CPUs, each part one fused multiply-add of a rounded
product (the sign of a zero that underflows, -inf where the unfused formula's inf - inf
gives NaN): bit for bit as the CPU on every pair of grid values and on random operands of
every magnitude.
"""

import numpy as np
import pytest
from cuda_support import SIM, needs_cuda

import xops as xo

pytestmark = needs_cuda

COMPLEX = ("c64", "c128")
_ULP = {"c64": 4, "c128": 8}
_CTYPE = {"c64": np.complex64, "c128": np.complex128}
UNARY = (
    xo.exponential,
    xo.log,
    xo.sqrt,
    xo.rsqrt,
    xo.abs,
    xo.sign,
    xo.tanh,
    xo.tan,
    xo.sine,
    xo.cosine,
    xo.exponential_minus_one,
    xo.log_plus_one,
    xo.logistic,
    xo.cbrt,
)


def _parts(dt):
    tiny = np.finfo(np.float32 if dt == "c64" else np.float64).smallest_subnormal
    big = 3e38 if dt == "c64" else 1e300
    return np.array(
        [0.0, -0.0, tiny, -tiny, 1.0, -1.0, big, -big, np.inf, -np.inf, np.nan, -np.nan]
    )


def _grid(dt):
    """The 144 values re + i im of every pair of parts (NaNs keep their signs)."""
    p = _parts(dt)
    z = np.empty(p.size**2, _CTYPE[dt])
    z.real, z.imag = np.repeat(p, p.size), np.tile(p, p.size)
    return z


def _pairs(dt):
    z = _grid(dt)
    return np.repeat(z, z.size), np.tile(z, z.size)


def _same(dev, ref, ulp, where="", floor=None):
    """NaN in the same parts; where the CPU has an infinity or a zero, the same bits; other
    finite parts within ``ulp`` ulp (a number or one per element) of the part type times
    |cpu| (the magnitude of its finite parts). ``floor`` (one per element): an absolute
    allowance for the CPU's own error, added to each bound; a zero of the CPU then needs the
    same bits only where the device's part is a zero too."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy(), ref.numpy()
    parts = ((a.real, b.real), (a.imag, b.imag)) if b.dtype.kind == "c" else ((a, b),)
    eps = np.finfo(parts[0][1].dtype).eps
    fin = [np.where(np.isfinite(pb), pb, 0).astype(np.float64) for _, pb in parts]
    mag = np.hypot(*fin) if len(fin) == 2 else np.abs(fin[0])  # (|cpu| of its finite parts)
    ulp = np.broadcast_to(np.asarray(ulp, np.float64), mag.shape)
    extra = np.zeros(mag.shape) if floor is None else floor
    for pa, pb in parts:
        nan = np.isnan(pb)
        np.testing.assert_array_equal(np.isnan(pa), nan, err_msg=f"NaN parts {where}")
        rule = np.isinf(pb) | ((pb == 0) & ((pa == 0) | (floor is None)))
        word = f"u{pa.dtype.itemsize}"
        np.testing.assert_array_equal(
            pa[rule].view(word), pb[rule].view(word), err_msg=f"infinities and zeros {where}"
        )
        rest = ~nan & ~rule
        err = np.abs(pa[rest].astype(np.float64) - pb[rest])
        lim = ulp[rest] * eps * mag[rest] + extra[rest]
        assert np.all(err <= lim), (where, pa[rest], pb[rest])


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.__name__)
def test_unary_ops_on_the_special_value_grid(op, dt):
    h = xo.tensor(_grid(dt))
    _same(op(h.to("cuda")), op(h), _ULP[dt], op.__name__)


@pytest.mark.parametrize("dt", COMPLEX)
def test_divide_on_every_pair_of_special_values(dt):
    """NumPy's Smith division, no special cases (x / 0 divides the parts by +0); c64 in
    float64 wherever a part leaves 2^-30 .. 2^30, as the CPU computes c64 in c128."""
    a, b = _pairs(dt)
    ha, hb = xo.tensor(a), xo.tensor(b)
    _same(xo.divide(ha.to("cuda"), hb.to("cuda")), xo.divide(ha, hb), _ULP[dt])


@pytest.mark.parametrize("dt", COMPLEX)
def test_multiply_bit_for_bit_with_numpys_fused_loop(dt):
    """re = fma(ar, br, -(ai bi)), im = fma(ar, bi, ai br): every pair of grid values and
    2,000 random pairs of magnitudes 1e-30 .. 1e30 (c128: 1e-200 .. 1e200), whose
    products' last bits show the fusing, bit for bit (NaNs: in the same parts)."""
    a, b = _pairs(dt)
    rng = np.random.default_rng(5)
    top = 30 if dt == "c64" else 200
    mags = [10.0 ** rng.uniform(-top, top, 2000) for _ in range(4)]
    signs = [rng.choice([-1.0, 1.0], 2000) for _ in range(4)]
    ra = (signs[0] * mags[0] + 1j * signs[1] * mags[1]).astype(_CTYPE[dt])
    rb = (signs[2] * mags[2] + 1j * signs[3] * mags[3]).astype(_CTYPE[dt])
    a, b = np.concatenate([a, ra]), np.concatenate([b, rb])
    ha, hb = xo.tensor(a), xo.tensor(b)
    got, want = xo.multiply(ha.to("cuda"), hb.to("cuda")).numpy(), xo.multiply(ha, hb).numpy()
    for pg, pw in ((got.real, want.real), (got.imag, want.imag)):
        nan = np.isnan(pw)
        np.testing.assert_array_equal(np.isnan(pg), nan)
        word = f"u{pw.dtype.itemsize}"
        np.testing.assert_array_equal(pg[~nan].view(word), pw[~nan].view(word))


@pytest.mark.parametrize("dt", COMPLEX)
def test_power_on_every_pair_of_special_values(dt):
    """NumPy's npy_cpow (a^0 = 1, 0^b, small integer exponents by squaring) and glibc's
    cpow, cexp(b clog a) with C's complex product (infinities recovered). c128's finite
    values within 8 + 2 |b| |log a| ulp of |cpu| (test_cuda_complex._power_ulp: the device
    puts back the CPU's rounding error of b log a where |b log a| <= 2^20; past that, and
    for infinite or NaN parts, the CPU's formula). On a GPU the pairs with a large finite
    exponent are left out: b log a is then ~1e38 (c128: 1e300), whose phase is any angle
    for the ulp by which libdevice's log1p or atan2 may differ from glibc's."""
    from test_cuda_complex import _power_ulp

    a, b = _pairs(dt)
    if not SIM:
        keep = ~(np.isfinite(b) & (np.abs(b) > 1e30))
        a, b = a[keep], b[keep]
    ha, hb = xo.tensor(a), xo.tensor(b)
    ref = xo.power(ha, hb)
    ulp = _ULP[dt]
    if dt == "c128":  # (a finite part beside an infinite one: |cpu| is infinite)
        c = ref.numpy()
        ulp = np.where(np.isinf(c.real) | np.isinf(c.imag), np.inf, _power_ulp(a, b))
    _same(xo.power(ha.to("cuda"), hb.to("cuda")), ref, ulp)


@pytest.mark.parametrize("dt", COMPLEX)
def test_atan2_on_every_pair_of_special_values(dt):
    """-i log((x + iy) / sqrt(x^2 + y^2)) as the CPU evaluates it (NumPy's multiply, csqrt,
    division, glibc's clog; the scalars 1j and -1j = -0 - 1i first; c64 in float64, c128 in
    long double). c128: NaN and infinite parts as the CPU's; finite values, zeros included,
    within 8 ulp of |cpu| plus the CPU's own long double error
    (test_cuda_complex.long_double_floor); the side of the cut (real part +-pi) as the
    CPU's where the exact value is on it (x_r y_r + x_i y_i = 0: u = x + iy and v = x - iy
    then have arg u conj v = 0 or pi, exactly), elsewhere free, and a zero's sign free: the
    CPU gives them by its long double rounding below float64's range (arg q 5e-301 from pi
    where x = -1e300 (1 + i), y = i: the CPU's -pi, the device's pi; log|q| = 1.2e-647 for
    the exact 0 of atan2(-i, 2^-1074 i), a -0 imaginary part for the device's +0). Measured
    under the simulator: 24 pairs on the cut, 18 of 432 real and 408 of 1696 imaginary
    zeros of another sign, of the 20736 pairs."""
    from fractions import Fraction

    from test_cuda_complex import long_double_floor

    y, x = _pairs(dt)
    hy, hx = xo.tensor(y), xo.tensor(x)
    dev, ref = xo.atan2(hy.to("cuda"), hx.to("cuda")), xo.atan2(hy, hx)
    floor = None
    if dt == "c128":
        floor = long_double_floor(y, x)
        got, cpu = dev.numpy().copy(), ref.numpy()
        on_cut = np.zeros(y.size, bool)  # (the exact value on the cut: arg(u conj v) = pi)
        for n, (yv, xv) in enumerate(zip(y, x)):
            v = [xv.real, xv.imag, yv.real, yv.imag]
            if all(np.isfinite(v)):
                p = [Fraction(float(c)) for c in v]
                on_cut[n] = p[0] * p[2] == -p[1] * p[3]
        for g, c in ((got.real, cpu.real), (got.imag, cpu.imag)):
            zeros = (g == 0) & (c == 0)
            g[zeros] = c[zeros]
        cut = ~on_cut & (np.abs(cpu.real) == np.pi) & (got.real == -cpu.real)
        got.real[cut] = cpu.real[cut]
        dev = xo.tensor(got, device="cuda")
    _same(dev, ref, _ULP[dt], floor=floor)


@pytest.mark.parametrize("dt", COMPLEX)
def test_annex_g_rules_written_out(dt):
    """A few of C99 Annex G's values, on the device and the CPU alike (signs of zeros and
    infinities; a NaN's sign decides the zero of exp(-inf + i NaN) and tanh(inf + i NaN))."""
    inf, nan = np.inf, np.nan
    ct = _CTYPE[dt]

    def z(re, im):
        v = np.empty(1, ct)
        v.real, v.imag = re, im
        return v

    cases = [
        (xo.exponential, z(-inf, nan), (0.0, 0.0)),
        (xo.exponential, z(-inf, -nan), (0.0, -0.0)),
        (xo.exponential, z(inf, inf), (inf, nan)),
        (xo.exponential, z(inf, -0.0), (inf, -0.0)),
        (xo.exponential, z(-inf, 2.0), (-0.0, 0.0)),  # 0 cis 2: cos 2 < 0 < sin 2
        (xo.exponential, z(nan, -0.0), (nan, -0.0)),
        (xo.log, z(-0.0, 0.0), (-inf, np.pi)),
        (xo.log, z(-0.0, -0.0), (-inf, -np.pi)),
        (xo.log, z(nan, -inf), (inf, nan)),
        (xo.sqrt, z(nan, -inf), (inf, -inf)),
        (xo.sqrt, z(-inf, 1.0), (0.0, inf)),
        (xo.sqrt, z(-inf, nan), (nan, inf)),
        (xo.sqrt, z(inf, -2.0), (inf, -0.0)),
        (xo.sqrt, z(-4.0, -0.0), (0.0, -2.0)),
        (xo.tanh, z(inf, nan), (1.0, 0.0)),
        (xo.tanh, z(-inf, -nan), (-1.0, -0.0)),
        (xo.tanh, z(-0.0, inf), (-0.0, nan)),
        (xo.tan, z(nan, inf), (0.0, 1.0)),
        (xo.sine, z(-0.0, inf), (-0.0, inf)),
        (xo.sine, z(inf, 0.0), (nan, 0.0)),
        (xo.cosine, z(0.0, inf), (inf, -0.0)),
        (xo.cosine, z(inf, -0.0), (nan, 0.0)),
    ]
    for op, v, want in cases:
        h = xo.tensor(v)
        d, c = op(h.to("cuda")).numpy()[0], op(h).numpy()[0]
        for got in (d, c):
            for part, w in ((got.real, want[0]), (got.imag, want[1])):
                if np.isnan(w):
                    assert np.isnan(part), (op.__name__, v, got, want)
                else:
                    assert part == np.asarray(w, part.dtype), (op.__name__, v, got, want)
                    assert np.signbit(part) == np.signbit(w), (op.__name__, v, got, want)


def _magnitudes(n, rng):
    """c64 values whose parts have every magnitude 2^-149 .. 2^127 (log-uniform), either
    sign, a tenth of them zero."""
    e = rng.uniform(-149, 127.9, (2, n))
    p = np.exp2(e) * rng.choice([-1.0, 1.0], (2, n))
    p[rng.random((2, n)) < 0.1] = 0.0
    z = np.empty(n, np.complex64)
    z.real, z.imag = p.astype(np.float32)
    return z


def test_c64_hands_extreme_magnitudes_to_float64():
    """divide, exp, log and sqrt of c64 run float32 formulas where every part is 0 or of
    magnitude 2^-30 .. 2^30 (exp: |x| <= 80) and float64 elsewhere (no overflow or
    underflow inside: the CPU's values, which it computes in c128): over parts of every
    float32 magnitude, results as _same; zeros and infinities bit for bit."""
    rng = np.random.default_rng(7)
    z, w = _magnitudes(400, rng), _magnitudes(400, rng)
    z[:40].real = rng.uniform(-120, 120, 40).astype(np.float32)  # (exp: both sides of 80)
    hz, hw = xo.tensor(z), xo.tensor(w)
    dz, dw = hz.to("cuda"), hw.to("cuda")
    _same(xo.divide(dz, dw), xo.divide(hz, hw), _ULP["c64"], "divide")
    for op in (xo.exponential, xo.log, xo.sqrt):
        _same(op(dz), op(hz), _ULP["c64"], op.__name__)
