"""The f8 types and i2 / i4 / ui2 / ui4 on the device (xops/kernels/cuda/f8.py,
subbyte.py and the elementwise kernels), compared with the CPU bit for bit: every f8 bit
pattern of every format decoded and re-encoded, float32 / float64 / integer sources
rounded (ties, subnormals, overflow to inf or NaN, NaNs, FNUZ's zero), the elementwise ops
that are exact in float32, compare, select and clamp; the transcendental ops within one
unit in the last place of the f8 type; every i4 / ui4 value against five partners (every
pair for i2 / ui2) through the integer ops (wrapping at the width) and the conversions
both ways. Tiny shapes: the simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import device_apply, needs_cuda

import xops as xo

pytestmark = needs_cuda

F8 = ("f8E3M4", "f8E4M3", "f8E5M2", "f8E4M3FN", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E5M2FNUZ")


def _bits(t):
    a = t.numpy()
    return a.view(f"u{a.itemsize}")


def _exact(dev, ref, any_nan_sign=False):
    """Same type, shape and bit patterns (f8 NaNs are single patterns per sign: exact).
    With ``any_nan_sign`` a NaN of the CPU may be a NaN of either sign on the device:
    arithmetic on a NaN operand returns that operand's NaN, sign kept, on x86 and a
    positive NaN on a GPU (IEEE 754 leaves that sign unspecified; found on an H100)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = _bits(dev), _bits(ref)
    if any_nan_sign and dev.dtype.kind == "float":
        nan = np.isnan(ref.numpy().astype(np.float32))
        np.testing.assert_array_equal(np.isnan(dev.numpy().astype(np.float32)), nan)
        a, b = a[~nan], b[~nan]
    np.testing.assert_array_equal(a, b)


def _same(f, *ts, any_nan_sign=False):
    """``f`` of the CUDA copies of ``ts`` equals ``f`` of ``ts`` bit for bit (each result,
    where ``f`` gives a tuple; ``any_nan_sign`` as in ``_exact``)."""
    dev, ref = f(*(t.to("cuda") for t in ts)), f(*ts)
    for d, r in zip(dev, ref) if isinstance(dev, tuple) else ((dev, ref),):
        _exact(d, r, any_nan_sign)


def _f8(name, n=24, seed=0, lo=-6.0, hi=6.0, special=True):
    v = np.random.default_rng(seed).uniform(lo, hi, n).astype(np.float32)
    if special:
        v[:8] = [0.0, -0.0, 0.5, -1.5, 2.5, 0.03, -3.0, 1.0]
    return xo.convert(xo.tensor(v), name)


def _all_patterns(name):
    return xo.tensor(np.arange(256, dtype=np.uint8).view(xo.as_dtype(name).np))


# -- the conversions -----------------------------------------------------------------------


def _f32_patterns(n=1500):
    """float32 bit patterns around every f8 rounding position: random, ties and
    near-ties, subnormals of both, overflow edges, infinities and NaNs, both signs."""
    rng = np.random.default_rng(1)
    r = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    near = rng.integers(0x33000000, 0x48000000, n, dtype=np.uint64).astype(np.uint32)
    ties = []
    for cut in (0x40000, 0x80000, 0x100000, 0x200000):  # half an ulp at 4, 3, 2, 1 bits
        for low in (cut, cut - 1, cut + 1, 3 * cut):
            for e in range(100, 146, 3):
                ties.append((e << 23) | low)
    edge = [0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x00000001, 0x007FFFFF,
            0x43E00000, 0x43E80000, 0x43F00000, 0x43700000, 0x43780000, 0x47600000,
            0x47700000, 0x477FFFFF, 0x41F80000, 0x41F00000, 0x41F40000]  # fmt: skip
    out = np.concatenate([r, near, np.array(ties + edge, np.uint32)])
    return np.concatenate([out, out | np.uint32(0x80000000)])


