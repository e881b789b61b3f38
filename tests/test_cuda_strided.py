"""The CUDA kernels' layouts (issue 17, performance): the register-blocked GEMM under
every dimension numbering, strided copies for the movement ops, in-kernel positions of
reduce, weak scalars read from cached device copies. Each result is compared with the
CPU op's: bit for bit for integers and data movement; float GEMM within the classic
bound K * eps * sum|a||b| (the GPU sums in k order, maybe with fused multiply-adds).
Shapes are tiny (one block each: the simulator runs a Python thread per CUDA thread).
"""

import numpy as np
import pytest

import xops as xo
from cuda_support import cu, needs_cuda, same

pytestmark = needs_cuda


def _dot(a, b, **kw):
    return xo.dot_general(cu(a), cu(b), **kw), xo.dot_general(xo.tensor(a), xo.tensor(b), **kw)


def _close_gemm(dev, ref, a_abs_b_abs, k):
    """|dev - ref| <= 2 K eps sum|a||b| (both sums are within K eps of the exact one)."""
    assert dev.dtype == ref.dtype and dev.shape == ref.shape
    eps = np.finfo(ref.numpy().dtype).eps
    err = np.abs(dev.numpy() - ref.numpy())
    assert np.all(err <= 2 * k * eps * a_abs_b_abs), (err, a_abs_b_abs)


def _dims(lb, rb, lc, rc):
    """dot_general's dimension attributes by name."""
    names = ("lhs_batching", "rhs_batching", "lhs_contracting", "rhs_contracting")
    return {f"{n}_dimensions": v for n, v in zip(names, (lb, rb, lc, rc))}


RNG = np.random.default_rng(17)


def test_gemm_odd_sizes_batch_and_integer_types_are_bit_exact():
    a = RNG.integers(-50, 50, (2, 5, 13)).astype(np.int32)
    b = RNG.integers(-50, 50, (2, 13, 7)).astype(np.int32)
    same(*_dot(a, b, **_dims([0], [0], [2], [1])))
    # unsigned wraparound: products far past 2**8
    u, v = (
        RNG.integers(0, 256, (3, 9)).astype(np.uint8),
        RNG.integers(0, 256, (9, 4)).astype(np.uint8),
    )
    same(*_dot(u, v, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]))


def test_gemm_every_dimension_numbering():
    # the batch dim in the middle of lhs and last in rhs; contracting first in lhs
    a = RNG.integers(-9, 9, (4, 3, 2)).astype(np.int64)  # (k, b, m)
    b = RNG.integers(-9, 9, (5, 4, 3)).astype(np.int64)  # (n, k, b)
    same(*_dot(a, b, **_dims([1], [2], [0], [1])))
    # free dims split around the contracting dim (no single stride: a device copy first)
    h = RNG.integers(-9, 9, (3, 4, 2)).astype(np.int16)
    q = RNG.integers(-9, 9, (4, 3)).astype(np.int16)
    same(*_dot(h, q, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]))
    # two contracting dims paired in the opposite order on each side
    x = RNG.integers(-9, 9, (2, 3, 4)).astype(np.int32)  # (m, k1, k2)
    y = RNG.integers(-9, 9, (4, 3, 5)).astype(np.int32)  # (k2, k1, n)
    kw = dict(lhs_contracting_dimensions=[1, 2], rhs_contracting_dimensions=[1, 0])
    same(*_dot(x, y, **kw))
    # no contracting dims (an outer product) and no free dims (a batched dot)
    same(*_dot(x[:, 0, 0], y[0, 0], lhs_contracting_dimensions=[], rhs_contracting_dimensions=[]))
    same(*_dot(x[:, :, 0], x[:, :, 1], **_dims([0], [0], [1], [1])))


