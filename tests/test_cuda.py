"""CUDA tensors and kernels (xops.kernels.cuda), each checked against the CPU result.

Without a GPU, the first test re-runs this module and every other ``tests/test_cuda*.py``
in one subprocess under numba's CUDA simulator (see ``tests/cuda_support.py``). Shapes are
tiny: the simulator runs a Python thread per CUDA thread. Integer and data-movement results are
compared bit for bit; float math within rtol 1e-6 (f32: libdevice vs NumPy).
"""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import xops as xo
from cuda_support import HERE, INNER, cu, needs_cuda, same

pytestmark = pytest.mark.timeout(1500)


@pytest.mark.skipif(
    HERE or INNER, reason="CUDA is usable in this process: the CUDA tests run here directly"
)
def test_cuda_modules_under_the_simulator():
    try:
        import numba.cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba.cuda is not importable")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", XOPS_CUDA_INNER="1")
    modules = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "test_cuda*.py")))
    # the simulator evaluates device arithmetic with NumPy scalars, which warn on the
    # integer wraparound / IEEE results that CUDA gives silently
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
        + ["-W", "ignore::RuntimeWarning"]
        + modules,
        env=env,
        capture_output=True,
        text=True,
        timeout=1450,
    )
    assert out.returncode == 0 and " passed" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]


_cu, _same = cu, same


F = [[0.5, -1.25, 2.0], [3.5, -0.75, 1.5]]
IV = [[7, -3, 100], [-128, 127, 0]]


@needs_cuda
def test_to_and_numpy_round_trips():
    for dt in ("f32", "f64", "i8", "ui16", "i64", "bf16", "f8E4M3FN", "i4"):
        c = xo.tensor([[1, 2, 3], [-1, 0, 1]] if "u" not in dt else [[1, 2, 3], [4, 0, 1]], dt)
        g = c.to("cuda")
        assert g.device == "cuda:0" and str(g.device) == "cuda:0" and g.dtype == c.dtype
        back = g.to("cpu")
        assert back.device == "cpu"
        np.testing.assert_array_equal(back.numpy().view(np.uint8), c.numpy().view(np.uint8))
        assert g.tolist() == c.tolist() and g.shape == c.shape
    s = xo.tensor(2.5, device="cuda")
    assert s.shape == () and s.item() == 2.5 and "device='cuda:0'" in repr(s)
    with xo.default_device("cuda"):
        assert xo.tensor([1.0]).device == "cuda:0"
    assert xo.tensor([1.0]).device == "cpu"
    with pytest.raises(TypeError, match="does not convert to a NumPy array implicitly"):
        np.asarray(s)
    with pytest.raises(xo.SpecError, match=r"tensor: cannot convert a tensor on cuda:0"):
        xo.tensor(s, "f64")
    assert xo.tensor(s).device == "cuda:0"  # a tensor stays where it is
    import pickle

    back = pickle.loads(pickle.dumps(s))
    assert back.device == "cpu" and back.item() == 2.5
    with pytest.raises(RuntimeError, match="'cuda:1' is not available: xops uses one CUDA"):
        xo.tensor([1.0], device="cuda:1")


@needs_cuda
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_binary_kernels_match_the_cpu(name):
    f = getattr(xo, name)
    _same(f(_cu(F), _cu(F[::-1])), f(xo.tensor(F), xo.tensor(F[::-1])))
    _same(f(_cu(IV, "i8"), _cu(IV[::-1], "i8")), f(xo.tensor(IV, "i8"), xo.tensor(IV[::-1], "i8")))
    _same(f(_cu(F), 2.0), f(xo.tensor(F), 2.0))  # weak scalar


