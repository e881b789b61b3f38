"""float32 transcendental kernels: exp in float32 arithmetic; expm1, tanh, logistic
evaluated in float64.

NumPy's float32 exp/tanh loops are single-threaded and within 1-3 ulp; Numba's CPU
target calls scalar libm (no SVML on this stack). These kernels compute each element
by one branch-free formula of IEEE operations (``fma`` with one rounding; no
reassociation, no contraction), so every element runs the same scalar code and the
results do not depend on the SIMD width or the thread count. The loops vectorise and
run in pieces shared by the threads (``xops.kernels.elementwise.run_span_entry``).

**exp (exp32), in float32**: 8 lanes per AVX2 vector, 16 on AVX-512.

* range reduction ``x = k ln2 + r``, ``k = rint(x log2(e))`` by the 1.5 * 2^23 shifter
  (whose low bits then hold ``k``), ``|r| <= 0.34662``; ``x - k ln2_hi`` is exact (one
  fma; the difference is a multiple of the units of x and of ln2_hi, below 0.5), so
  ``r = x - k ln2_hi - k ln2_lo`` carries one rounding;
* ``e^r = 1 + r (1 + r h(r))``, ``h`` a degree-5 polynomial fitted to
  ``(e^r - 1 - r) / r^2`` (relative error of ``e^r`` below 2^-29 with its float32
  coefficients, against mpmath), the last step one fma: one rounding near 1;
* ``2^k`` as two exact halves (``k`` in [-150, 129]: operands are clamped to [-104, 89]
  first, NaN passes the clamp), so overflow to inf, subnormal results and underflow to
  0 come from the last multiplication (a subnormal result is rounded twice).

Checked exhaustively over all 2^32 float32 inputs against libm's float64 exp (a Numba
parallel loop, 2026-11-26): every result within 1 ulp of the correctly rounded float32
(10,125,599 inputs, 0.24% of all, not correctly rounded), a largest error of 0.87913 ulp
(EXP32_MAX_ULPS, at x = -71.04119), NaN exactly for NaN, and no zero of the wrong sign
(tests/test_transcendental.py checks every float32 of chosen ranges against this bound).
On one core 2.4x faster than the float64 evaluation it replaced (exp 1M: 0.56 against
1.35 ms; that one was within 0.500001 ulp).

**expm1, tanh, logistic in float64**: 4 lanes per AVX2 vector, each element rounded
to float32 once.

* range reduction as above with the 1.5 * 2^52 shifter and ln2 split in two doubles,
  ``|r| <= ln2/2``;
* ``expm1(r) = r * g(r)`` with ``g`` a degree-8 polynomial fitted to ``expm1(r)/r`` on
  ``[-ln2/2, ln2/2]`` (relative error of ``exp`` below 4e-14, measured against mpmath);
* the scale ``2^k`` built from its bits; operands are clamped to ``[-200, 200]`` first
  (NaN passes the clamp), so ``2^k`` and the result stay normal float64 numbers and the
  one float64 -> float32 conversion produces the overflow to inf, the subnormal results
  and the underflow to 0, each correctly rounded.

A float64 result within 4e-14 (relative) of the true value rounds to the correctly
rounded float32 except within 1e-6 ulp of a rounding midpoint, so the error is at most
0.500001 ulp (tests/test_transcendental.py checks all float32 inputs of chosen ranges).
"""

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic

from . import config
from .config import kernel, scalar

# ---------------------------------------------------------------------------------------
# bit casts and fused multiply-add as LLVM instructions (vectorisable, no libm calls)
# ---------------------------------------------------------------------------------------


