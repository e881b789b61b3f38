"""float32 transcendental kernels (exp, expm1, tanh, logistic) evaluated in float64.

NumPy's float32 exp/tanh loops are single-threaded and within 1-3 ulp; Numba's CPU
target calls scalar libm (no SVML on this stack). These kernels compute each element
by one branch-free float64 formula and round to float32 once:

* range reduction ``x = k ln2 + r``, ``k = rint(x log2(e))`` (the 1.5 * 2^52 shifter:
  adding it rounds to an integer, and the shifter's low bits then hold ``k``),
  ``|r| <= ln2/2``, with ``r`` from two fused multiply-adds (ln2 split in two doubles);
* ``expm1(r) = r * g(r)`` with ``g`` a degree-8 polynomial fitted to ``expm1(r)/r`` on
  ``[-ln2/2, ln2/2]`` (relative error of ``exp`` below 4e-14, measured against mpmath);
* the scale ``2^k`` built from its bits; operands are clamped to ``[-200, 200]`` first
  (NaN passes the clamp), so ``2^k`` and the result stay normal float64 numbers and the
  one float64 -> float32 conversion produces the overflow to inf, the subnormal results
  and the underflow to 0, each correctly rounded.

A float64 result within 4e-14 (relative) of the true value rounds to the correctly
rounded float32 except within 1e-6 ulp of a rounding midpoint, so the error is at most
0.500001 ulp (tests/test_transcendental.py checks all float32 inputs of chosen ranges).
Every element runs the same scalar code (no reassociation, ``fma`` is an IEEE
operation with one rounding), so results do not depend on the SIMD width or the
thread count. The loops vectorise (4 float64 lanes on AVX2) and run in pieces shared
by the threads (``xops.kernels.elementwise.run_span_entry``).
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
    hardware): the same bits on every CPU."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


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
        out[i] = np.float32(exp64(np.float64(x[i])))


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
