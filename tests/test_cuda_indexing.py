"""CUDA kernels of gather, scatter and iota (xops/kernels/cuda/indexing.py), each result
compared with the CPU op's: bit for bit (gather and iota move or make raw bits; scatter
folds duplicates in the CPU's order, so float sums are bit-exact too, NaN payloads
aside), and the same SpecError (label and message) for bad input. Tiny shapes: the
simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import cu, needs_cuda, same, same_error, to_cuda

import xops as xo
from xops import registry

pytestmark = needs_cuda


def _exact(dev, ref):
    """``dev`` (CUDA) and ``ref`` (CPU): same type, shape and bytes (a NaN matches any
    NaN: a GPU's arithmetic NaN is canonical)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    a, b = dev.numpy(), ref.numpy()
    assert dev.dtype == ref.dtype and a.shape == b.shape, (dev, ref)
    if a.dtype.kind in "fc" and np.isnan(b).any():
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        a, b = np.where(np.isnan(b), 0, a), np.where(np.isnan(b), 0, b)
    assert a.tobytes() == b.tobytes(), (a, b)


def _both(op, tensors, *args, **kwargs):
    """op on CUDA copies of ``tensors`` (then the other arguments) and on the CPU."""
    dev = op(*[to_cuda(t) for t in tensors], *args, **kwargs)
    return dev, op(*tensors, *args, **kwargs)


# ---------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------

X34 = np.arange(12, dtype=np.int32).reshape(3, 4) * 3 - 7


def _gather(x, idx, *attrs, **kwargs):
    dev, ref = _both(xo.gather, [x, idx], *attrs, **kwargs)
    _exact(dev, ref)
    return ref


def test_gather_spec_example_and_clamping():
    # stablehlo's gather example (operand 3x4x2, start indices 2x3x2, batch of 2x3)
    x = xo.tensor(np.arange(24, dtype=np.int64).reshape(3, 4, 2))
    si = xo.tensor([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]])
    ref = _gather(x, si, [2, 3], [0], [1, 0], 2, [1, 2, 2])
    assert ref.shape == (2, 3, 2, 2)
    np.testing.assert_array_equal(ref.numpy()[1, 2], [[16, 17], [18, 19]])  # 9 -> clamped 2
    # row gather with negative and too-large starts, every integer index type
    x = xo.tensor(X34)
    for t in ("i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "i4", "ui4", "i2"):
        vals = [9, 2, 7, 1] if t.startswith("ui") else [-3, 2, 7, 1]
        if t == "i2":
            vals = [-2, 1, -1, 0]
        _gather(x, xo.tensor(vals, t), [1], [0], [0], 1, [1, 4])
    big = xo.tensor(np.array([2**64 - 1, 2**63, 1, 0], np.uint64))  # saturate, then clamp
    ref = _gather(x, big, [1], [0], [0], 1, [1, 2])
    np.testing.assert_array_equal(ref.numpy()[:2], X34[[2, 2], :2])
    ext = xo.tensor(np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64))
    _gather(x, ext, [1], [0], [0], 1, [1, 3])


def test_gather_attributes():
    x = xo.tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 20.5)
    si = xo.tensor([[1, 3], [2, 0], [0, 4]], "i32")
    # offset dims not trailing, start_index_map permuted, a non-collapsed size-1 dim
    _gather(x, si, [0, 2], [1], [2, 1], 1, [2, 1, 3])
    # index_vector_dim = 0 (the index vectors are the columns), indices_are_sorted
    _gather(x, xo.tensor([[0, 2, 1], [1, 0, 3]]), [1], [0, 1], [0, 1], 0, [1, 1, 5], True)
    # implicit trailing index vector dim (index_vector_dim = rank)
    _gather(x, xo.tensor([[2, 0], [1, 1]]), [2, 3], [0], [0], 2, [1, 4, 5])
    # whole-operand slices, no index components: an index vector of size 0
    _gather(x, xo.tensor(np.zeros((2, 0), np.int64)), [1, 2, 3], [], [], 1, [3, 4, 5])
    # 0-d result: one element
    _gather(x, xo.tensor([2, 3, 1]), [], [0, 1, 2], [0, 1, 2], 0, [1, 1, 1])
    # batching dims: operand dim 0 with start_indices dim 1, index_vector_dim in the middle
    si = xo.tensor(np.array([[[1], [3], [0]], [[4], [2], [2]]], np.int64).transpose(0, 2, 1))
    ref = _gather(
        x,
        si,
        [2, 3],
        [],
        [2],
        1,
        [1, 2, 2],
        operand_batching_dims=[0],
        start_indices_batching_dims=[2],
    )
    assert ref.shape == (2, 3, 2, 2)


