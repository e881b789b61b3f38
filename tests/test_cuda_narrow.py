"""bf16 and f16 on the device (xops/kernels/cuda/narrow.py and the elementwise kernels),
compared with the CPU bit for bit: the conversions (every bf16 and f16 bit pattern
decoded; float32 / float64 bit patterns rounded: ties, subnormals, overflow, NaN
payloads; 64-bit integers with sticky bits), every elementwise op that computes exactly
in float32 (arithmetic, min/max, rounding, sign, compare, select, clamp, is_finite), weak
scalar operands, and the transcendental ops within one unit in the last place of the
narrow type (libdevice and the CPU's float32 functions may differ by an ulp before the
rounding). Tiny shapes: the simulator runs a Python thread per CUDA thread."""

import ml_dtypes
import numpy as np
import pytest
from cuda_support import device_apply, needs_cuda

import xops as xo

pytestmark = needs_cuda

NARROW = ("bf16", "f16")
_HOLDER = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def _bits(t):
    return t.numpy().view(np.uint16)


def _exact(dev, ref):
    """Same type, shape and bits (NaNs: wherever the CPU has a NaN, of any payload, since a
    GPU's float32 NaN results carry another sign and payload than x86's)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy(), ref.numpy()
    if dev.dtype.name in NARROW:
        nan = np.isnan(b.astype(np.float32))
        np.testing.assert_array_equal(np.isnan(a.astype(np.float32)), nan)
        np.testing.assert_array_equal(a.view(np.uint16)[~nan], b.view(np.uint16)[~nan])
    else:
        np.testing.assert_array_equal(a, b)


def _values(dt, n=48, seed=0, lo=-4.0, hi=4.0, zeros=True, special=True):
    """n values of type dt: random in [lo, hi), and unless not ``special`` zeros of both
    signs (or not: ``zeros``), halves and small ones."""
    v = np.random.default_rng(seed).uniform(lo, hi, n).astype(np.float32)
    if special:
        v[:8] = [0.0 if zeros else 0.25, -0.0 if zeros else 7.0, 0.5, -1.5, 2.5, 1e-3, -3.0, 1.0]
    return xo.convert(xo.tensor(v), dt)


# -- the conversions -------------------------------------------------------------------------


def test_decode_every_bit_pattern():
    from xops.kernels.cuda.narrow import _decode

    h = np.arange(65536, dtype=np.uint16)
    for name, f16 in (("bf16", 0), ("f16", 1)):
        want = h.view(_HOLDER[name]).astype(np.float32).view(np.uint32)
        got = device_apply(_decode, h, f16)
        np.testing.assert_array_equal(got, want.astype(np.int64))


def _f32_patterns():
    """float32 bit patterns that stress rounding to bf16 / f16: random, ties and
    near-ties at both formats' rounding positions, subnormals, overflow edges, NaNs."""
    rng = np.random.default_rng(1)
    r = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    sig = rng.integers(0, 2**23, 400, dtype=np.uint64).astype(np.uint32)
    ties = []
    for low in (0x8000, 0x7FFF, 0x8001, 0x1000, 0x0FFF, 0x1001, 0x0000):  # bf16 and f16 cuts
        for e in (1, 50, 103, 110, 112, 113, 126, 127, 141, 142, 143, 254):
            ties.append((e << 23) | (sig[:20] & np.uint32(0x7F0000)) | low)
    edge = [0x477FF000, 0x477FEFFF, 0x477FE000, 0x7F7F8000, 0x7F7F7FFF, 0x33000000, 0x33000001,
            0x32FFFFFF, 0x387FC000, 0x00000001, 0x007FFFFF, 0x00008000, 0x00018000, 0x7F800000,
            0x7F800001, 0x7FC00000, 0x7F802000, 0x7F80FFFF, 0x7FFFFFFF, 0x7FA00000]  # fmt: skip
    out = np.concatenate([r, np.concatenate(ties).astype(np.uint32), np.array(edge, np.uint32)])
    return np.concatenate([out, out[-len(edge) :] | np.uint32(0x80000000)])