@needs_cuda
def test_more_elementwise_kernels_match_the_cpu():
    x = [[0.5, 1.25, 2.0], [3.5, 0.75, 1.5]]
    for name in (
        "negate",
        "abs",
        "floor",
        "ceil",
        "exponential",
        "log",
        "sqrt",
        "tanh",
        "sine",
        "cosine",
        "logistic",
    ):
        f = getattr(xo, name)
        _same(f(_cu(x)), f(xo.tensor(x)))
    _same(xo.divide(_cu(F), _cu(x)), xo.divide(xo.tensor(F), xo.tensor(x)))
    for name in ("and_", "or_", "xor"):
        f = getattr(xo, name)
        _same(
            f(_cu(IV, "i32"), _cu(IV[::-1], "i32")),
            f(xo.tensor(IV, "i32"), xo.tensor(IV[::-1], "i32")),
        )
    _same(xo.not_(_cu(IV, "i16")), xo.not_(xo.tensor(IV, "i16")))
    _same(xo.negate(_cu([0, 1, 255], "ui8")), xo.negate(xo.tensor([0, 1, 255], "ui8")))
    for d in ("EQ", "NE", "GE", "GT", "LE", "LT"):
        _same(xo.compare(_cu(F), _cu(x), d), xo.compare(xo.tensor(F), xo.tensor(x), d))
    p = [[True, False, True], [False, False, True]]
    _same(xo.select(_cu(p), _cu(F), _cu(x)), xo.select(xo.tensor(p), xo.tensor(F), xo.tensor(x)))
    _same(
        xo.clamp(_cu(0.0), _cu(F), _cu(2.0)), xo.clamp(xo.tensor(0.0), xo.tensor(F), xo.tensor(2.0))
    )
    _same(
        xo.clamp(_cu(-5, "i64"), _cu(IV, "i64"), _cu(9, "i64")),
        xo.clamp(xo.tensor(-5, "i64"), xo.tensor(IV, "i64"), xo.tensor(9, "i64")),
    )
    for src, dst in (("i32", "f32"), ("f64", "f32"), ("i64", "i8"), ("f32", "i1"), ("i1", "f32")):
        data = IV if src != "i1" else [[True, False, True]]
        _same(xo.convert(_cu(data, src), dst), xo.convert(xo.tensor(data, src), dst))


@needs_cuda
def test_data_movement_kernels_are_bit_exact():
    a, c = _cu(IV, "i32"), xo.tensor(IV, "i32")
    cases = [
        lambda t: xo.transpose(t, [1, 0]),
        lambda t: xo.broadcast_in_dim(t, [0, 2], [2, 2, 3]),
        lambda t: xo.reshape(t, [3, 2]),
        lambda t: xo.slice(t, [0, 1], [2, 3], [1, 2]),
        lambda t: xo.reverse(t, [1]),
        lambda t: xo.pad(t, xo.tensor(-9, "i32", device=t.device), [1, -1], [0, 2], [1, 0]),
        lambda t: xo.concatenate([t, t], 1),
        lambda t: xo.dynamic_slice(t, [1, 1], [1, 2]),
        lambda t: xo.dynamic_update_slice(t, xo.tensor([[5, 6]], "i32", device=t.device), [0, 1]),
    ]
    for f in cases:
        _same(f(a), f(c))


@needs_cuda
def test_reduce_kernel_matches_the_cpu():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8
    for body in (xo.add, xo.maximum, xo.minimum):
        for dims in ([0], [1, 2], [0, 1, 2]):
            init = 0.0 if body is xo.add else (-np.inf if body is xo.maximum else np.inf)
            _same(
                xo.reduce(_cu(x), _cu(init, "f32"), dims, body),
                xo.reduce(xo.tensor(x), xo.tensor(init, "f32"), dims, body),
            )
    n = np.arange(-40, 40, dtype=np.int64).reshape(8, 10) * 3
    _same(
        xo.reduce(_cu(n), _cu(0), [1], xo.add), xo.reduce(xo.tensor(n), xo.tensor(0), [1], xo.add)
    )