def _bitcast(src, dst, llvm_dst):
    """An intrinsic reinterpreting a ``src`` value's bits as ``dst``. An integer source
    of another width (Numba widens integer arithmetic to 64 bits) is truncated or
    zero-extended to ``dst``'s width first."""

    @intrinsic
    def cast(typingctx, v):
        if v != src and not (isinstance(src, types.Integer) and isinstance(v, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            a = args[0]
            width = llvm_dst.width if isinstance(llvm_dst, ir.IntType) else src.bitwidth
            if isinstance(a.type, ir.IntType) and a.type.width != width:
                a = (builder.trunc if a.type.width > width else builder.zext)(a, ir.IntType(width))
            return builder.bitcast(a, llvm_dst)

        return dst(v), codegen

    return cast


f64_bits = _bitcast(types.float64, types.int64, ir.IntType(64))
bits_f64 = _bitcast(types.int64, types.float64, ir.DoubleType())
f32_bits = _bitcast(types.float32, types.uint32, ir.IntType(32))
bits_f32 = _bitcast(types.uint32, types.float32, ir.FloatType())


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (IEEE fusedMultiplyAdd; llvm.fma, a libm call without FMA
    hardware): the same bits on every CPU. All three float64, or all three float32."""
    if not (a == b == c and a in (types.float64, types.float32)):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return a(a, a, a), codegen


def _conversion(src, dst, build):
    """An intrinsic from a ``src`` value to ``dst`` made by ``build(builder, value)``."""

    @intrinsic
    def convert(typingctx, v):
        if v != src:
            return None

        def codegen(context, builder, sig, args):
            return build(builder, args[0])

        return dst(src), codegen

    return convert


_I32 = ir.IntType(32)

# IEEE binary16 bits (uint16) <-> float32: F16C's vcvtph2ps / vcvtps2ph where present
# (exact one way, round to nearest even the other; a NaN stays NaN)
f16_to_f32 = _conversion(
    types.uint16, types.float32, lambda b, h: b.fpext(b.bitcast(h, ir.HalfType()), ir.FloatType())
)
f32_to_f16 = _conversion(
    types.float32, types.uint16, lambda b, f: b.bitcast(b.fptrunc(f, ir.HalfType()), ir.IntType(16))
)
# bf16 bits (uint16) -> float32, exactly: the bits become the float32's top half (in 32-bit
# operations: Numba would widen them to 64 bits, which halves the SIMD lanes)
bf16_to_f32 = _conversion(
    types.uint16,
    types.float32,
    lambda b, h: b.bitcast(b.shl(b.zext(h, _I32), ir.Constant(_I32, 16)), ir.FloatType()),
)


@intrinsic
def f32_to_bf16(typingctx, f):
    """float32 -> bf16 bits (uint16), rounded to nearest even on the bit pattern; a NaN
    becomes the quiet NaN 0x7fc0 with its sign (as ml_dtypes). In 32-bit integer
    operations (Numba would widen them to 64 bits: half the SIMD lanes)."""
    if f != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        c = lambda v: ir.Constant(i32, v)  # noqa: E731
        u = builder.bitcast(args[0], i32)
        top = builder.lshr(u, c(16))
        rounded = builder.lshr(
            builder.add(builder.add(u, c(0x7FFF)), builder.and_(top, c(1))), c(16)
        )
        nan = builder.or_(builder.and_(top, c(0x8000)), c(0x7FC0))
        is_nan = builder.fcmp_unordered("uno", args[0], args[0])  # one compare, not three
        return builder.trunc(builder.select(is_nan, nan, rounded), ir.IntType(16))

    return types.uint16(types.float32), codegen


# A span body's C entry point: ``f(x, out, arg, lo, hi)``, the arrays as addresses, ``arg``
# an int64 parameter of the body (or unused)
ENTRY_SIGNATURE = types.void(types.voidptr, types.voidptr, types.int64, types.int64, types.int64)


@intrinsic
def call_entry(typingctx, entry, x, out, arg, lo, hi):
    """Call the ENTRY_SIGNATURE function at address ``entry`` with the array addresses
    ``x`` and ``out`` (all six arguments int64): an opaque call that LLVM cannot inline."""
    if not all(isinstance(t, types.Integer) for t in (entry, x, out, arg, lo, hi)):
        return None

    def codegen(context, builder, sig, args):
        i64, i8p = ir.IntType(64), ir.IntType(8).as_pointer()
        e, xa, oa, a, lo, hi = (
            context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args)
        )
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i8p, i64, i64, i64])
        fn = builder.inttoptr(e, fnty.as_pointer())
        builder.call(fn, [builder.inttoptr(xa, i8p), builder.inttoptr(oa, i8p), a, lo, hi])
        return context.get_dummy_value()

    return types.void(entry, x, out, arg, lo, hi), codegen


class SpanEntry:
    """The C entry point (ENTRY_SIGNATURE) of a span body, made from ``py_func`` by
    ``numba.cfunc`` on first use (cached like the kernels): its ``address`` is called by
    a prange loop over pieces (``xops.kernels.elementwise.run_span_entry``). Called
    there through the pointer, the span loop keeps its own optimisation (inlined into
    the prange body it ran 1.35x slower, see the span bodies below)."""

    __slots__ = ("py_func", "_cfunc")

    def __init__(self, py_func):
        self.py_func = py_func
        self._cfunc = None

    @property
    def address(self):
        if self._cfunc is None:
            self._cfunc = config.cfunc(ENTRY_SIGNATURE, self.py_func)
        return self._cfunc.address


# ---------------------------------------------------------------------------------------
# float64 exp / expm1 core
# ---------------------------------------------------------------------------------------

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471805599453  # ln 2 rounded to float64
_LN2_LO = 2.3190468138462996e-17  # ln 2 - _LN2_HI
_SHIFTER = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFTER rounds x to an integer
_SHIFTER_BITS = 0x4338000000000000
_CLAMP = 200.0  # exp(+-200) is far outside float32's range and inside float64's
# g(r) = expm1(r) / r on [-ln2/2, ln2/2], least squares on Chebyshev nodes (mpmath)
_G0 = 0.9999999999999879
_G1 = 0.4999999999980064
_G2 = 0.16666666666973112
_G3 = 0.04166666688915244
_G4 = 0.00833333321821523
_G5 = 0.0013888821978396224
_G6 = 0.0001984138951629686
_G7 = 2.487602084408304e-05
_G8 = 2.754977914408049e-06


@scalar
def _clamp(d):
    """d limited to [-_CLAMP, _CLAMP]; NaN stays NaN (both compares are false)."""
    d = _CLAMP if d > _CLAMP else d
    return -_CLAMP if d < -_CLAMP else d


@scalar
def _reduce(d):
    """(2^k, expm1(r)) with d = k ln2 + r, for |d| <= _CLAMP (or NaN: NaN, NaN)."""
    t = fma(d, _LOG2E, _SHIFTER)
    k = t - _SHIFTER
    r = fma(-k, _LN2_HI, d)
    r = fma(-k, _LN2_LO, r)
    g = fma(r, _G8, _G7)
    g = fma(r, g, _G6)
    g = fma(r, g, _G5)
    g = fma(r, g, _G4)
    g = fma(r, g, _G3)
    g = fma(r, g, _G2)
    g = fma(r, g, _G1)
    g = fma(r, g, _G0)
    scale = bits_f64((f64_bits(t) - _SHIFTER_BITS + 1023) << 52)
    return scale, r * g


@scalar
def exp64(d):
    """e^d in float64 for float32-range work: relative error < 4e-14 for |d| <= 200
    (d is clamped there); NaN -> NaN."""
    scale, q = _reduce(_clamp(d))
    return fma(scale, q, scale)


@scalar
def expm1_64(d):
    """e^d - 1, accurate relative to the result near 0: 2^k q + (2^k - 1); keeps the
    sign of zero."""
    scale, q = _reduce(_clamp(d))
    m = fma(scale, q, scale - 1.0)
    return d if d == 0.0 else m


@scalar
def tanh64(d):
    """tanh(d) = sign(d) m / (m + 2), m = expm1(2|d|): no cancellation near 0, and
    tanh(-0) = -0."""
    m = expm1_64(2.0 * abs(d))
    return np.copysign(m / (m + 2.0), d)


@scalar
def logistic64(d):
    """1 / (1 + e^-d): e^-d overflows to no inf inside the clamp; relative error a few
    float64 ulp everywhere (for d << 0 the result is e^d / (1 + e^d) to that accuracy)."""
    return 1.0 / (1.0 + exp64(-d))


# ---------------------------------------------------------------------------------------
# float32 exp in float32 arithmetic (8 lanes per AVX2 vector, 16 on AVX-512)
# ---------------------------------------------------------------------------------------

_F32 = np.float32
_E_LOG2E = _F32(1.4426950408889634)  # 1/ln2 rounded to float32
_E_SHIFTER = _F32(12582912.0)  # 1.5 * 2^23: x + _E_SHIFTER rounds x to an integer
_E_SHIFTER_BITS = 0x4B400000
_E_LN2_HI = _F32(0.6931471824645996)  # ln 2 rounded to float32
_E_LN2_LO = _F32(-1.9046542121259336e-09)  # ln 2 - _E_LN2_HI rounded to float32
# exp(x) is below half the least subnormal for x < -103.98 and above the largest float32
# for x > 88.73: clamping to [-104, 89] keeps k in [-150, 129] and both results
_E_LOW, _E_HIGH = _F32(-104.0), _F32(89.0)
_E_ONE = _F32(1.0)
# h(r) = (e^r - 1 - r) / r^2 on [-0.34662, 0.34662], weighted least squares for the
# absolute error of 1 + r (1 + r h) (float32 coefficients: relative error of e^r < 2^-29)
_H0 = _F32(0.5)
_H1 = _F32(0.1666666716337204)
_H2 = _F32(0.041666269302368164)
_H3 = _F32(0.008333269506692886)
_H4 = _F32(0.0013946148101240396)
_H5 = _F32(0.00019915602752007544)


@intrinsic
def _pow2_halves(typingctx, t):
    """(2^k1, 2^k2), k1 = floor(k / 2), k2 = k - k1, for the float32 ``t`` = k + 1.5 * 2^23
    (|k| < 2^22), in 32-bit integer operations on t's bits; each half is a normal float32
    for k in [-150, 129], so multiplying by both scales by 2^k with at most one rounding
    (the second product's, where the result is subnormal). NaN t: two arbitrary floats."""
    if t != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        k = builder.sub(builder.bitcast(args[0], i32), ir.Constant(i32, _E_SHIFTER_BITS))
        k1 = builder.ashr(k, ir.Constant(i32, 1))
        halves = []
        for e in (k1, builder.sub(k, k1)):
            b = builder.shl(builder.add(e, ir.Constant(i32, 127)), ir.Constant(i32, 23))
            halves.append(builder.bitcast(b, ir.FloatType()))
        return context.make_tuple(builder, sig.return_type, halves)

    return types.UniTuple(types.float32, 2)(t), codegen


EXP32_MAX_ULPS = 0.8792  # exp32's largest error, rounded up, over all float32 inputs (docstring)


@scalar
def exp32(x):
    """e^x for a float32 x in float32 operations: within 1 ulp (module docstring).

    x = k ln2 + r with k = rint(x / ln2) and |r| <= 0.34662; x - k ln2_hi is exact (an fma
    of an integer k <= 150 and a float32 ln2_hi: the difference is a multiple of x's and
    ln2_hi's units below 0.5), so r carries one rounding; e^r = 1 + r (1 + r h(r)), the
    last step one fma (one rounding near 1); then 2^k in two exact halves."""
    x = _E_HIGH if x > _E_HIGH else x  # NaN passes both
    x = _E_LOW if x < _E_LOW else x
    t = fma(x, _E_LOG2E, _E_SHIFTER)
    k = t - _E_SHIFTER
    r = fma(-k, _E_LN2_HI, x)
    r = fma(-k, _E_LN2_LO, r)
    h = fma(r, fma(r, fma(r, fma(r, fma(r, _H5, _H4), _H3), _H2), _H1), _H0)  # Horner
    y = fma(r, fma(r, h, _E_ONE), _E_ONE)
    s1, s2 = _pow2_halves(t)
    return (y * s1) * s2


# ---------------------------------------------------------------------------------------
# span bodies: out[lo:hi] = f(x[lo:hi]), run by xops.kernels.elementwise.run_span_entry
# ---------------------------------------------------------------------------------------
# A compiled serial loop per function: called from Python for a whole small array, and
# through its C entry point (SpanEntry) from a prange loop over pieces for a large one.
# Inlined into that prange loop instead, the same body ran 1.35x slower (exp 1M on one
# thread: 1.9-2.0 ms against 1.4 ms): LLVM re-optimises the inlined loop worse. Loop
# indices are unsigned: signed ones keep Numba's negative-index wraparound on every load
# and block vectorisation of the loads (exp 2.3 ms, bf16 add 8x slower).

SPAN = 1 << 14  # pieces split between threads are multiples of it: 64 KiB of float32


def span_body(py_func):
    """A span loop ``f(arrays..., lo, hi)``: compiled once, serial, cached, with the
    config's options (nogil)."""
    return kernel(py_func).serial


@span_body
def _exp_span(x, out, lo, hi):
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no negative-index wrap
        out[i] = exp32(x[i])


EXPM1, TANH, LOGISTIC = 0, 1, 2  # ``fn`` codes of _expm1_tanh_logistic_span


@span_body
def _expm1_tanh_logistic_span(x, out, fn, lo, hi):
    """One body for the three less frequent functions (the loop-invariant test is hoisted
    out of the loop by LLVM): one compilation instead of three."""
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no negative-index wrap
        d = np.float64(x[i])
        if fn == EXPM1:
            r = expm1_64(d)
        elif fn == TANH:
            r = tanh64(d)
        else:
            r = logistic64(d)
        out[i] = np.float32(r)


@SpanEntry
def _exp_entry(x, out, unused, lo, hi):
    _exp_span(carray(x, hi, np.float32), carray(out, hi, np.float32), lo, hi)


@SpanEntry
def _expm1_tanh_logistic_entry(x, out, fn, lo, hi):
    _expm1_tanh_logistic_span(carray(x, hi, np.float32), carray(out, hi, np.float32), fn, lo, hi)


# name -> (span body, its C entry point, its int64 argument between ``out`` and ``lo``,
# or None for none)
FUNCTIONS = {
    "exp": (_exp_span, _exp_entry, None),
    "expm1": (_expm1_tanh_logistic_span, _expm1_tanh_logistic_entry, np.int64(EXPM1)),
    "tanh": (_expm1_tanh_logistic_span, _expm1_tanh_logistic_entry, np.int64(TANH)),
    "logistic": (_expm1_tanh_logistic_span, _expm1_tanh_logistic_entry, np.int64(LOGISTIC)),
}


# ---------------------------------------------------------------------------------------
# float32 log1p in float32 arithmetic (8 lanes per AVX2 vector)
# ---------------------------------------------------------------------------------------
# Near 0 (x in [1/sqrt(2) - 1, sqrt(2) - 1]): log1p(x) = x + x^2 q(x), one fma after q's
# Horner steps, with no 1 + x to lose x's low bits; tiny x (x^2 q below x's ulp) comes
# out as x itself, -0 as -0. Elsewhere: u = 1 + x (rounded; its error e = x - (u - 1), or
# 1 - (u - x) when x > 1, is exact), u = 2^k m with m in [sqrt(1/2), sqrt(2)) read from u's
# bits in 32-bit integer operations, f = m - 1 (exact), and log1p(x) = k ln2 + f + f^2
# q(f) + e / u, the first two summed exactly (k ln2_hi is exact: ln2_hi has 9 bits; Fast2Sum
# keeps the rounding error of k ln2_hi + f) and the small terms added to that error
# before the last rounding. q: degree 8, float32 coefficients, fitted (weighted least
# squares on Chebyshev nodes, mpmath values) to (log1p(f) - f) / f^2 on [1/sqrt(2) - 1,
# sqrt(2) - 1] for the relative error of log1p (below 0.08 ulp in exact arithmetic). The
# result is within 0.85 ulp of log1p (whole binades checked against float64 log1p, the worst
# 0.841 ulp at -0.29298, just past the near range; correctly rounded for 94-100% of a
# binade; tests/test_programs.py); u = 0 gives -inf, u < 0
# NaN, u = inf inf, NaN stays NaN. Branch-free (selects), so the loops vectorise.

_L_SQRT_HALF_BITS = 0x3F3504F3  # sqrt(1/2) rounded to float32, as bits
_L_NEAR_LO, _L_NEAR_HI = _F32(-0.29289323), _F32(0.41421357)  # 1/sqrt(2) - 1, sqrt(2) - 1
_L_LN2_HI = _F32(0.693359375)  # 355/512: k * _L_LN2_HI is exact for |k| < 2^15
_L_LN2_LO = _F32(-2.1219444005469057e-04)  # ln 2 - _L_LN2_HI rounded to float32
_L_ONE, _L_ZERO, _L_NAN, _L_NEG_INF = _F32(1.0), _F32(0.0), _F32(np.nan), _F32(-np.inf)
_Q = tuple(
    _F32(v)
    for v in (
        -0.49999988079071045,
        0.3333333730697632,
        -0.2500160038471222,
        0.20001237094402313,
        -0.16608178615570068,
        0.14195393025875092,
        -0.13263610005378723,
        0.12827515602111816,
        -0.07479351758956909,
    )
)


@intrinsic
def _log_split32(typingctx, u):
    """(k, m) as float32s with u = 2^k m, m in [sqrt(1/2), sqrt(2)) (sqrt(2) rounded), for
    a positive normal float32 u, in 32-bit integer operations on u's bits (Numba would
    widen them to 64 bits: half the SIMD lanes). Other u: two arbitrary floats."""
    if u != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        c = lambda v: ir.Constant(i32, v)  # noqa: E731
        t = builder.sub(builder.bitcast(args[0], i32), c(_L_SQRT_HALF_BITS))
        k = builder.sitofp(builder.ashr(t, c(23)), ir.FloatType())
        m = builder.add(builder.and_(t, c(0x7FFFFF)), c(_L_SQRT_HALF_BITS))
        return context.make_tuple(builder, sig.return_type, [k, builder.bitcast(m, ir.FloatType())])

    return types.UniTuple(types.float32, 2)(u), codegen


@scalar
def log1p32(x):
    """log(1 + x) for a float32 x in float32 operations: within 0.85 ulp (see above)."""
    u = x + _L_ONE
    k, m = _log_split32(u)
    near = x >= _L_NEAR_LO and x <= _L_NEAR_HI  # (NaN: not near)
    f = x if near else m - _L_ONE
    q = fma(f, _Q[8], _Q[7])
    q = fma(f, q, _Q[6])
    q = fma(f, q, _Q[5])
    q = fma(f, q, _Q[4])
    q = fma(f, q, _Q[3])
    q = fma(f, q, _Q[2])
    q = fma(f, q, _Q[1])
    q = fma(f, q, _Q[0])
    f2 = f * f
    e = x - (u - _L_ONE) if x <= _L_ONE else _L_ONE - (u - x)  # u's rounding error
    a = k * _L_LN2_HI
    s = a + f
    lo = (a - s) + f  # s + lo = a + f exactly (|a| >= ln2_hi > |f|)
    r = s + (lo + fma(f2, q, fma(k, _L_LN2_LO, e / u)))
    r = fma(f2, q, f) if near else r
    r = u if u == np.inf or u != u else r  # inf, NaN
    r = _L_NEG_INF if u == _L_ZERO else r
    return _L_NAN if u < _L_ZERO else r


@span_body
def _log1p_span(x, out, lo, hi):
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no negative-index wrap
        out[i] = log1p32(x[i])


@SpanEntry
def _log1p_entry(x, out, unused, lo, hi):
    _log1p_span(carray(x, hi, np.float32), carray(out, hi, np.float32), lo, hi)


FUNCTIONS["log1p"] = (_log1p_span, _log1p_entry, None)