def test_round_pack_matches_the_cpu_from_f32_and_f64_bits():
    from xops.kernels.cuda.narrow import _FORMAT, _round_pack

    f32 = _f32_patterns()
    rng = np.random.default_rng(2)
    f64 = np.concatenate(
        [
            f32.view(np.float32).astype(np.float64).view(np.uint64),  # (exact values)
            rng.integers(0, 2**64, 1500, dtype=np.uint64),
            # just above / below a bf16 and an f16 tie: double rounding through f32 fails here
            np.array(
                [
                    1.0 + 2**-8 + 2**-40,
                    1.0 + 2**-8 - 2**-40,
                    1.0 + 2**-11 + 2**-40,
                    1.0 + 2**-11 - 2**-40,
                    2**-24 * 1.5,
                    2**-25 + 2**-60,
                ],
                np.float64,
            ).view(np.uint64),
        ]  # fmt: skip
    )
    for name, (ed, md, nan_payload) in _FORMAT.items():
        holder = _HOLDER[name]
        want = xo.convert(xo.tensor(f32.view(np.float32)), name).numpy().view(np.uint16)
        b = f32.astype(np.int64)
        got = device_apply(_round_pack, b >> 31, b & 0x7FFFFFFF, 8, 23, ed, md, nan_payload)
        np.testing.assert_array_equal(got, want.astype(np.int64), err_msg=name)
        want = xo.convert(xo.tensor(f64.view(np.float64)), name).numpy().view(np.uint16)
        b = f64.view(np.int64)
        sign, mag = (b >> 63) & 1, b & 0x7FFFFFFFFFFFFFFF
        got = device_apply(_round_pack, sign, mag, 11, 52, ed, md, nan_payload)
        np.testing.assert_array_equal(got, want.astype(np.int64), err_msg=name)
        assert holder  # (both formats covered)


def test_convert_kernels_are_bit_exact():
    f32 = xo.tensor(_f32_patterns()[-200:].view(np.float32))  # ties, subnormals, NaNs, edges
    f64 = xo.convert(f32, "f64")
    ints = {
        "i64": [2**62 + 2**50 + 1, -(2**63), 2**63 - 1, -(2**53) - 3, 7, 0, 2**53 + 1],
        "ui64": [2**64 - 1, 2**63 + 2**52 + 1, 2**53 + 3, 5, 0, 2**54 + 2**43],
        "i32": [2**31 - 1, -(2**31), 65519, 65520, -3, 0, 257],
        "ui8": [0, 255, 3, 129],
        "i1": [True, False, True],
    }
    for name in NARROW:
        for src in (f32, f64):
            _exact(xo.convert(src.to("cuda"), name), xo.convert(src, name))
        for t, v in ints.items():
            x = xo.tensor(v, t)
            _exact(xo.convert(x.to("cuda"), name), xo.convert(x, name))
        n = xo.convert(f32, name)  # narrow -> every float type and i1, NaNs included
        for dst in ("f32", "f64", "i1", "bf16", "f16"):
            dev, ref = xo.convert(n.to("cuda"), dst), xo.convert(n, dst)
            if dst in NARROW:
                _exact(dev, ref)
            else:
                np.testing.assert_array_equal(
                    dev.numpy().view(f"u{dev.numpy().itemsize}"),
                    ref.numpy().view(f"u{ref.numpy().itemsize}"),
                )


# -- the elementwise ops ----------------------------------------------------------------------

EXACT2 = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder")
EXACT1 = ("negate", "abs", "sign", "floor", "ceil", "round_nearest_afz", "round_nearest_even",
          "sqrt", "is_finite")  # fmt: skip
NEAR1 = ("exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "rsqrt",
         "tanh", "tan", "sine", "cosine", "erf")  # fmt: skip


@pytest.mark.parametrize("name", NARROW)
def test_exact_ops_are_bit_exact(name):
    a, b = _values(name, seed=3), _values(name, seed=4, zeros=False)
    da, db = a.to("cuda"), b.to("cuda")
    for op in EXACT2:
        f = getattr(xo, op)
        _exact(f(da, db), f(a, b))
    pos = xo.abs(a)
    for op in EXACT1:
        f = getattr(xo, op)
        src = pos if op == "sqrt" else a
        _exact(f(src.to("cuda")), f(src))
    for d in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        _exact(xo.compare(da, db, d), xo.compare(a, b, d))
    p = xo.compare(a, b, "LT")
    _exact(xo.select(p.to("cuda"), da, db), xo.select(p, a, b))
    lo, hi = xo.tensor(-1.0, name), xo.tensor(1.5, name)
    _exact(xo.clamp(lo.to("cuda"), da, hi.to("cuda")), xo.clamp(lo, a, hi))
    # weak Python scalars (rounded to the narrow type first, as on the CPU)
    _exact(da * 2.5, a * 2.5)
    _exact(0.3 - da, 0.3 - a)
    _exact(da / 3.0, a / 3.0)
    # overflow, infinities and NaN
    big = xo.tensor([60000.0, 3e38, -3e38, np.inf, -np.inf, np.nan], "f32")
    w = xo.convert(big, name)
    _exact(w.to("cuda") + w.to("cuda"), w + w)
    _exact(w.to("cuda") * w.to("cuda"), w * w)
    _exact(xo.is_finite(w.to("cuda")), xo.is_finite(w))
    _exact(xo.maximum(w.to("cuda"), da[:6]), xo.maximum(w, a[:6]))


