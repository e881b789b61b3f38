"""f4E2M1FN, f6E2M3FN, f6E3M2FN and f8E8M0FNU on the device (xops/kernels/cuda/f8.py's
kinds 3 and 4, the elementwise kernels), compared with the CPU bit for bit: every bit
pattern decoded, float32 / float64 patterns rounded through the device functions
(ties, saturation, NaN -> zero of the other sign, E8M0's ties away from zero, its
clamps), the elementwise ops exact in float32 (float64 for E8M0's arithmetic, as the
CPU), compare, select, clamp, weak scalars and convert both ways; the transcendental
ops within one unit in the last place. The other kernels (dot_general, reduce,
reduce_window, select_and_scatter, convolution, the batch norm ops, imag) take them as
the narrow types, decoded to float32 and rounded once (session 22): bit for bit as the
CPU. Tiny shapes: the simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import needs_cuda
from test_cuda_f8 import EXACT1, _bits, _exact, _f32_patterns, _same, _ulps, check_exact_ops
from test_cuda_f8 import check_format

import xops as xo

pytestmark = needs_cuda

SMALL = ("f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f8E8M0FNU")


def _values(name, n=24, seed=0, special=True):
    """n values of type ``name``: uniform in its range (E8M0: powers of two from 2**-20
    to 2**20), the first few special (zeros, halves, the largest value)."""
    rng = np.random.default_rng(seed)
    if name == "f8E8M0FNU":
        v = np.float32(2.0) ** rng.integers(-20, 21, n).astype(np.float32)
        if special:
            v[:4] = [1.0, 2.0**-127, 2.0**127, np.nan]
    else:
        big = float(xo.as_dtype(name).max)
        v = rng.uniform(-big, big, n).astype(np.float32)
        v[np.abs(v) < 0.5] = 1.0  # (no zero divisors: the simulator's math.fmod raises)
        if special:
            v[:6] = [0.0, -0.0, 0.5, -1.5, big, -big]
    return xo.convert(xo.tensor(v), name)


def test_decode_and_round_match_the_cpu_for_every_format():
    from xops.kernels.cuda.f8 import MORE

    assert tuple(MORE) == SMALL
    f32 = _f32_patterns(600)
    extra = [1.5 * 2**-127, 1.5 * 2**-127 * (1 + 2**-40), 1.5 * 2**-127 * (1 - 2**-40), 2**-128,
             2**-200, 1e300, 1.5 * 2**127, 1.5 * 2**127 * (1 - 2**-30), 0.75 + 2**-40, 5.0,
             5.0 + 2**-30, 3.0 * (1 - 2**-45), 6.5, 7.0 + 2**-40]  # fmt: skip
    f64 = np.concatenate(
        [f32.view(np.float32).astype(np.float64), np.array(extra), -np.array(extra)]
    ).view(np.uint64)
    for name, fmt in MORE.items():
        check_format(name, fmt, f32, f64)


@pytest.mark.parametrize("name", SMALL)
def test_every_bit_pattern_through_f32_and_back(name):
    dt = xo.as_dtype(name)
    x = xo.tensor(np.arange(1 << dt.bits, dtype=np.uint8).view(dt.np))
    f = xo.convert(x.to("cuda"), "f32")
    _exact(f, xo.convert(x, "f32"))
    _exact(xo.convert(f, name), xo.convert(xo.convert(x, "f32"), name))
    edges = xo.tensor(_f32_patterns(40)[-120:].view(np.float32))  # ties, overflow, NaN
    _exact(xo.convert(edges.to("cuda"), name), xo.convert(edges, name))


NEAR1 = ("exponential", "log", "logistic", "tanh", "sine", "erf")


@pytest.mark.parametrize("name", SMALL)
def test_exact_ops_compare_select_clamp_are_bit_exact(name):
    a, b = _values(name, seed=3), _values(name, seed=4, special=False)
    check_exact_ops(a, b, 0.5, 4.0, EXACT1 + ("cbrt",))
    _same(lambda x: (x / 0.75, 1.5 * x), a)  # weak scalars, rounded to the type first


def test_e8m0_arithmetic_in_float64_as_the_cpu():
    """E8M0 spans float32's exponent range: products and quotients that float32 would
    flush or overflow stay in range in float64 (2**-127 / 2**127 = 2**-254 -> 2**-127)."""
    e = np.float32(2.0) ** np.array([-127, -100, 127, 64, -64, 0, 1, -1], np.float32)
    f = np.float32(2.0) ** np.array([127, 100, -127, 64, -64, 3, 1, 127], np.float32)
    a, b = xo.convert(xo.tensor(e), "f8E8M0FNU"), xo.convert(xo.tensor(f), "f8E8M0FNU")
    for op in ("multiply", "divide", "add", "subtract", "remainder", "maximum"):
        _same(getattr(xo, op), a, b)
    _same(lambda x, y: (xo.power(x, xo.tensor([0.5] * 8, "f8E8M0FNU").to(x.device)), x * y), a, b)


@pytest.mark.parametrize("name", SMALL)
def test_conversions_both_ways(name):
    f64 = xo.tensor([1.0 + 2**-2 + 2**-40, 1e300, -1e-300, 2**-9 * 1.5, np.nan, -np.inf, 5.5])
    ints = {"i64": [2**62 + 1, -(2**63), 7, 0, -3], "ui64": [2**64 - 1, 5, 0],
            "i32": [-3, 6, 5, 17], "ui8": [0, 255, 3], "i4": [-8, 7, 3],
            "i1": [True, False]}  # fmt: skip
    _exact(xo.convert(f64.to("cuda"), name), xo.convert(f64, name))
    for t, v in ints.items():
        x = xo.tensor(v, t)
        _exact(xo.convert(x.to("cuda"), name), xo.convert(x, name))
    x = _values(name, n=12)
    for dst in ("f32", "f64", "f16", "bf16", "i1", "f8E5M2", "f8E4M3FN", *SMALL):
        _exact(xo.convert(x.to("cuda"), dst), xo.convert(x, dst))


@pytest.mark.parametrize("name", SMALL)
def test_transcendental_ops_within_one_ulp(name):
    lo, hi = (0.3, 1.4) if name != "f8E8M0FNU" else (0.1, 3.0)  # (no zeros: log)
    v = np.random.default_rng(5).uniform(lo, hi, 16).astype(np.float32)
    a = xo.convert(xo.tensor(v), name)
    b = xo.convert(xo.tensor(np.linspace(0.5, 2.0, 16, dtype=np.float32)), name)
    pairs = {op: (getattr(xo, op)(a.to("cuda")), getattr(xo, op)(a)) for op in NEAR1}
    pairs["power"] = (xo.power(a.to("cuda"), b.to("cuda")), a**b)
    pairs["atan2"] = (xo.atan2(a.to("cuda"), b.to("cuda")), xo.atan2(a, b))
    for op, (dev, ref) in pairs.items():
        assert _ulps(dev, ref) <= 1, (op, _bits(dev), _bits(ref))


def test_errors():
    f4 = xo.convert(xo.tensor([1.5, -2.0]), "f4E2M1FN").to("cuda")
    e8 = xo.convert(xo.tensor([1.0, 4.0]), "f8E8M0FNU").to("cuda")
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):  # the CPU op's checks first
        xo.add(f4, xo.convert(f4, "f6E2M3FN"))
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):  # a body's op: its own checks
        xo.reduce(e8, xo.tensor(1.0, e8.dtype).to("cuda"), [0], lambda a, b: xo.add(a, f4[0]))


@pytest.mark.parametrize("name", SMALL)
def test_the_other_kernels_bit_for_bit(name):
    """reduce, reduce_window, select_and_scatter, dot_general, convolution, the three
    batch norm ops and imag on each small float type, bit for bit as the CPU (both
    decode to float32, run the float32 (batch norm: float64) computation and round each
    result once). imag's zeros are the type's zero as the CPU converts 0.0 (f8E8M0FNU,
    which has no zero: its NaN)."""
    from xops.ops._bodies import Body

    rng = np.random.default_rng(3)
    v = rng.standard_normal((2, 3, 4, 4)) * 2
    if name == "f8E8M0FNU":
        v = np.abs(v) + 0.1
    x = xo.convert(xo.tensor(v.astype(np.float32)), name)

    def c(value, shape=()):  # a constant of the type on ``like``'s device
        return lambda like: xo.tensor(np.full(shape, value), name, device=like.device)

    zero, half, ones3 = c(0.0), c(0.5), c(1.0, (3,))
    cases = {
        "reduce add": lambda t: xo.reduce(t, zero(t), [1, 3], xo.add),
        "reduce max": lambda t: xo.reduce(t, c(-1.0)(t), [0, 2], xo.maximum),
        "max pool": lambda t: xo.reduce_window(
            t, half(t), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum
        ),
        "sum windows": lambda t: xo.reduce_window(t, zero(t), [1, 1, 2, 2], body=xo.add),
        "select_and_scatter": lambda t: xo.select_and_scatter(
            t,
            c(1.0, (2, 3, 2, 2))(t),
            zero(t),
            [1, 1, 2, 2],
            [1, 1, 2, 2],
            select=Body.compare("GE"),
            scatter=xo.add,
        ),
        "dot_general": lambda t: xo.dot_general(t, t, [0, 1], [0, 1], [3], [2]),
        "convolution": lambda t: xo.convolution(
            t, c(0.5, (2, 3, 3, 3))(t), window_strides=[1, 1], padding=[[1, 1], [1, 1]]
        ),
        "batch_norm_training": lambda t: xo.batch_norm_training(t, ones3(t), ones3(t), 1e-3, 1),
        "batch_norm_inference": lambda t: xo.batch_norm_inference(
            t, ones3(t), ones3(t), ones3(t), c(2.0, (3,))(t), 1e-3, 1
        ),
        "batch_norm_grad": lambda t: xo.batch_norm_grad(
            t, ones3(t), ones3(t), c(2.0, (3,))(t), t, 1e-3, 1
        ),
        "imag": xo.imag,
    }
    d = x.to("cuda")
    for case, f in cases.items():
        ref, dev = f(x), f(d)
        for r, g in zip(*((ref, dev) if isinstance(ref, tuple) else ((ref,), (dev,)))):
            assert g.device == "cuda:0" and g.dtype == r.dtype, case
            np.testing.assert_array_equal(_bits(g), _bits(r), err_msg=case)
