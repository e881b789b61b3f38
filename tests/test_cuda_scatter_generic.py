"""scatter on the device with any update computation, several inputs, and built-in bodies
on element types the scatter kernel does not take (xops/kernels/cuda/scatter_rounds.py:
the CPU's vectorised rounds on device tensors), and select_and_scatter with any scatter
body. Each result is compared with the CPU op's bit for bit: the same body calls on the
same values in the same order (duplicate targets folded in schedule order, a
non-commutative body shows it). Tiny shapes: the simulator runs a Python thread per CUDA
thread."""

import numpy as np
import pytest
from cuda_support import needs_cuda, same_error, to_cuda

import xops as xo

pytestmark = needs_cuda

rng = np.random.default_rng(41)


def _twice_plus(a, b):  # non-commutative: the order of the updates shows
    return a * 2 + b


def _second(a, b):
    return b


def _argmax(av, ai, bv, bi):  # a pair of different types; ties to the lower index
    take_b = xo.or_(
        xo.compare(bv, av, "GT"), xo.and_(xo.compare(bv, av, "EQ"), xo.compare(bi, ai, "LT"))
    )
    return xo.select(take_b, bv, av), xo.select(take_b, bi, ai)


def _exact(dev, ref):
    """``dev`` (CUDA) and ``ref`` (CPU): same type, shape and bytes."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    a, b = dev.numpy(), ref.numpy()
    assert a.tobytes() == b.tobytes(), (a, b)


def _scatter(x, idx, upd, *attrs, **kwargs):
    """scatter on CUDA copies and on the CPU: the same results, bit for bit (a tuple for
    sequences, as on the CPU)."""
    dev = xo.scatter(to_cuda(x), to_cuda(idx), to_cuda(upd), *attrs, **kwargs)
    ref = xo.scatter(x, idx, upd, *attrs, **kwargs)
    assert isinstance(dev, tuple) == isinstance(ref, tuple)
    for d, r in zip(dev, ref) if isinstance(ref, tuple) else [(dev, ref)]:
        _exact(d, r)
    return ref


# ---------------------------------------------------------------------------------------
# any body: duplicates, out of bounds, windows, attributes, batching dims
# ---------------------------------------------------------------------------------------


def test_non_commutative_body_folds_duplicates_in_schedule_order():
    x = xo.tensor(np.arange(5, dtype=np.int32) - 2)
    # 40 updates: target 1 takes 14 of them (14 rounds), others fewer; some outside
    ix = rng.choice([0, 1, 1, 1, 3, 4, -1, 5, 9], size=(40, 1))
    u = xo.tensor(rng.integers(-50, 50, 40).astype(np.int32))
    ref = _scatter(x, xo.tensor(ix), u, [], [0], [0], 1, update_computation=_twice_plus)
    assert ref.numpy()[2] == -0  # (no update: the input)
    for body in (xo.subtract, lambda a, b: xo.subtract(b, xo.multiply(a, a))):
        f = xo.tensor(rng.integers(-8, 8, 5).astype(np.float32) / 4)
        _scatter(f, xo.tensor(ix), xo.convert(u, "f32"), [], [0], [0], 1, update_computation=body)
    # unsigned 8-bit indices, a literal index list, one update per target (one round)
    _scatter(x, xo.tensor([[4], [0], [2]], "ui8"), u[:3], [], [0], [0], 1,
             update_computation=_twice_plus)  # fmt: skip
    dev = xo.scatter(x.to("cuda"), [[1], [1]], u[:2].to("cuda"), [], [0], [0], 1,
                     update_computation=_twice_plus)  # fmt: skip
    _exact(dev, xo.scatter(x, [[1], [1]], u[:2], [], [0], [0], 1, update_computation=_twice_plus))


def test_windows_of_several_elements_partly_out_of_bounds():
    x = xo.tensor(np.arange(20, dtype=np.int64).reshape(4, 5))
    # 2x3 windows that overlap, stick out (skipped element by element) or miss
    si = xo.tensor([[0, 0], [1, 1], [3, 3], [-1, 4], [1, 2], [9, 0], [2, -2], [0, 1]])
    u = xo.tensor(np.arange(48, dtype=np.int64).reshape(8, 2, 3) - 20)
    _scatter(x, si, u, [1, 2], [], [0, 1], 1, update_computation=_twice_plus)
    # extreme indices (int64, uint64 ends): never clamped, every element skipped
    for v, t in (([2**63 - 1, -(2**63)], np.int64), ([2**64 - 1, 2**63], np.uint64)):
        ix = xo.tensor(np.array(v, dtype=t).reshape(2, 1))
        ref = _scatter(x, ix, u[:2, 0], [1], [0], [1], 1, update_computation=_twice_plus)
        np.testing.assert_array_equal(ref.numpy(), x.numpy())


def test_attributes_move_the_schedule_order():
    x = xo.tensor(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    # update_window_dims leading (the schedule walks the update dims out of their order),
    # index_vector_dim 0, scatter_dims_to_operand_dims permuted; columns repeat
    si = xo.tensor([[3, 0, 3, 3], [1, 2, 1, 1]])  # column j: (dim 2, dim 1) of update j
    u = xo.tensor(np.arange(8, dtype=np.int32).reshape(2, 4) * 3 - 5)
    _scatter(x, si, u, [0], [1, 2], [2, 1], 0, update_computation=_twice_plus)
    # implicit index vector dim, 2-D scatter dims, windows of 3x4 elements, all at row 1
    u = xo.tensor(np.arange(48, dtype=np.int32).reshape(2, 2, 3, 4))
    _scatter(x, xo.tensor([[1, 1], [1, 0]]), u, [2, 3], [0], [0], 2,
             update_computation=_twice_plus)  # fmt: skip
    # a 0-d input, every update on it (three rounds)
    s = xo.tensor(np.int32(3))
    _scatter(s, xo.tensor(np.zeros((3, 0), np.int64)), xo.tensor([1, 2, 4], "i32"),
             [], [], [], 1, update_computation=_twice_plus)  # fmt: skip


def test_batching_dims():
    # the spec's scatter example (batching dims) with a non-commutative body
    x = xo.tensor(np.arange(48, dtype=np.int64).reshape(2, 3, 4, 2))
    si = xo.tensor(np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]] * 2))
    upd = xo.tensor(np.arange(48, dtype=np.int64).reshape(2, 2, 3, 2, 2) % 7)
    _scatter(
        x,
        si.reshape([2, 2, 3, 2]),
        upd,
        [3, 4],
        [1],
        [2, 1],
        3,
        update_computation=_twice_plus,
        input_batching_dims=[0],
        scatter_indices_batching_dims=[1],
    )


def test_empty_and_all_skipped():
    x = xo.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    u = xo.tensor(np.zeros((0, 3), np.int32))
    ref = _scatter(x, xo.tensor(np.zeros((0, 1), np.int64)), u, [1], [0], [0], 1,
                   update_computation=_twice_plus)  # fmt: skip
    np.testing.assert_array_equal(ref.numpy(), x.numpy())
    ref = _scatter(x, xo.tensor([[2], [-3]]), xo.tensor(np.ones((2, 3), np.int32)), [1], [0],
                   [0], 1, update_computation=_twice_plus)  # fmt: skip
    np.testing.assert_array_equal(ref.numpy(), x.numpy())


def test_body_element_types_and_a_host_constant():
    x = xo.tensor(np.arange(4, dtype=np.int32))
    u = xo.tensor(np.arange(5, dtype=np.int32))
    ix = xo.tensor([[1], [1], [3], [1], [0]])
    # a 0-d constant made on the host: broadcast to the round's targets
    _scatter(x, ix, u, [], [0], [0], 1, update_computation=lambda a, b: xo.tensor(np.int32(7)))
    # a body computing in a wider type: inputs and updates converted first, as the CPU
    f = xo.tensor(np.arange(4, dtype=np.float32) / 3)
    wide = lambda a, b: xo.subtract(xo.convert(a, "f64"), xo.convert(b, "f64"))  # noqa: E731
    ref = _scatter(f, ix, xo.convert(u, "f32") / 7, [], [0], [0], 1, update_computation=wide)
    assert ref.dtype == "f64"


# ---------------------------------------------------------------------------------------
# variadic, built-in bodies on other element types
# ---------------------------------------------------------------------------------------


def test_variadic_argmax_pair_of_two_types():
    x = [xo.tensor(np.full(4, -np.inf, np.float32)), xo.tensor(np.full(4, -1, np.int32))]
    ix = xo.tensor([[0], [2], [0], [3], [7], [0], [2], [0], [3], [0], [-2], [2]])
    v = xo.tensor(rng.integers(0, 3, 12).astype(np.float32))  # ties: the lower index wins
    u = [v, xo.tensor(np.arange(12, dtype=np.int32)[::-1].copy())]
    vals, idx = _scatter(x, ix, u, [], [0], [0], 1, update_computation=_argmax)
    assert np.all(idx.numpy()[[0, 2, 3]] >= 0) and idx.numpy()[1] == -1
    # the overwrite body on two inputs: the last write wins in both
    _scatter(x, ix, u, [], [0], [0], 1, update_computation=lambda a, b, c, d: (c, d))
    # a one-element sequence: a tuple out
    _scatter([x[1]], ix, [u[1]], [], [0], [0], 1, update_computation=xo.add)


@pytest.mark.parametrize("t", ["f16", "bf16", "c64", "c128", "f8E5M2", "i4"])
def test_builtin_bodies_on_types_without_a_scatter_kernel(t):
    # each step rounded to the type, as the CPU's rounds (not folded in float32)
    base = rng.standard_normal((3, 2)) * 4
    vals = rng.standard_normal((9, 2)) * 4
    if t in ("c64", "c128"):
        base, vals = base + 1j * base[::-1], vals - 0.5j * vals
    if t == "i4":
        base, vals = np.round(base).clip(-8, 7), np.round(vals).clip(-8, 7)
    x, u = xo.convert(xo.tensor(base), t), xo.convert(xo.tensor(vals), t)
    ix = xo.tensor([[2], [0], [2], [2], [5], [1], [2], [0], [-1]])
    if t not in ("c64", "c128"):
        for body in (xo.add, xo.multiply, xo.maximum, xo.minimum):
            _scatter(x, ix, u, [1], [0], [0], 1, update_computation=body)
        return
    _scatter(x, ix, u, [1], [0], [0], 1, update_computation=xo.add)  # (exact)
    # complex products: within the device's complex multiply rounding (its own tolerance)
    args = ([1], [0], [0], 1)
    dev = xo.scatter(
        x.to("cuda"), ix.to("cuda"), u.to("cuda"), *args, update_computation=xo.multiply
    )
    ref = xo.scatter(x, ix, u, *args, update_computation=xo.multiply)
    assert dev.device == "cuda:0" and dev.dtype == ref.dtype
    np.testing.assert_allclose(dev.numpy(), ref.numpy(), rtol=1e-5 if t == "c64" else 1e-13)


# ---------------------------------------------------------------------------------------
# errors and gradients: the CPU's
# ---------------------------------------------------------------------------------------


def test_body_errors_are_the_cpus():
    x, u = xo.tensor(np.arange(4.0, dtype=np.float32)), xo.tensor([1.0, 2.0], "f32")
    si = xo.tensor([[1], [1]])
    args = ([], [0], [0], 1)
    bodies = (
        lambda a, b: (a, b),  # two results for one input
        lambda a, b: xo.convert(a, "i32"),  # not promotable from f32
        lambda a, b, c: a,  # arity
    )
    for body in bodies:
        msg = same_error(xo.scatter, [x, si, u], *args, update_computation=body)
        assert msg.startswith("scatter (C15)")
    msg = same_error(xo.scatter, [[x, x], si, [u, u]], *args,
                     update_computation=lambda a, b, c, d: a)  # fmt: skip
    assert "must return 2 values, got 1" in msg


def test_gradient_errors_and_the_f16_add_gradient():
    x, u = xo.tensor(np.arange(4.0, dtype=np.float32)), xo.tensor([1.0, 2.0], "f32")
    si = xo.tensor([[1], [1]])

    def f(body):
        return lambda x, u: xo.scatter(x, si.to(x.device), u, [], [0], [0], 1,
                                       update_computation=body)  # fmt: skip

    for body in (xo.subtract, _twice_plus):  # (the CPU differentiates any body)
        xo.grad(lambda x, u: xo.reduce(f(body)(x, u), 0.0, [0], xo.add))(x, u)
        with pytest.raises(xo.SpecError, match=r"^scatter \(grad\): .* on a device only"):
            xo.grad(lambda x, u: xo.reduce(f(body)(x, u), 0.0, [0], xo.add))(
                x.to("cuda"), u.to("cuda")
            )
    # add on f16 runs the generic forward; its gradient is the add rule's, as on the CPU
    h, hu = xo.convert(x, "f16"), xo.convert(u, "f16")
    cot = xo.convert(xo.tensor([0.5, -1.0, 2.0, 4.0]), "f16")
    outs = [xo.vjp(f(xo.add), h.to(d), hu.to(d)) for d in ("cpu", "cuda")]
    ref = outs[0][1](cot)
    dev = outs[1][1](cot.to("cuda"))
    _exact(outs[1][0], outs[0][0])
    for r, d in zip(ref, dev):
        _exact(d, r)


# ---------------------------------------------------------------------------------------
# select_and_scatter with any scatter body
# ---------------------------------------------------------------------------------------


def _ge(a, b):
    return xo.compare(a, b, "GE")


def _select_and_scatter(x, src, init, *window, **bodies):
    dev = xo.select_and_scatter(x.to("cuda"), src.to("cuda"), init, *window, **bodies)
    ref = xo.select_and_scatter(x, src, init, *window, **bodies)
    _exact(dev, ref)
    return ref


def test_select_and_scatter_any_scatter_body():
    # overlapping windows (stride 1 < window 2): one element picked by several windows,
    # so several rounds; exact float values
    x = xo.tensor(rng.integers(0, 5, (4, 5)).astype(np.float32))
    src = xo.tensor(rng.integers(-8, 8, (3, 4)).astype(np.float32) / 2)
    for scatter in (lambda a, b: a + b * 2, lambda a, b: xo.subtract(b, a)):
        for select in (_ge, lambda a, b: xo.compare(b, a, "LT")):
            _select_and_scatter(x, src, 0.5, [2, 2], [1, 1], select=select, scatter=scatter)
    # padding: windows of padding alone pick nothing
    src = xo.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) - 5)
    _select_and_scatter(x, src, 1.0, [2, 2], [2, 2], [[1, 1], [2, 1]], select=_ge,
                        scatter=lambda a, b: a * 2 - b)  # fmt: skip
    # a built-in body on a type no kernel takes (the selection generic too)
    i4 = xo.tensor(rng.integers(-8, 8, (4, 4)), "i4")
    s4 = xo.tensor(rng.integers(-2, 3, (3, 3)), "i4")
    _select_and_scatter(i4, s4, 1, [2, 2], [1, 1], select=_ge, scatter=xo.add)
    # a narrow float with a body the kernel does not take: rounded at each step, as the CPU
    b = xo.convert(x, "bf16")
    sb = xo.convert(xo.tensor(rng.standard_normal((3, 4)).astype(np.float32)), "bf16")
    _select_and_scatter(b, sb, 0.25, [2, 2], [1, 1], select=_ge, scatter=xo.subtract)


def test_select_and_scatter_scatter_body_errors_are_the_cpus():
    x, src = xo.tensor(np.ones((4, 4), np.float32)), xo.tensor(np.ones((2, 2), np.float32))
    for scatter in (lambda a, b: (a, b), lambda a, b: xo.convert(a, "i32")):
        msgs = []
        for dev in ("cpu", "cuda"):
            with pytest.raises(xo.SpecError) as e:
                xo.select_and_scatter(x.to(dev), src.to(dev), 0.0, [2, 2], [2, 2],
                                      select=_ge, scatter=scatter)  # fmt: skip
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1] and msgs[0].startswith("select_and_scatter (C10)")