@needs_cuda
def test_errors_name_the_op_and_the_devices():
    with pytest.raises(
        xo.SpecError,
        match=r"add \(device\): operands live on different "
        r"devices \(cpu, cuda:0\)",
    ):
        xo.add(xo.tensor([1.0]), _cu([1.0]))
    with pytest.raises(xo.SpecError, match=r"get_dimension_size \(device\): has no cuda kernel"):
        xo.get_dimension_size(_cu([1.0, 8.0]), 0)
    with pytest.raises(xo.SpecError, match=r"add \(C1\)"):  # the op's own checks still run
        xo.add(_cu([1.0]), _cu([1], "i32"))
    with pytest.raises(xo.SpecError, match=r"transpose \(C2\)"):
        xo.transpose(_cu(IV), [0, 0])
    with pytest.raises(
        xo.SpecError, match=r"cholesky \(device\): has no cuda kernel for element type f8E8M0FNU"
    ):
        xo.cholesky(xo.convert(_cu(np.eye(2, dtype=np.float32) * 4), "f8E8M0FNU"))


@needs_cuda
def test_the_tape_runs_on_cuda_tensors():
    x0 = [1.0, -2.0, 3.5]
    x = xo.tensor(x0, device="cuda", requires_grad=True)
    g = xo.grad(lambda t: xo.reduce(t * t, _cu(0.0), [0], xo.add))(x)
    assert g.device == "cuda:0"
    np.testing.assert_array_equal(g.numpy(), 2 * np.array(x0, np.float32))
    y = xo.tensor(x0, device="cuda", requires_grad=True)
    xo.reduce(xo.exponential(y) * 3.0, _cu(0.0), [0], xo.add).backward()
    np.testing.assert_allclose(y.grad.numpy(), 3 * np.exp(np.array(x0, np.float32)), rtol=1e-6)


@needs_cuda
def test_dot_general_kernel_matches_the_cpu():
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, (2, 5, 9)).astype(np.int32)
    b = rng.integers(-50, 50, (2, 9, 3)).astype(np.int32)
    kw = dict(
        lhs_batching_dimensions=[0],
        rhs_batching_dimensions=[0],
        lhs_contracting_dimensions=[2],
        rhs_contracting_dimensions=[1],
    )
    _same(xo.dot_general(_cu(a), _cu(b), **kw), xo.dot_general(xo.tensor(a), xo.tensor(b), **kw))
    f, g = a[0].astype(np.float32) / 7, b[1].astype(np.float32) / 3  # (5, 9), (9, 3)
    ft, gt = f.T.copy(), g.T.copy()  # (9, 5), (3, 9): f @ g with both operands transposed
    kw = dict(lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[1])
    dev = xo.dot_general(_cu(ft), _cu(gt), **kw)
    ref = xo.dot_general(xo.tensor(ft), xo.tensor(gt), **kw).numpy()
    # the float GEMM sums in f32 in k order: the classic bound |err| <= K eps sum|a||b|
    bound = 9 * np.finfo(np.float32).eps * (np.abs(f) @ np.abs(g))
    assert dev.dtype == xo.float32 and dev.shape == (5, 3)
    assert np.all(np.abs(dev.numpy() - ref) <= bound), (dev.numpy() - ref, bound)
    with pytest.raises(xo.SpecError, match=r"dot_general \(C10\)"):
        xo.dot_general(
            _cu(f), _cu(g), lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[0]
        )
    with pytest.raises(xo.SpecError, match=r"dot_general \(device\): has no cuda kernel.*i4"):
        xo.dot_general(  # (sub-byte integers; every float type has the kernel)
            _cu(f, "i4"),
            _cu(g, "i4"),
            lhs_contracting_dimensions=[1],
            rhs_contracting_dimensions=[0],
        )