def test_gemm_plans_kept_per_signature_give_each_call_its_own_result():
    """A product's launch plan is kept per signature (operands read in place); the next
    calls of that signature take it with their own data, and products that copy an
    operand first (no single stride) work it out each time. Bit-exact integers."""
    from xops.kernels.cuda import linalg as L

    cases = [
        ((2, 5, 13), (2, 13, 7), _dims([0], [0], [2], [1])),  # in place: kept
        ((3, 4, 2), (4, 3), _dims([], [], [1], [0])),  # lhs copied: not kept
    ]
    for sa, sb, kw in cases:
        for _ in range(3):
            a = RNG.integers(-50, 50, sa).astype(np.int32)
            b = RNG.integers(-50, 50, sb).astype(np.int32)
            same(*_dot(a, b, **kw))
    kept = [k for k in L._plans if k[0] in ((2, 5, 13), (3, 4, 2))]
    assert [k[:2] for k in kept] == [((2, 5, 13), (2, 13, 7))]


def test_gemm_floats_transposed_operands_and_the_large_tile(monkeypatch):
    from xops.kernels.cuda import linalg as L

    f = RNG.standard_normal((11, 6)).astype(np.float32)  # (k, m)
    g = RNG.standard_normal((9, 11)).astype(np.float32)  # (n, k)
    f[0, 0] = np.inf  # row 0 of the result is inf/nan; the other rows stay finite
    kw = dict(lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[1])
    bound = np.nan_to_num(np.abs(f.T) @ np.abs(g.T), posinf=np.inf)
    dev, ref = _dot(f, g, **kw)
    assert np.isfinite(dev.numpy()[1:]).all()
    np.testing.assert_array_equal(np.isfinite(dev.numpy()), np.isfinite(ref.numpy()))
    fin = np.isfinite(ref.numpy())
    err = np.abs(dev.numpy() - ref.numpy())[fin]
    assert np.all(err <= 2 * 11 * np.finfo(np.float32).eps * bound[fin])
    monkeypatch.setattr(L, "_SMALL", 0)  # every result takes the 128 x 128 tile
    f[0, 0] = 1.0
    dev, ref = _dot(f, g, **kw)
    _close_gemm(dev, ref, np.abs(f.T) @ np.abs(g.T), 11)
    a = RNG.integers(-50, 50, (7, 19)).astype(np.int32)
    b = RNG.integers(-50, 50, (19, 10)).astype(np.int32)
    same(*_dot(a, b, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]))
    d, e = f.astype(np.float64), g.astype(np.float64)  # 8-byte types keep the 64 x 64 tile
    dev, ref = _dot(d, e, **kw)
    _close_gemm(dev, ref, np.abs(d.T) @ np.abs(e.T), 11)


def test_gemm_empty_extents_and_errors():
    a, b = np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32)
    dev, ref = _dot(a, b, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    same(dev, ref)
    assert dev.numpy().tolist() == [[0.0] * 4] * 3
    a = np.zeros((0, 2), np.int32)
    same(*_dot(a, a.T.copy(), lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]))
    with pytest.raises(xo.SpecError, match=r"dot_general \(C2\)") as e_dev:
        xo.dot_general(cu([[1.0, 2.0]]), cu([[1.0, 2.0]]), lhs_contracting_dimensions=[1])
    with pytest.raises(xo.SpecError, match=r"dot_general \(C2\)") as e_cpu:
        xo.dot_general(
            xo.tensor([[1.0, 2.0]]), xo.tensor([[1.0, 2.0]]), lhs_contracting_dimensions=[1]
        )
    assert str(e_dev.value) == str(e_cpu.value)


def test_gemm_gradient_on_the_device():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    kw = dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])

    def loss(x, y):
        return xo.reduce(
            xo.dot_general(x, y, **kw), xo.tensor(0.0, device=x.device), [0, 1], xo.add
        )

    gd = xo.grad(loss, argnums=(0, 1))(cu(a), cu(b))
    gc = xo.grad(loss, argnums=(0, 1))(xo.tensor(a), xo.tensor(b))
    for d, c in zip(gd, gc):
        same(d, c, rtol=1e-5)


