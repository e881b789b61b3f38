"""reduce_precision and bitcast_convert on the device (xops/kernels/cuda/conversion.py),
compared with the CPU bit for bit: reduce_precision on f32 and f64 values across their
whole range (subnormals, ties, infinities, NaNs, values that round up a binade) and on
every narrow float type, for exponent / mantissa widths that round, clamp, both, or
neither; bitcast_convert for every pair of element types whose widths divide (i1 as one
bit, the 2-, 4- and 6-bit types, bytes, complex), and the error paths. Tiny shapes: the
simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import needs_cuda

import xops as xo
from xops.ops.conversion import _bit_width

pytestmark = needs_cuda


def _exact(dev, ref):
    assert dev.device == "cuda:0" and ref.device == "cpu"
    a, b = dev.numpy(), ref.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def _floats(n=160, seed=0):
    """float32 values over the whole range (incl. subnormals), the specials first."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n).astype(np.float32)
    v *= np.float32(2.0) ** rng.integers(-140, 120, n).astype(np.float32)
    v[:12] = [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 1.5, 3.0, 6.0, 65519.0, 65520.0,
              3.4e38]  # fmt: skip
    return v


WIDTHS = ((5, 10), (8, 7), (8, 23), (11, 52), (2, 0), (3, 0), (4, 3), (1, 1), (6, 2), (8, 0))


def test_reduce_precision_f32_f64():
    v = _floats()
    rng = np.random.default_rng(1)
    v64 = v.astype(np.float64) * 2.0 ** rng.integers(-900, 900, v.size)
    v64[:12] = v[:12]
    v64[12:16] = [5e-324, 2.2e-308, 1.7e308, 1.0 + 2**-52]
    for x in (xo.tensor(v), xo.tensor(v64)):
        for e, m in WIDTHS:
            _exact(xo.reduce_precision(x.to("cuda"), e, m), xo.reduce_precision(x, e, m))


@pytest.mark.parametrize(
    "name",
    (
        "bf16",
        "f16",
        "f8E4M3FN",
        "f8E5M2FNUZ",
        "f8E3M4",
        "f4E2M1FN",
        "f6E3M2FN",
        "f8E8M0FNU",
    ),  # fmt: skip
)
def test_reduce_precision_narrow_types(name):
    v = _floats(48)
    x = xo.convert(xo.tensor(np.abs(v) if name == "f8E8M0FNU" else v), name)
    for e, m in ((5, 10), (2, 0), (4, 3), (1, 1), (3, 0), (2, 1)):
        _exact(xo.reduce_precision(x.to("cuda"), e, m), xo.reduce_precision(x, e, m))


_TYPES = ("i1", "i2", "ui2", "i4", "ui4", "f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "i8", "ui8",
          "f8E4M3FN", "f8E8M0FNU", "i16", "bf16", "f16", "ui16", "i32", "f32", "ui32", "i64",
          "f64", "ui64")  # fmt: skip


def _random(name, shape, rng):
    """Random bit patterns of type ``name`` (one value per byte for the sub-byte types)."""
    dt = xo.as_dtype(name)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dt.np.itemsize, dtype=np.uint8)
    if dt.is_bool:
        return xo.tensor((raw & 1).astype(bool).reshape(shape))
    if dt.bits < 8:
        raw &= (1 << dt.bits) - 1
    return xo.tensor(raw.view(dt.np).reshape(shape), name)