def check_format(name, fmt, f32, f64):
    """f8.py's device functions on format ``fmt`` of type ``name`` match the CPU: every
    bit pattern decoded, float32 bit patterns ``f32`` and float64 ones ``f64`` rounded."""
    from xops.kernels.cuda.f8 import _decode, _round

    dt = xo.as_dtype(name)
    h = np.arange(1 << dt.bits, dtype=np.uint8)
    want = h.view(dt.np).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(device_apply(_decode, h, *fmt), want.astype(np.int64), name)
    want = _bits(xo.convert(xo.tensor(f32.view(np.float32)), name))
    b = f32.astype(np.int64)
    got = device_apply(_round, b >> 31, b & 0x7FFFFFFF, 8, 23, *fmt)
    np.testing.assert_array_equal(got, want.astype(np.int64), err_msg=name)
    want = _bits(xo.convert(xo.tensor(f64.view(np.float64)), name))
    b = f64.view(np.int64)
    got = device_apply(_round, (b >> 63) & 1, b & 0x7FFFFFFFFFFFFFFF, 11, 52, *fmt)
    np.testing.assert_array_equal(got, want.astype(np.int64), err_msg=name)


def test_decode_and_round_match_the_cpu_for_every_format():
    from xops.kernels.cuda.f8 import F8 as FORMATS

    assert tuple(FORMATS) == F8
    f32 = _f32_patterns()
    f64 = np.concatenate(
        [
            f32.view(np.float32).astype(np.float64).view(np.uint64),
            np.array(
                [1.0 + 2**-4 + 2**-40, 1.0 + 2**-4 - 2**-40, 1e300, -1e-300, 2**-20], np.float64
            ).view(np.uint64),  # fmt: skip
        ]
    )
    for name, fmt in FORMATS.items():
        check_format(name, fmt, f32, f64)


@pytest.mark.parametrize("name", F8)
def test_every_bit_pattern_through_f32_and_back(name):
    x = _all_patterns(name)
    f = xo.convert(x.to("cuda"), "f32")
    _exact(f, xo.convert(x, "f32"))
    _exact(xo.convert(f, name), xo.convert(xo.convert(x, "f32"), name))
    edges = xo.tensor(_f32_patterns(40)[-120:].view(np.float32))  # ties, overflow, NaN
    _exact(xo.convert(edges.to("cuda"), name), xo.convert(edges, name))


def test_convert_kernels_both_ways():
    f64 = xo.tensor([1.0 + 2**-4 + 2**-40, 1e300, -1e-300, 2**-9 * 1.5, np.nan, -np.inf, 240.5])
    ints = {"i64": [2**62 + 1, -(2**63), 7, 0, -300], "ui64": [2**64 - 1, 5, 0],
            "i32": [-3, 57344, 449, 17], "ui8": [0, 255, 3], "i1": [True, False]}  # fmt: skip
    for name in ("f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E3M4"):
        _exact(xo.convert(f64.to("cuda"), name), xo.convert(f64, name))
        for t, v in ints.items():
            x = xo.tensor(v, t)
            _exact(xo.convert(x.to("cuda"), name), xo.convert(x, name))
        x = _f8(name, n=12)
        for dst in ("f64", "f16", "bf16", "i1", "f8E5M2", "f8E4M3FN"):
            _exact(xo.convert(x.to("cuda"), dst), xo.convert(x, dst))
        bf = xo.convert(xo.tensor([1.0625, -300.0, 1e-5, np.inf]), "bf16")
        _exact(xo.convert(bf.to("cuda"), name), xo.convert(bf, name))


# -- the elementwise ops ----------------------------------------------------------------------

EXACT2 = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder")
EXACT1 = ("negate", "abs", "sign", "floor", "ceil", "round_nearest_afz", "round_nearest_even",
          "sqrt", "is_finite")  # fmt: skip
NEAR1 = ("exponential", "log", "logistic", "tanh", "sine", "erf")