def test_movement_views_and_strided_copies_are_bit_exact():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    h = xo.tensor(x)
    d = cu(x)
    cases = [
        lambda t: xo.transpose(t, [2, 0, 1]),
        lambda t: xo.broadcast_in_dim(t, [3, 1, 2], [5, 3, 4, 2]),
        lambda t: xo.broadcast_in_dim(xo.slice(t, [0, 0, 0], [2, 1, 4]), [0, 1, 2], [2, 3, 4]),
        lambda t: xo.broadcast(t, [2]),
        lambda t: xo.reshape(t, [4, 6]),  # a view of the device array
        lambda t: xo.reshape(t, [4, 3, 2], dimensions=[2, 1, 0]),
        lambda t: xo.collapse(t, [1, 2]),
        lambda t: xo.slice(t, [1, 0, 0], [2, 3, 4]),  # contiguous: a view
        lambda t: xo.slice(t, [0, 1, 1], [2, 3, 4], [1, 1, 2]),
        lambda t: xo.reverse(t, [0, 2]),
        lambda t: xo.dynamic_slice(t, [xo.tensor(1, device=t.device), 5, -1], [1, 2, 3]),
        lambda t: xo.transpose(t[0], [1, 0]),
    ]
    for f in cases:
        same(f(d), f(h))
    b = xo.tensor([[1.5, -2.0], [3.0, 0.25]], "bf16")  # raw bits: every element type
    same(xo.transpose(b.to("cuda"), [1, 0]), xo.transpose(b, [1, 0]))
    z = xo.tensor(7, "i32")
    same(xo.broadcast_in_dim(z.to("cuda"), [], [2, 3]), xo.broadcast_in_dim(z, [], [2, 3]))
    same(xo.reshape(z.to("cuda"), [1, 1]), xo.reshape(z, [1, 1]))


def test_pad_concatenate_dynamic_update_slice_are_bit_exact():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    d, h = cu(x), xo.tensor(x)
    for lo, hi, it in (
        ([1, -1], [0, 2], [1, 0]),
        ([-2, 3], [2, -3], [2, 1]),
        ([0, 0], [0, 0], [0, 0]),
    ):
        pv = xo.tensor(-9, "i16")
        same(xo.pad(d, pv.to("cuda"), lo, hi, it), xo.pad(h, pv, lo, hi, it))
        same(xo.pad(d, -9, lo, hi, it), xo.pad(h, -9, lo, hi, it))  # a weak scalar
    e = np.zeros((0, 2), np.float32)
    same(
        xo.pad(cu(e), 1.5, [1, 0], [1, 1], [0, 0]),
        xo.pad(xo.tensor(e), 1.5, [1, 0], [1, 1], [0, 0]),
    )
    y = np.arange(6, dtype=np.int16).reshape(3, 2) + 100
    ins = [x, y, np.zeros((3, 0), np.int16), x[:, :1]]
    same(xo.concatenate([cu(v) for v in ins], 1), xo.concatenate([xo.tensor(v) for v in ins], 1))
    same(xo.concatenate([d, d], 0), xo.concatenate([h, h], 0))
    u = np.array([[5, 6, 7]], np.int16)
    for st in ([0, 1], [2, 3], [-1, -5]):
        same(xo.dynamic_update_slice(d, cu(u), st), xo.dynamic_update_slice(h, xo.tensor(u), st))
    for f in (
        lambda t, v: xo.pad(t, v, [0, 0], [0, 0], [-1, 0]),
        lambda t, v: xo.pad(t, v, [-3, 0], [-1, 0], [0, 0]),
        lambda t, v: xo.concatenate([t, xo.reshape(t, [4, 3])], 0),
        lambda t, v: xo.concatenate([t], 2),
        lambda t, v: xo.dynamic_update_slice(t, xo.reshape(t, [12]), [0]),
    ):
        with pytest.raises(xo.SpecError) as e_dev:
            f(d, xo.tensor(0, "i16", device="cuda"))
        with pytest.raises(xo.SpecError) as e_cpu:
            f(h, xo.tensor(0, "i16"))
        assert str(e_dev.value) == str(e_cpu.value)