def test_bitcast_convert_every_width_pair():
    rng = np.random.default_rng(2)
    pairs = 0
    for src in _TYPES:
        for dst in _TYPES:
            w, w2 = _bit_width(xo.as_dtype(src)), _bit_width(xo.as_dtype(dst))
            if w2 <= w and w % w2 == 0:
                shape = (2,)
            elif w2 > w and w2 % w == 0:
                shape = (2, w2 // w)
            else:
                continue
            x = _random(src, shape, rng)
            _exact(xo.bitcast_convert(x.to("cuda"), dst), xo.bitcast_convert(x, dst))
            pairs += 1
    assert pairs == 416


def test_bitcast_convert_complex_scalars_and_shapes():
    rng = np.random.default_rng(3)
    c = xo.tensor(rng.standard_normal((2, 2)).astype(np.complex64))
    for x, dst in ((c, "c64"), (c, "c128"), (xo.tensor(0x0123456789ABCDEF, "i64"), "ui16"),
                   (xo.tensor(5, "i32"), "f32"), (xo.tensor(3, "ui8"), "i1"),
                   (_random("i1", (2, 3, 8), rng), "ui8"), (_random("i4", (3, 2), rng), "ui8"),
                   (xo.tensor(rng.standard_normal((3, 2)).astype(np.float32)), "i64"),
                   (xo.tensor(rng.standard_normal((2, 1))), "f32")):  # fmt: skip
        _exact(xo.bitcast_convert(x.to("cuda"), dst), xo.bitcast_convert(x, dst))
    c128 = xo.bitcast_convert(c.to("cuda"), "c128")
    _exact(xo.bitcast_convert(c128, "c64"), c)


def test_errors():
    x = xo.tensor([1.0, 2.0]).to("cuda")
    with pytest.raises(xo.SpecError, match=r"^reduce_precision \(I1\)"):
        xo.reduce_precision(xo.tensor([1, 2]).to("cuda"), 5, 10)
    with pytest.raises(xo.SpecError, match=r"^reduce_precision \(C2\)"):
        xo.reduce_precision(x, 0, 10)
    with pytest.raises(xo.SpecError, match=r"^reduce_precision \(C3\)"):
        xo.reduce_precision(x, 5, -1)
    with pytest.raises(xo.SpecError, match=r"^bitcast_convert \(C2\)"):
        xo.bitcast_convert(x, "c64")
    with pytest.raises(xo.SpecError, match=r"^bitcast_convert \(C1\).*last dim must be 2"):
        xo.bitcast_convert(xo.tensor([1, 2, 3], "i32").to("cuda"), "f64")
    with pytest.raises(
        xo.SpecError, match=r"^bitcast_convert \(C1\).*width of i4 \(4\) must divide"
    ):
        xo.bitcast_convert(xo.tensor([1, 2], "i4").to("cuda"), "f6E2M3FN")
    with pytest.raises(xo.SpecError, match=r"^bitcast_convert \(I2\)"):
        xo.bitcast_convert(x, "f7")


_INTS = ("i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64", "i2", "ui2", "i4", "ui4")


@pytest.mark.parametrize(
    "src", ["f64", "f32", "bf16", "f16", "f8E4M3FN", "f8E5M2FNUZ", "f4E2M1FN", "f8E8M0FNU", "c64"]
)
def test_float_to_integer_truncates_and_saturates_as_the_cpu(src):
    """convert from every float type (and complex: its real part) to every integer
    type: NaN -> 0, truncation toward zero, saturation at each type's bounds (values
    just inside and outside them, +-inf, -0, the 64-bit edges 2**63 and 2**64)."""
    v = [np.nan, -np.inf, np.inf, -0.0, 0.7, -0.7, 1.5, -2.5, 7.9, -8.5, 127.9, 128.0,
         -128.9, -129.0, 255.5, 256.0, 65535.9, 3e9, -3e9, 2.0**63, -(2.0**63), 2.0**64,
         1e30, -1e30]  # fmt: skip
    x = xo.convert(xo.tensor(np.array(v, np.float64)), src)
    for dst in _INTS:
        _exact(xo.convert(x.to("cuda"), dst), xo.convert(x, dst))


@pytest.mark.parametrize(
    "dt", ["f32", "f64", "bf16", "f16", "f8E4M3FN", "f8E4M3FNUZ", "f4E2M1FN", "f8E8M0FNU"]
)
def test_compare_totalorder_as_the_cpu(dt):
    """compare with compare_type TOTALORDER on the device orders bit patterns as the CPU:
    -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (equal NaNs equal, -0 != +0; the
    FNUZ formats' NaN just below +0; f8E8M0FNU by pattern), tensor and weak-scalar
    operands."""
    v = np.array([np.nan, -np.nan, -np.inf, np.inf, -0.0, 0.0, 1.5, -1.5, 3e38, -1e-40, 7.0])
    x = xo.convert(xo.tensor(v.astype(np.float32)), dt)
    y = xo.convert(xo.tensor(v[::-1].astype(np.float32)), dt)
    for d in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        _exact(xo.compare(x.to("cuda"), y.to("cuda"), d, "TOTALORDER"),
               xo.compare(x, y, d, "TOTALORDER"))  # fmt: skip
        _exact(xo.compare(x.to("cuda"), 1.5, d, "TOTALORDER"), xo.compare(x, 1.5, d, "TOTALORDER"))
    with pytest.raises(xo.SpecError, match=r"^compare \(C3\)"):  # (floats only)
        xo.compare(xo.tensor([1, 2]).to("cuda"), xo.tensor([2, 1]).to("cuda"), "LT", "TOTALORDER")