def check_exact_ops(a, b, lo, hi, unary=EXACT1):
    """EXACT2, ``unary``, compare, select, clamp(lo, a, hi) and weak scalars on the device
    equal the CPU bit for bit."""
    for op in EXACT2:
        _same(getattr(xo, op), a, b)
    for op in unary:
        _same(getattr(xo, op), xo.abs(a) if op == "sqrt" else a)
    for d in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        _same(lambda x, y, d=d: xo.compare(x, y, d), a, b)
    _same(xo.select, xo.compare(a, b, "LT"), a, b)
    _same(xo.clamp, xo.tensor(lo, a.dtype), a, xo.tensor(hi, a.dtype))
    _same(lambda x: (x * 2.5, 0.3 - x), a)  # weak scalars, rounded to the f8 type first


@pytest.mark.parametrize("name", ("f8E4M3FN", "f8E5M2", "f8E4M3FNUZ"))
def test_exact_ops_are_bit_exact(name):
    a, b = _f8(name, seed=3), _f8(name, seed=4, special=False)
    check_exact_ops(a, b, -1.0, 1.5)
    big = xo.convert(xo.tensor([200.0, 3e4, -3e4, np.inf, -np.inf, np.nan]), name)
    # overflow: inf, or NaN if the type has none (-3e4 is -NaN in f8E4M3FN: x * x is a NaN)
    _same(lambda x: (x * x, xo.is_finite(x)), big, any_nan_sign=True)
    _same(xo.maximum, big, a[:6], any_nan_sign=True)


def _ulps(dev, ref):
    """Units in the last place between f8 results of one sign (their bits' distance)."""
    assert dev.dtype == ref.dtype and dev.shape == ref.shape
    return int(np.abs(_bits(dev).astype(np.int64) - _bits(ref).astype(np.int64)).max())


@pytest.mark.parametrize("name", ("f8E4M3FN", "f8E5M2"))
def test_transcendental_ops_within_one_ulp(name):
    a = _f8(name, n=16, seed=5, lo=0.05, hi=1.4, special=False)
    b = _f8(name, n=16, seed=6, lo=0.5, hi=2.0, special=False)
    pairs = {op: (getattr(xo, op)(a.to("cuda")), getattr(xo, op)(a)) for op in NEAR1}
    pairs["power"] = (xo.power(a.to("cuda"), b.to("cuda")), a**b)
    for op, (dev, ref) in pairs.items():
        assert _ulps(dev, ref) <= 1, (op, _bits(dev), _bits(ref))


def test_f8_in_the_other_narrow_kernels():
    """The f8 types are narrow types to the other kernels too (as bf16 / f16): spot checks
    of dot_general, reduce, convolution, reduce_window and batch_norm_training, bit-exact
    here."""
    rng = np.random.default_rng(10)
    dims = dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    for name in ("f8E4M3FN", "f8E5M2FNUZ"):
        a = xo.convert(xo.tensor(rng.uniform(-2, 2, (3, 5)).astype(np.float32)), name)
        b = xo.convert(xo.tensor(rng.uniform(-2, 2, (5, 4)).astype(np.float32)), name)
        _same(lambda x, y: xo.dot_general(x, y, **dims), a, b)
        for body in (xo.add, xo.maximum):
            _same(lambda x, i, f=body: xo.reduce([x], [i], dimensions=[1], body=f), a,
                  xo.tensor(0.0, name))  # fmt: skip
        img = xo.convert(xo.tensor(rng.uniform(-2, 2, (1, 2, 4, 4)).astype(np.float32)), name)
        ker = xo.convert(xo.tensor(rng.uniform(-1, 1, (2, 2, 2, 2)).astype(np.float32)), name)
        _same(xo.convolution, img, ker)
        _same(lambda x, i: xo.reduce_window(x, i, window_dimensions=[1, 1, 2, 2], body=xo.add),
              img, xo.tensor(0.0, name))  # fmt: skip
        scale, offset = xo.convert(b[:3, 0], name), xo.convert(b[:3, 1], name)
        _same(lambda x, s, o: tuple(xo.batch_norm_training(x, s, o, 1e-3, 1)), a[:, :3], scale,
              offset)  # fmt: skip