def test_gather_every_element_type_moves_raw_bits():
    for t in ("i1", "ui64", "f16", "bf16", "f8E4M3FN", "f8E8M0FNU", "i4", "c64", "c128"):
        v = np.arange(12).reshape(3, 4) % 5 - (0 if t in ("i1", "ui64", "f8E8M0FNU") else 2)
        x = xo.convert(xo.tensor(v), t) if t != "i1" else xo.tensor(v > 1)
        _gather(x, xo.tensor([[2], [0], [9]]), [1], [0], [0], 1, [1, 3])
    nan = xo.tensor(np.array([[np.nan, -0.0], [1.5, -np.inf]], np.float64))
    dev = xo.gather(nan.to("cuda"), cu([1, 0]), [1], [0], [0], 1, [1, 2])
    np.testing.assert_array_equal(
        dev.numpy().view(np.uint64), nan.numpy()[[1, 0]].view(np.uint64)
    )  # NaN payloads and -0 as they are


def test_gather_empty_and_zero_size_slices():
    x = xo.tensor(X34)
    ref = _gather(x, xo.tensor(np.zeros((0, 1), np.int64)), [1], [0], [0], 1, [1, 4])
    assert ref.shape == (0, 4)
    ref = _gather(x, xo.tensor([[1], [2]]), [1], [0], [0], 1, [0, 4])  # collapsed size 0
    assert ref.shape == (2, 4) and not ref.numpy().any()


def test_gather_errors_are_the_cpu_errors():
    x, si = xo.tensor(X34), xo.tensor([[1], [2]])
    assert "(C3)" in same_error(xo.gather, [x, si], [1], [0], [0, 1], 1, [1, 4])
    assert "(C12)" in same_error(xo.gather, [x, si], [1], [0], [0], 1, [1, 5])
    assert "(I2)" in same_error(xo.gather, [x, xo.tensor([[1.0]])], [1], [0], [0], 1, [1, 4])
    assert "(B8)" in same_error(
        xo.gather, [x, si], [1], [], [0], 1, [1, 4], operand_batching_dims=[1]
    )
    # host data: index literals are copied over, a host operand is refused
    ref = xo.gather(x, np.array([[2], [0]]), [1], [0], [0], 1, [1, 4])
    same(xo.gather(x.to("cuda"), np.array([[2], [0]]), [1], [0], [0], 1, [1, 4]), ref)
    with pytest.raises(xo.SpecError, match=r"gather \(device\): operands live on different"):
        xo.gather(X34, si.to("cuda"), [1], [0], [0], 1, [1, 4])


def test_gather_gradient_on_cuda():
    # the rule scatter-adds into zeros at the clamped starts: duplicates and clamped
    # indices accumulate, on the device, as on the CPU
    rng = np.random.default_rng(2)
    x = xo.tensor(rng.normal(size=(5, 3)).astype(np.float32))
    w = xo.tensor(rng.normal(size=(6, 2)).astype(np.float32))
    for idx in (xo.tensor([[4], [0], [9], [-2], [0], [3]], "i32"), xo.tensor([4, 0, 9, 0, 1, 3])):
        grads = []
        for dev in ("cpu", "cuda"):
            t = x.to(dev)
            t.requires_grad = True
            ivd = idx.ndim if idx.ndim == 1 else 1
            y = xo.gather(t, idx.to(dev), [1], [0], [0], ivd, [1, 2])
            xo.reduce(xo.multiply(y, w.to(dev)), 0.0, [0, 1], xo.add).backward()
            grads.append(t.grad)
        _exact(grads[1], grads[0])
    grads = []  # scatter's own rule runs on the device too (tests/test_cuda_grad.py)
    for dev in ("cpu", "cuda"):
        t = x.to(dev)
        t.requires_grad = True
        y = xo.scatter(t, cu([[1]]).to(dev), t[:1], [1], [0], [0], 1, update_computation=xo.add)
        xo.reduce(y * w[:5, :1].to(dev), 0.0, [0, 1], xo.add).backward()
        grads.append(t.grad)
    _exact(grads[1], grads[0])


# ---------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------


def _second(a, b):
    return b


def _scatter(x, idx, upd, *attrs, **kwargs):
    dev, ref = _both(xo.scatter, [x, idx, upd], *attrs, **kwargs)
    if isinstance(ref, tuple):
        assert isinstance(dev, tuple) and len(dev) == len(ref)
        dev, ref = dev[0], ref[0]
    _exact(dev, ref)
    return ref


BODIES = {"add": xo.add, "mul": xo.multiply, "max": xo.maximum, "min": xo.minimum}
BODIES["set"] = _second


