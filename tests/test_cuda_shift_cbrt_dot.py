"""shift_right_logical (and shift_right_arithmetic on unsigned types), cbrt and XLA's Dot
on the device, compared with the CPU: the shifts bit for bit on every integer width
(each type's extremes, amounts 0, 1, width - 1, width and beyond, negative amounts read
as unsigned); cbrt bit for bit (it runs the CPU's own algorithm, xops/kernels/cuda/
_cbrt.py) on f32 / f64 over the whole range, perfect cubes, subnormals and specials, and
on bf16 / f8 (rounded once more, as the CPU); dot on vector / matrix operands with the
GEMM's tolerance and integers bit for bit. Tiny shapes: the simulator runs a Python
thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import needs_cuda
from test_cuda_conversion import _exact

import xops as xo

pytestmark = needs_cuda


INTS = ("i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64")


@pytest.mark.parametrize("name", INTS)
def test_shifts_match_the_cpu(name):
    dt = xo.as_dtype(name)
    lo, hi, w = dt.min, dt.max, dt.bits
    vals = [lo, hi, 0, 1, lo + 1, hi - 1, hi // 3, lo // 3]
    amounts = [0, 1, w - 1, w, w + 1, 2, 1 % w, w // 2]
    amounts[4] = -1 if dt.kind == "si" else hi  # (-1 is read as unsigned: >= the width)
    a = np.array(vals * len(amounts), dtype=object)
    s = np.repeat(np.array(amounts, dtype=object), len(vals))
    x = xo.tensor(a.tolist(), name)
    wide = "i64" if dt.kind == "si" else "ui64"
    y = xo.convert(xo.tensor(s.tolist(), wide), name)  # (wrapped to the width: bit patterns)
    for op in (xo.shift_right_logical, xo.shift_right_arithmetic, xo.shift_left):
        _exact(op(x.to("cuda"), y.to("cuda")), op(x, y))
    _exact(xo.shift_right_logical(x.to("cuda"), 1), xo.shift_right_logical(x, 1))  # weak


def test_cbrt_is_bit_exact():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(120) * 10.0 ** rng.integers(-300, 300, 120)
    cubes = np.arange(-6, 7, dtype=np.float64) ** 3
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.2e-308, 1.7e308, 7.999999999, 1.0,
               1.0 + 2**-52, 1.0 - 2**-53, 8.0 - 2**-50, 0.001, 27e30]  # fmt: skip
    x64 = xo.tensor(np.concatenate([v, cubes, special]))
    _exact(xo.cbrt(x64.to("cuda")), xo.cbrt(x64))
    v32 = rng.standard_normal(120).astype(np.float32) * np.float32(2.0) ** rng.integers(
        -149, 127, 120
    ).astype(np.float32)
    x32 = xo.tensor(np.concatenate([v32, cubes.astype(np.float32), np.float32(special)]))
    _exact(xo.cbrt(x32.to("cuda")), xo.cbrt(x32))
    for name in ("bf16", "f16", "f8E4M3FN", "f4E2M1FN"):
        x = xo.convert(xo.tensor(rng.uniform(-6, 6, 40).astype(np.float32)), name)
        _exact(xo.cbrt(x.to("cuda")), xo.cbrt(x))


def test_cbrt_residual_is_the_cpus():
    """The device's Dekker residual (products as fma(a, b, +0)) gives the CPU's bits."""
    from numba import cuda

    from xops.kernels.cuda import elementwise as E
    from xops.kernels.cuda._cbrt import _residual
    from xops.ops._portable import _cube_residual

    rng = np.random.default_rng(1)
    ys = 1.0 + rng.random(64)
    a = ys**3 * (1.0 + rng.standard_normal(64) * 2**-50)
    out = cuda.device_array(64, np.float64)
    fn = getattr(_residual, "py_func", None) or _residual.fn  # (a map kernel over it)
    E._kernel2(fn)[1, 64](cuda.to_device(ys), cuda.to_device(a), 1, 1, out)
    got = out.copy_to_host()
    np.testing.assert_array_equal(got.view(np.uint64), _cube_residual(ys, a).view(np.uint64))


def test_dot_matches_the_cpu():
    rng = np.random.default_rng(2)
    m, v = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    n = rng.standard_normal((7, 3)).astype(np.float32)
    for a, b in ((v, v), (m, v), (m, n), (v, n)):
        dev = xo.dot(xo.tensor(a).to("cuda"), xo.tensor(b).to("cuda"))
        ref = xo.dot(xo.tensor(a), xo.tensor(b))
        bound = 7 * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b))
        assert dev.dtype == ref.dtype and dev.shape == ref.shape
        assert np.all(np.abs(dev.numpy() - ref.numpy()) <= bound)
    i = xo.tensor(rng.integers(-9, 9, (4, 6)), "i8")
    j = xo.tensor(rng.integers(-9, 9, (6,)), "i8")
    _exact(xo.dot(i.to("cuda"), j.to("cuda"), preferred_element_type="i32"),
           xo.dot(i, j, preferred_element_type="i32"))  # fmt: skip
    with pytest.raises(xo.SpecError, match=r"^dot \(I1\): lhs and rhs must have rank 1 or 2"):
        xo.dot(xo.tensor(np.ones((2, 2, 2), np.float32)).to("cuda"), xo.tensor(v).to("cuda"))
    with pytest.raises(xo.SpecError, match=r"^dot \(C10\)"):
        xo.dot(xo.tensor(m).to("cuda"), xo.tensor(m).to("cuda"))


def test_errors():
    f = xo.tensor([1.0, 8.0]).to("cuda")
    with pytest.raises(xo.SpecError, match=r"^shift_right_logical \(I1\)"):
        xo.shift_right_logical(f, f)
    with pytest.raises(xo.SpecError, match=r"^shift_right_logical \(C1\)"):
        xo.shift_right_logical(xo.tensor([1], "i32").to("cuda"), xo.tensor([1], "i64").to("cuda"))
    with pytest.raises(xo.SpecError, match=r"^cbrt \(I1\)"):
        xo.cbrt(xo.tensor([1, 8]).to("cuda"))
    z = xo.tensor([1.0, 8.0, -27.0], "c64")  # (complex: the principal root, as the CPU)
    np.testing.assert_allclose(xo.cbrt(z.to("cuda")).numpy(), xo.cbrt(z).numpy(), rtol=1e-6)


def test_gradients_through_dot_cbrt_and_reduce_precision_on_the_device():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    b = np.array([0.5, -1.0, 2.0], np.float32)

    def f(x, y):
        z = xo.cbrt(xo.reduce_precision(xo.dot(x, y), 8, 10))
        return xo.reduce(z, xo.tensor(0.0).to(x.device), [0], xo.add)

    dev = xo.grad(f, argnums=(0, 1))(xo.tensor(a).to("cuda"), xo.tensor(b).to("cuda"))
    ref = xo.grad(f, argnums=(0, 1))(xo.tensor(a), xo.tensor(b))
    for d, r in zip(dev, ref):
        assert d.device == "cuda:0"
        np.testing.assert_allclose(d.numpy(), r.numpy(), rtol=1e-6)
