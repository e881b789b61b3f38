"""What only a real GPU exercises: the caching allocator (xops/kernels/cuda/_pool.py) and
the fast kernel-launch path (``jit`` in xops/kernels/cuda/_storage.py)."""

import numpy as np
import pytest

import xops as xo
from cuda_support import HERE, SIM, cu
from xops.kernels.cuda._pool import round_size


def test_block_sizes_round_up_to_reusable_classes():
    assert [round_size(n) for n in (0, 1, 512, 513, 4096)] == [512, 512, 512, 1024, 4096]
    mib = 1 << 20
    assert round_size(mib) == mib
    assert round_size(mib + 1) == mib + mib // 8  # 1/8 steps above 1 MiB
    for n in (3 * mib + 7, 100 * mib + 1, 5 * 10**9):
        b = round_size(n)
        assert n <= b < n * 1.126, (n, b)


def test_a_block_goes_back_to_its_free_list_when_its_last_view_is_gone():
    from xops.kernels.cuda._pool import Block

    free = []
    b = Block(4096, 1024, free)  # (a pointer value only: nothing here touches the device)
    assert b.device_ctypes_pointer.value == b.device_pointer == 4096 and b.owner is b
    v = b.view(256, 768)
    assert (v.device_ctypes_pointer.value, v.size) == (4096 + 256, 512)
    w = v.view(8)  # (bytes 8.. of the view: to the view's end)
    assert (w.device_ctypes_pointer.value, w.size) == (4096 + 264, 504)
    assert w.owner is b and v._cuda_memsize_ == 512
    del b, v
    assert free == []  # w still uses the block
    del w
    assert free == [4096]
    with pytest.raises(RuntimeError):
        Block(0, 8, []).view(8, 4)


real_gpu = pytest.mark.skipif(
    not HERE or SIM, reason="needs a real GPU (the simulator has no device memory and no launches)"
)


@real_gpu
def test_freed_blocks_are_reused_and_values_stay_right():
    from numba import cuda

    cu([1.0])  # (xops is in use: its allocator is installed before the first context)
    assert type(cuda.current_context().memory_manager).__name__ == "CachingMemoryManager"
    a = cu(np.arange(1000, dtype=np.float32))
    ptr = a._value.device_ctypes_pointer.value
    del a
    b = cu(np.arange(1000, dtype=np.float32) * 2)  # same size class: the same block
    assert b._value.device_ctypes_pointer.value == ptr
    c = b + b  # a live array's block is never handed out twice
    assert c._value.device_ctypes_pointer.value != ptr
    np.testing.assert_array_equal(c.numpy(), np.arange(1000, dtype=np.float32) * 4)
    # libdevice's expf is within 1 ulp
    np.testing.assert_allclose(xo.exponential(c).numpy(), np.exp(c.numpy()), rtol=2.5e-7)


@real_gpu
def test_repeated_launches_take_the_fast_path_and_give_the_same_results():
    from xops.kernels.cuda import _storage, elementwise

    a = np.arange(5000, dtype=np.float32)
    x, y = cu(a), cu(np.ones(5000, np.float32))
    for _ in range(3):  # the first launch compiles (numba's path), the others reuse it
        np.testing.assert_array_equal((x + y).numpy(), a + 1)
        np.testing.assert_array_equal((x * 0.5).numpy(), a * 0.5)  # a cached scalar operand
    b = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    for _ in range(3):  # shape and stride tuples passed by value
        t = xo.transpose(cu(b), [2, 0, 1])
        np.testing.assert_array_equal(t.numpy(), b.transpose(2, 0, 1))
    kernels = list(elementwise._cache.values()) + list(_storage._compiled.values())
    plans = [p for k in kernels for p in getattr(k, "_plans", {}).values()]
    assert any(p is not None for p in plans), "no launch took the fast path"