@needs_cuda
def test_numpy_layer_creation_and_reductions_on_cuda():
    import xops.numpy as xnp

    z = xnp.zeros((2, 3), device="cuda")
    assert z.device == "cuda:0" and z.numpy().tolist() == [[0.0] * 3] * 2
    o = xnp.ones_like(z)  # the operand's device
    assert o.device == "cuda:0"
    assert xnp.arange(4, device="cuda").numpy().tolist() == [0, 1, 2, 3]
    assert xnp.ones(2, device="cpu").device == "cpu"
    with xo.default_device("cuda"):
        assert xnp.full((2,), 7, dtype="i32").device == "cuda:0"
    x = xo.tensor([[1.0, 2.0], [3.0, 4.5]], device="cuda")
    s = xnp.sum(x, axis=1)
    assert s.device == "cuda:0" and s.numpy().tolist() == [3.0, 7.5]
    assert xnp.max(x).item() == 4.5 and x.sum().item() == 10.5
    assert "cuda:0" in [str(d) for d in xnp.__array_namespace_info__().devices()]
    w = xnp.where(x > 2.0, x, 0.0)  # a Python scalar operand joins x on its device
    assert w.device == "cuda:0" and w.numpy().tolist() == [[0.0, 0.0], [3.0, 4.5]]
    assert xnp.add(x, 1.0).numpy().tolist() == [[2.0, 3.0], [4.0, 5.5]]
    m = x @ xo.tensor([[1.0], [2.0]], device="cuda")
    assert m.device == "cuda:0" and m.numpy().tolist() == [[5.0], [12.0]]
    y = xnp.astype(xo.tensor([1, 2], "i32"), "f32", device="cuda")
    assert y.device == "cuda:0" and y.numpy().tolist() == [1.0, 2.0]


@needs_cuda
def test_integer_and_bit_kernels_are_bit_exact():
    a = np.array([[7, -7, 0, -128], [127, -1, 5, 3]], np.int8)
    b = np.array([[2, 2, 0, -1], [0, -3, -5, 9]], np.int8)
    s = np.array([[1, 7, 8, -1], [0, 3, 2, 6]], np.int8)
    for name in ("divide", "remainder"):
        f = getattr(xo, name)
        _same(f(_cu(a), _cu(b)), f(xo.tensor(a), xo.tensor(b)))
        _same(
            f(_cu(a.astype(np.uint16)), _cu(b.astype(np.uint16))),
            f(xo.tensor(a.astype(np.uint16)), xo.tensor(b.astype(np.uint16))),
        )
    for name in ("shift_left", "shift_right_arithmetic"):
        f = getattr(xo, name)
        _same(f(_cu(a), _cu(s)), f(xo.tensor(a), xo.tensor(s)))
    _same(
        xo.shift_left(_cu(a.astype(np.uint8)), _cu(s.astype(np.uint8))),
        xo.shift_left(xo.tensor(a.astype(np.uint8)), xo.tensor(s.astype(np.uint8))),
    )
    for name in ("popcnt", "count_leading_zeros", "sign"):
        f = getattr(xo, name)
        _same(f(_cu(a)), f(xo.tensor(a)))
        _same(f(_cu(a.astype(np.int64))), f(xo.tensor(a.astype(np.int64))))
    _same(xo.popcnt(_cu(a.astype(np.uint32))), xo.popcnt(xo.tensor(a.astype(np.uint32))))