def test_scatter_spec_example_duplicates_and_skips():
    x = xo.tensor([1.0, 2.0, 3.0])
    ref = _scatter(
        x, xo.tensor([[0], [0], [5]]), xo.tensor([10.0, 20.0, 30.0]), [], [0], [0], 1,
        update_computation=xo.add,
    )  # fmt: skip
    np.testing.assert_array_equal(ref.numpy(), [31.0, 2.0, 3.0])
    # the spec's scatter example (batching dims included), add body
    x = xo.tensor(np.arange(48, dtype=np.int64).reshape(2, 3, 4, 2))
    si = xo.tensor(np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]] * 2))
    upd = xo.tensor(np.ones((2, 2, 3, 2, 2), np.int64))
    _scatter(
        x,
        si.reshape([2, 2, 3, 2]),
        upd,
        [3, 4],
        [1],
        [2, 1],
        3,
        update_computation=xo.add,
        input_batching_dims=[0],
        scatter_indices_batching_dims=[1],
    )


def test_scatter_bodies_and_types_with_duplicates():
    rng = np.random.default_rng(0)
    idx = xo.tensor([[3], [0], [3], [-1], [3], [1], [4], [0]], "i32")
    for t in ("f32", "f64", "i8", "i32", "ui8", "ui64", "i64", "i1"):
        x = xo.convert(xo.tensor(rng.normal(size=(4, 3)) * 3), t)
        u = xo.convert(xo.tensor(rng.normal(size=(8, 3)) * 3 + 1), t)
        if t == "i1":
            x, u = xo.tensor(rng.random((4, 3)) > 0.5), xo.tensor(rng.random((8, 3)) > 0.5)
        for body in BODIES.values():
            _scatter(x, idx, u, [1], [0], [0], 1, update_computation=body)
    # float sums of many duplicates: the same order, so the same bits
    x = xo.tensor(rng.normal(size=5).astype(np.float32))
    u = xo.tensor((rng.normal(size=64) * 1e3).astype(np.float32))
    ix = xo.tensor(rng.integers(0, 5, size=(64, 1)))
    for body in (xo.add, xo.multiply, _second):
        _scatter(x, ix, u, [], [0], [0], 1, update_computation=body)
    # NaN and signed zeros under maximum / minimum
    x = xo.tensor(np.array([0.0, -0.0, np.nan, 1.0], np.float32))
    u = xo.tensor(np.array([-0.0, 0.0, 1.0, np.nan, -0.0, 0.0], np.float32))
    ix = xo.tensor([[0], [1], [2], [3], [1], [0]])
    for body in (xo.maximum, xo.minimum):
        _scatter(x, ix, u, [], [0], [0], 1, update_computation=body)


def test_scatter_windows_out_of_bounds_and_overlapping():
    x = xo.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
    # windows of 2x3 at starts that overlap, stick out (skipped per element) or miss
    si = xo.tensor([[0, 0], [1, 1], [3, 3], [-1, 4], [1, 2], [9, 0], [2, -2]])
    u = xo.tensor(np.arange(42, dtype=np.float32).reshape(7, 2, 3) + 0.5)
    for body in BODIES.values():
        _scatter(x, si, u, [1, 2], [], [0, 1], 1, update_computation=body)
    # one component moves a window dim, the other an inserted dim
    _scatter(x, xo.tensor([[1, 3], [0, 2], [2, 4]]), u[:3, 0], [1], [0], [0, 1], 1,
             update_computation=xo.add)  # fmt: skip
    # extreme indices: int64 and uint64 ends, never clamped
    for v, t in (([2**63 - 1, -(2**63)], "i64"), ([2**64 - 1, 2**63], "ui64")):
        ix = xo.tensor(np.array(v, dtype=np.int64 if t == "i64" else np.uint64).reshape(2, 1))
        ref = _scatter(x, ix, u[:2, 0], [1], [0], [1], 1, update_computation=xo.add)
        np.testing.assert_array_equal(ref.numpy(), x.numpy())