def test_reduce_positions_init_once_and_two_passes(monkeypatch):
    from xops.kernels.cuda import reduction as R

    x = np.arange(-12, 12, dtype=np.int64).reshape(2, 3, 4) * 7
    for dims in ([0, 2], [1], [2, 0, 1]):
        same(
            xo.reduce(cu(x), cu(5), dims, xo.add),
            xo.reduce(xo.tensor(x), xo.tensor(5), dims, xo.add),
        )
    f = (x / 8).astype(np.float32)
    f[1, 2, 1] = np.nan
    for body, init in ((xo.maximum, -np.inf), (xo.minimum, 2.0)):
        dev = xo.reduce(cu(f), cu(init, "f32"), [1], body)
        ref = xo.reduce(xo.tensor(f), xo.tensor(init, "f32"), [1], body)
        same(dev, ref)
    nz = np.full((2, 3), -0.0, np.float32)  # -0.0 sums stay -0.0 (the identity is -0.0)
    dev = xo.reduce(cu(nz), cu(-0.0, "f32"), [1], xo.add).numpy()
    assert np.signbit(dev).all()
    e = np.zeros((3, 0), np.float32)
    same(
        xo.reduce(cu(e), cu(1.5, "f32"), [1], xo.add),
        xo.reduce(xo.tensor(e), xo.tensor(1.5, "f32"), [1], xo.add),
    )
    bl = np.array([[True, False, True], [True, True, True]])
    for body in (xo.add, xo.minimum):
        same(
            xo.reduce(cu(bl), cu(False), [1], body),
            xo.reduce(xo.tensor(bl), xo.tensor(False), [1], body),
        )
    monkeypatch.setattr(R, "_SPLIT_CHUNK", 8)  # few results over many elements: 2 passes
    big = np.arange(-40, 40, dtype=np.int32).reshape(2, 40) * 3
    same(
        xo.reduce(cu(big), cu(11, "i32"), [1], xo.add),
        xo.reduce(xo.tensor(big), xo.tensor(11, "i32"), [1], xo.add),
    )
    same(
        xo.reduce(cu(big), cu(0, "i32"), [0, 1], xo.maximum),
        xo.reduce(xo.tensor(big), xo.tensor(0, "i32"), [0, 1], xo.maximum),
    )
    with pytest.raises(xo.SpecError, match=r"reduce \(C5\)"):
        xo.reduce(cu(x), cu(0), [1, 1], xo.add)
    same(  # another body: the generic tree (tests/test_cuda_generic_reduce.py)
        xo.reduce(cu(big), cu(11, "i32"), [1], xo.subtract),
        xo.reduce(xo.tensor(big), xo.tensor(11, "i32"), [1], xo.subtract),
    )


def test_weak_scalars_and_attribute_checks_of_elementwise_ops():
    x = np.array([[0.5, -1.5, 2.0], [4.0, -0.25, 1.0]], np.float32)
    d, h = cu(x), xo.tensor(x)
    same(d * 2.0, h * 2.0)
    same(d * 3.0, h * 3.0)  # another cached value
    same(2.0 - d, 2.0 - h)
    same(xo.select(d > 0.0, d, 0.0), xo.select(h > 0.0, h, 0.0))
    same(xo.select(True, d, -d), xo.select(True, h, -h))
    same(xo.clamp(-1.0, d, 1.0), xo.clamp(-1.0, h, 1.0))
    same(xo.convert(d, "i1"), xo.convert(h, "i1"))
    long = np.arange(300, dtype=np.int32)  # two blocks of 256 threads
    same(cu(long) * 3, xo.tensor(long) * 3)
    for f in (
        lambda t: xo.compare(t, t, "XX"),
        lambda t: xo.compare(t, t, "LT", "SIGNED"),
        lambda t: xo.select(t, t, t),
        lambda t: xo.clamp(xo.reshape(t, [3, 2]), t, 1.0),
        lambda t: xo.convert(t, "nope"),
    ):
        with pytest.raises(xo.SpecError) as e_dev:
            f(d)
        with pytest.raises(xo.SpecError) as e_cpu:
            f(h)
        assert str(e_dev.value) == str(e_cpu.value)