def test_the_gpu_verified_list_names_only_ops_with_cuda_kernels(monkeypatch):
    from xops.kernels import cuda

    assert cuda.GPU_VERIFIED <= set(cuda.OPS), cuda.GPU_VERIFIED - set(cuda.OPS)
    assert cuda.SIMULATOR_SINCE <= set(cuda.OPS), cuda.SIMULATOR_SINCE - set(cuda.OPS)
    monkeypatch.setattr(cuda, "GPU_VERIFIED", frozenset({"add", "pad"}))
    monkeypatch.setattr(cuda, "SIMULATOR_SINCE", frozenset({"add"}))
    assert cuda.verified_on("fft") == cuda.verified_on("cbrt") == "simulator"
    assert cuda.verified_on("add") == "GPU+sim" and cuda.verified_on("pad") == "GPU"


@real_gpu
def test_xops_arrays_on_blocks_slice_reshape_copy_and_share_like_numbas():
    from numba import cuda

    from xops.kernels.cuda._pool import Block

    w = cu(np.ones(24, np.float32))
    x = cu(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    y = x + x  # an xops result: its memory is a Block
    d = y._value
    assert isinstance(d.gpu_data, Block)
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 2
    np.testing.assert_array_equal(d.copy_to_host(), want)
    np.testing.assert_array_equal(d[1, 1:].copy_to_host(), want[1, 1:])  # numba's slicing
    np.testing.assert_array_equal(d.reshape(6, 4).copy_to_host(), want.reshape(6, 4))
    np.testing.assert_array_equal(
        xo.slice(y, [0, 1, 1], [2, 3, 3], [1, 1, 1]).numpy(), want[:, 1:3, 1:3]
    )
    np.testing.assert_array_equal(xo.transpose(y, [2, 0, 1]).numpy(), want.transpose(2, 0, 1))
    shared = cuda.as_cuda_array(d)  # through __cuda_array_interface__: the same memory
    assert shared.device_ctypes_pointer.value == d.device_ctypes_pointer.value
    ptr = d.device_ctypes_pointer.value
    del x, y, d, shared  # (y's block is the last freed of its size class)
    z = w + w  # the freed block serves the next array of its size class
    assert z._value.device_ctypes_pointer.value == ptr
    np.testing.assert_array_equal(z.numpy(), np.full(24, 2, np.float32))


@real_gpu
@pytest.mark.parametrize("op", ["exponential", "log", "tanh", "sqrt", "negate", "logistic"])
def test_wide_f32_maps_give_the_plain_kernels_bits(op):
    from xops.kernels.cuda import _wide, elementwise as E
    from xops.kernels.cuda._storage import flat

    n = _wide.WIDE_MIN + 3  # (three elements past the last group of four)
    rng = np.random.default_rng(5)
    v = rng.normal(0, 30, n).astype(np.float32)
    v[:8] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -3e-39]
    v[-3:] = [np.nan, 2.5, -1e-40]
    x = cu(v)
    got = getattr(xo, op)(x)  # (the wide kernel: a real GPU, 16-byte aligned blocks)
    assert _wide.usable(flat(x._value), flat(got._value))
    fn = {
        "exponential": E._exp, "log": E._log, "tanh": E._tanh, "sqrt": E._sqrt,
        "negate": E._neg, "logistic": E._logistic,
    }[op]  # fmt: skip
    plain = cu(np.zeros(n, np.float32))
    E.launch_1d(E._kernel1(fn), n, flat(x._value), flat(plain._value))
    np.testing.assert_array_equal(got.numpy().view(np.uint32), plain.numpy().view(np.uint32))
    np.testing.assert_allclose(
        got.numpy()[8:-3], getattr(xo, op)(xo.tensor(v)).numpy()[8:-3], rtol=4e-6, atol=0
    )
    odd = xo.slice(x, [1], [n], [1])  # a view 4 bytes past the block: the plain kernel
    assert not _wide.usable(flat(odd._value), flat(got._value))
    np.testing.assert_array_equal(
        getattr(xo, op)(odd).numpy().view(np.uint32), got.numpy()[1:].view(np.uint32)
    )