def test_scatter_attributes():
    x = xo.tensor(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    # update_window_dims leading, index_vector_dim 0, scatter_dims_to_operand_dims permuted
    si = xo.tensor([[3, 0, 1], [1, 2, 0]])  # column j: (dim 2, dim 1) of update j
    u = xo.tensor(np.arange(6, dtype=np.int32).reshape(2, 3) + 100)
    _scatter(x, si, u, [0], [1, 2], [2, 1], 0, update_computation=xo.add)
    # implicit index vector dim, 2-D scatter dims, the flags set (promises only)
    u = xo.tensor(np.arange(48, dtype=np.int32).reshape(2, 2, 3, 4))
    _scatter(
        x, xo.tensor([[1, 0], [1, 1]]), u, [2, 3], [0], [0], 2,
        indices_are_sorted=True, unique_indices=True, update_computation=_second,
    )  # fmt: skip
    # 0-d input
    s = xo.tensor(np.float64(1.5))
    _scatter(s, xo.tensor(np.zeros((3, 0), np.int64)), xo.tensor([1.0, 2.0, 4.0], "f64"),
             [], [], [], 1, update_computation=xo.multiply)  # fmt: skip
    # a sequence in, a tuple out; empty updates give the input
    _scatter([x], xo.tensor([[0]]), [u[0, :1]], [1, 2], [0], [0], 1, update_computation=xo.add)
    _scatter(x, xo.tensor(np.zeros((0, 1), np.int64)), xo.tensor(np.zeros((0, 3, 4), "i4")),
             [1, 2], [0], [0], 1, update_computation=xo.add)  # fmt: skip


def test_scatter_overwrite_moves_raw_bits_of_every_type():
    for t in ("c128", "c64", "bf16", "f8E5M2", "i4", "f16"):
        x = xo.convert(xo.tensor(np.arange(8.0).reshape(4, 2) - 3), t)
        u = xo.convert(xo.tensor(np.arange(6.0).reshape(3, 2) * -1.5), t)
        _scatter(x, xo.tensor([[2], [0], [2]], "ui8"), u, [1], [0], [0], 1,
                 update_computation=_second)  # fmt: skip


def test_scatter_errors():
    x, si, u = xo.tensor(X34), xo.tensor([[1], [2]]), xo.tensor(X34[:2])
    assert "(C4)" in same_error(xo.scatter, [x, si, u[:1]], [1], [0], [0], 1,
                                update_computation=xo.add)  # fmt: skip
    assert "(C15)" in same_error(xo.scatter, [x, si, u], [1], [0], [0], 1)
    # other bodies, types and variadic scatters (once "no cuda kernel" errors) run the
    # CPU's rounds on the device (tests/test_cuda_scatter_generic.py): the CPU's results
    _scatter(x, si, u, [1], [0], [0], 1, update_computation=xo.subtract)
    f16 = xo.convert(x, "f16")
    _scatter(f16, si, f16[:2], [1], [0], [0], 1, update_computation=xo.add)
    _scatter([x, x], si, [u, u], [1], [0], [0], 1, update_computation=lambda a, b, c, d: (c, d))


# ---------------------------------------------------------------------------------------
# iota, one_hot, cross-entropy
# ---------------------------------------------------------------------------------------


def _iota(d, shape, t):
    with xo.default_device("cuda"):
        dev = xo.iota(d, shape, t)
    ref = xo.iota(d, shape, t)
    _exact(dev, ref)
    return ref


def test_iota_every_dimension_and_type():
    for d in range(3):
        _iota(d, [3, 4, 2], "i64")
    for t in ("i2", "i4", "i8", "i16", "i32", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64"):
        _iota(0, [{"i2": 2, "ui2": 4, "i4": 8, "ui4": 16}.get(t, 9), 2], t)
    for t in ("f32", "f64", "c64", "c128", "f16", "bf16"):
        _iota(1, [2, 5], t)
    # rounding and overflow (inf, NaN or saturation) past each narrow format's range
    for t in ("f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f8E3M4", "f8E4M3B11FNUZ"):
        _iota(0, [40], t)
    for t in ("f8E4M3", "f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ", "f8E8M0FNU", "bf16"):
        _iota(0, [520], t)
    ref = _iota(0, [2100], "f16")  # rounds past 2048
    assert ref.numpy()[2049] == 2048
    assert _iota(0, [0, 3], "f32").shape == (0, 3)


def test_iota_errors_and_default_device():
    for args in ((2, [2, 3], "i32"), (0, [3], "i1"), (0, [5], "ui2"), (0, [-1], "f32")):
        with pytest.raises(xo.SpecError) as cpu:
            xo.iota(*args)
        with xo.default_device("cuda"), pytest.raises(xo.SpecError) as dev:
            xo.iota(*args)
        assert str(dev.value) == str(cpu.value)
    assert xo.iota(0, [2], "i32").device == "cpu"  # outside the block: the CPU
    q = "!quant.uniform<i8:f32, 0.1:-30>"
    if "cuda" in registry.get("uniform_quantize").kernels:  # quantize(index) on the device
        _iota(0, [3], q)
    else:
        with (
            xo.default_device("cuda"),
            pytest.raises(xo.SpecError, match=r"iota \(device\): has no cuda kernel for quantized"),
        ):
            xo.iota(0, [3], q)


def test_one_hot_and_cross_entropy_on_cuda_labels():
    import xops.nn.functional as F

    labels = xo.tensor([2, 0, 1, 2])
    same(F.one_hot(labels.to("cuda"), 3), F.one_hot(labels, 3))
    logits = xo.tensor(np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32))
    lc = logits.to("cuda")
    lc.requires_grad = True
    logits.requires_grad = True
    loss_dev = F.softmax_cross_entropy(lc, labels.to("cuda"))
    loss = F.softmax_cross_entropy(logits, labels)
    same(loss_dev, loss, rtol=1e-6)
    loss_dev.backward()
    loss.backward()
    same(lc.grad, logits.grad, rtol=1e-5)