# -- i2 / i4 / ui2 / ui4 ------------------------------------------------------------------------

INT2 = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and_", "or_",
        "xor", "shift_left", "shift_right_arithmetic")  # fmt: skip
INT1 = ("negate", "abs", "sign", "not_", "popcnt", "count_leading_zeros")


def _pairs(name):
    """Every value of the type against 0, 1, -1 (or the largest), the least value and a
    permutation of the values (every pair for i2 / ui2)."""
    info = xo.as_dtype(name)
    lo = -(1 << (info.bits - 1)) if info.kind == "si" else 0
    v = np.arange(lo, lo + (1 << info.bits))
    if info.bits == 2:
        a, b = np.meshgrid(v, v)
        return xo.tensor(a.ravel(), name), xo.tensor(b.ravel(), name)
    b = [np.full_like(v, c) for c in (0, 1, v[-1] if lo == 0 else -1, lo)]
    b.append(np.random.default_rng(9).permutation(v))
    return xo.tensor(np.tile(v, len(b)), name), xo.tensor(np.concatenate(b), name)


@pytest.mark.parametrize("name", ("i4", "ui4", "i2", "ui2"))
def test_sub_byte_integer_ops_wrap_as_the_cpu(name):
    a, b = _pairs(name)
    da, db = a.to("cuda"), b.to("cuda")
    for op in INT2:
        if op == "shift_right_arithmetic" and name.startswith("u"):
            continue
        f = getattr(xo, op)
        _exact(f(da, db), f(a, b))
    for op in INT1:
        if op in ("abs", "sign") and name.startswith("u"):
            continue
        f = getattr(xo, op)
        _exact(f(da), f(a))
    for d in ("EQ", "NE", "LT", "GE"):
        _exact(xo.compare(da, db, d), xo.compare(a, b, d))
    p = xo.compare(a, b, "GT")
    _exact(xo.select(p.to("cuda"), da, db), xo.select(p, a, b))
    lo, hi = xo.tensor(0, name), xo.tensor(1, name)
    _exact(xo.clamp(lo.to("cuda"), da, hi.to("cuda")), xo.clamp(lo, a, hi))
    _exact(da + 1, a + 1)  # a weak scalar


def test_sub_byte_conversions_both_ways():
    ints = {"i64": [2**62 + 9, -(2**63), 7, -9, 100], "ui64": [2**64 - 1, 15, 16],
            "i32": [-3, 8, -8, 255], "i8": [127, -128, 5], "ui8": [255, 8, 7],
            "i1": [True, False]}  # fmt: skip
    for name in ("i4", "ui4", "i2", "ui2"):
        for t, v in ints.items():
            x = xo.tensor(v, t)
            _exact(xo.convert(x.to("cuda"), name), xo.convert(x, name))
        x = _pairs(name)[0][: 1 << xo.as_dtype(name).bits]
        for dst in ("i4", "ui4", "i2", "ui2", "i8", "ui64", "i1", "f32", "f64", "bf16", "f16",
                    "f8E4M3FN", "f8E5M2"):  # fmt: skip
            _exact(xo.convert(x.to("cuda"), dst), xo.convert(x, dst))


# -- errors ------------------------------------------------------------------------------------


def test_f8_and_sub_byte_errors():
    f8 = xo.convert(xo.tensor([1.5, -2.0]), "f8E4M3FN").to("cuda")
    i4 = xo.tensor([1, -2], "i4").to("cuda")
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):  # the CPU op's checks first
        xo.add(f8, xo.convert(f8, "f8E5M2"))
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):
        xo.add(i4, xo.convert(i4, "i8"))
    with pytest.raises(xo.SpecError, match=r"^add \(I2\)"):
        i4 + 20
    with pytest.raises(xo.SpecError, match=r"^power \(device\): has no cuda kernel.*i4"):
        xo.power(i4, i4)