@needs_cuda
def test_more_float_kernels_match_the_cpu():
    x = np.array([[0.5, -1.25, 2.0], [3.5, -0.0, 0.0]], np.float32)
    y = np.array([[1.5, 0.75, -2.5], [2.0, 3.0, -1.0]], np.float32)
    for name in ("remainder", "atan2"):
        f = getattr(xo, name)
        _same(f(_cu(x), _cu(y)), f(xo.tensor(x), xo.tensor(y)))
    _same(xo.power(_cu(np.abs(x)), _cu(y)), xo.power(xo.tensor(np.abs(x)), xo.tensor(y)))
    for name in ("sign", "tan", "erf", "exponential_minus_one"):
        f = getattr(xo, name)
        _same(f(_cu(x)), f(xo.tensor(x)))
    np.testing.assert_array_equal(np.signbit(xo.sign(_cu(x)).numpy()), np.signbit(x))
    for name in ("rsqrt", "log_plus_one"):
        f = getattr(xo, name)
        _same(f(_cu(np.abs(x) + 1)), f(xo.tensor(np.abs(x) + 1)))
    z = np.array([-0.0, 0.0, -0.0, 0.0, np.nan, 1.0], np.float32)
    w = np.array([0.0, -0.0, -0.0, 0.0, 1.0, np.nan], np.float32)
    for name in ("maximum", "minimum"):  # IEEE 754-2019: NaN wins, -0 < +0
        dev, ref = getattr(xo, name)(_cu(z), _cu(w)).numpy(), getattr(xo, name)(z, w).numpy()
        np.testing.assert_array_equal(np.signbit(dev), np.signbit(ref))
        np.testing.assert_array_equal(dev, ref)
    for lo, hi in ((0.0, 0.0), (-0.0, -0.0), (0.0, -0.0), (-0.0, 0.0)):
        dev = xo.clamp(_cu(lo), _cu(z), _cu(hi)).numpy()
        ref = xo.clamp(xo.tensor(lo), xo.tensor(z), xo.tensor(hi)).numpy()
        np.testing.assert_array_equal(dev, ref)
        np.testing.assert_array_equal(np.signbit(dev), np.signbit(ref))
    r = np.array(
        [
            -2.5,
            -1.5,
            -0.5,
            -0.4,
            -0.0,
            0.0,
            0.5,
            1.5,
            2.5,
            2.6,
            1e7 + 0.5,
            3e9,
            np.inf,
            -np.inf,
            np.nan,
        ],
        np.float32,
    )
    for name in ("round_nearest_afz", "round_nearest_even", "floor", "ceil"):
        dev, ref = getattr(xo, name)(_cu(r)).numpy(), getattr(xo, name)(xo.tensor(r)).numpy()
        np.testing.assert_array_equal(dev, ref)
        np.testing.assert_array_equal(np.signbit(dev), np.signbit(ref))
    d = r.astype(np.float64) + np.array([0] * 11 + [0.5] + [0] * 3)  # 3e9 + 0.5: a tie
    _same(xo.round_nearest_even(_cu(d)), xo.round_nearest_even(xo.tensor(d)))
    big = np.array([1.0, 3e38, -3e38, 0.0], np.float32)
    _same(xo.is_finite(_cu(big) * 10.0), xo.is_finite(xo.tensor(big) * 10.0))


@needs_cuda
def test_the_status_list_names_every_cuda_kernel():
    from xops import registry
    from xops.kernels import cuda as kc

    have = {d.name for d in registry.ops() if "cuda" in d.kernels}
    assert have == set(kc.OPS), have ^ set(kc.OPS)


@needs_cuda
def test_elementwise_maps_cover_every_element_at_tail_sizes():
    # sizes around the launch's block and warp boundaries (one block of whole warps below
    # 256 elements, blocks of 256 above), for every map kernel shape
    for n in (1, 31, 257, 1000, 1025, 4 * 256 * 2 + 3, 3 * 1024 - 5):
        x = (np.arange(n, dtype=np.int32) * 7919 - 5000).astype(np.int32)
        p = (np.arange(n) % 3) == 1
        _same(xo.negate(_cu(x)), xo.negate(xo.tensor(x)))
        _same(xo.subtract(_cu(x), 3), xo.subtract(xo.tensor(x), 3))  # broadcast weak scalar
        _same(xo.popcnt(_cu(x)), xo.popcnt(xo.tensor(x)))  # map1p
        _same(
            xo.select(_cu(p), _cu(x), _cu(x[::-1].copy())),
            xo.select(xo.tensor(p), xo.tensor(x), xo.tensor(x[::-1].copy())),
        )
        _same(
            xo.clamp(_cu(-7, "i32"), _cu(x), _cu(9000, "i32")),  # map3, 0-d bounds
            xo.clamp(xo.tensor(-7, "i32"), xo.tensor(x), xo.tensor(9000, "i32")),
        )
    f = np.linspace(-3.0, 3.0, 3 * 1024 - 5, dtype=np.float32)
    _same(xo.exponential(_cu(f)), xo.exponential(xo.tensor(f)))