@pytest.mark.parametrize("name", NARROW)
def test_transcendental_ops_within_one_ulp(name):
    a = _values(name, n=32, seed=5, lo=0.05, hi=1.4, special=False)
    for op in NEAR1:
        f = getattr(xo, op)
        dev, ref = f(a.to("cuda")), f(a)
        assert dev.dtype == ref.dtype and dev.shape == ref.shape
        d = np.abs(_bits(dev).astype(np.int64) - _bits(ref).astype(np.int64))
        assert d.max() <= 1, (op, _bits(dev), _bits(ref))
    b = _values(name, n=32, seed=6, lo=0.5, hi=2.0, special=False)
    for op in ("power", "atan2"):
        f = getattr(xo, op)
        d = np.abs(_bits(f(a.to("cuda"), b.to("cuda"))).astype(np.int64) - _bits(f(a, b)))
        assert d.max() <= 1, op


def test_narrow_errors():
    x = xo.convert(xo.tensor([1.5, -2.0]), "bf16").to("cuda")
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):  # the CPU op's checks first
        xo.add(x, xo.convert(x, "f16"))
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):  # (a body's op: its own checks)
        xo.reduce(
            x, xo.tensor(0.0, "bf16").to("cuda"), [0], lambda a, b: xo.add(a, xo.convert(b, "f16"))
        )


# -- dot_general with preferred_element_type ----------------------------------------------------

_DOT = dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])


def _dot_pair(a, b, dt, pref):
    x, y = xo.convert(xo.tensor(a), dt), xo.convert(xo.tensor(b), dt)
    dev = xo.dot_general(x.to("cuda"), y.to("cuda"), preferred_element_type=pref, **_DOT)
    ref = xo.dot_general(x, y, preferred_element_type=pref, **_DOT)
    assert dev.dtype == ref.dtype and dev.shape == ref.shape
    return dev, ref, x, y


def test_dot_general_preferred_element_type_integers_bit_exact():
    rng = np.random.default_rng(7)
    a, b = rng.integers(-128, 128, (3, 9)), rng.integers(-128, 128, (9, 4))
    a[0], b[:, 0] = 127, 127  # 127 * 127 * 9 passes i16
    cases = [("i8", "i32"), ("i8", "i16"), ("i8", "ui32"), ("ui8", "i32"), ("i32", "i8"),
             ("ui16", "i64"), ("i64", "ui8")]  # fmt: skip
    for dt, pref in cases:
        lo = 0 if dt.startswith("u") else -128
        av, bv = (np.clip(v, lo, 127) for v in (a, b))
        dev, ref, _, _ = _dot_pair(av, bv, dt, pref)
        np.testing.assert_array_equal(dev.numpy(), ref.numpy(), err_msg=f"{dt}->{pref}")
    exact = a.clip(-128, 127) @ b.clip(-128, 127)
    wrapped = _dot_pair(a.clip(-128, 127), b.clip(-128, 127), "i8", "i16")[0].numpy()
    assert (wrapped != exact).any() and (wrapped == exact.astype(np.int16)).all()


def test_dot_general_preferred_element_type_floats():
    rng = np.random.default_rng(8)
    a, b = rng.uniform(-2, 2, (3, 9)), rng.uniform(-2, 2, (9, 4))
    eps = {"f32": np.finfo(np.float32).eps, "f64": np.finfo(np.float64).eps}
    for dt, pref in (("bf16", "f32"), ("f16", "f32"), ("f64", "f32"), ("f32", "f64"),
                     ("bf16", "f64")):  # fmt: skip
        dev, ref, x, y = _dot_pair(a, b, dt, pref)
        xa = np.abs(xo.convert(x, "f64").numpy())
        ya = np.abs(xo.convert(y, "f64").numpy())
        bound = 2 * 9 * eps[pref] * (xa @ ya)  # both sum in the result type, in their order
        assert np.all(np.abs(dev.numpy() - ref.numpy()) <= bound), (dt, pref)
    for dt, pref in (("bf16", None), ("f16", None), ("f32", "bf16"), ("f64", "f16"),
                     ("bf16", "f16")):  # fmt: skip
        dev, ref, _, _ = _dot_pair(a, b, dt, pref)  # float32 sums, rounded once: 1 ulp
        d = np.abs(_bits(dev).astype(np.int64) - _bits(ref).astype(np.int64))
        assert d.max() <= 1, (dt, pref, _bits(dev), _bits(ref))
