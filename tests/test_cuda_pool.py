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
