"""A caching device allocator for numba.cuda (an External Memory Management plugin).

Every CUDA op allocates its result; numba's default manager calls ``cuMemAlloc`` for
each and queues a ``cuMemFree`` for each freed array, and both cost far more than a small
kernel (``cuMemFree`` also waits for the device). This manager keeps freed blocks in
per-size free lists and hands them out again, as PyTorch's caching allocator does:

- sizes are rounded up to a multiple of 512 bytes below 1 MiB and to 1/8 of a power of
  two above, so that a block is reused by arrays of nearly the same size;
- a freed block goes back to its list at once: every xops kernel and copy runs in
  numba's default stream, in order, so a later kernel that reuses the block runs after
  every earlier one that read it;
- when ``cuMemAlloc`` runs out of memory, the cached blocks are freed and it is tried
  again.

:func:`install` plugs it in before the first CUDA context is made (on a real GPU only:
the simulator has no device memory). ``XOPS_CUDA_CACHING_ALLOCATOR=0`` keeps numba's own.
"""

import os
import weakref

__all__ = ["install", "round_size"]

_MiB = 1 << 20


def round_size(n):
    """The block size a request of ``n`` bytes gets."""
    n = max(int(n), 1)
    if n < _MiB:
        return (n + 511) // 512 * 512
    step = 1 << max(n.bit_length() - 4, 9)  # 1/8 of the power of two below n
    return (n + step - 1) // step * step


def _manager_class():
    from numba.cuda.cudadrv import driver as drv

    class CachingMemoryManager(drv.NumbaCUDAMemoryManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._free = {}  # block size -> [device pointer, ...]

        def memalloc(self, size):
            block = round_size(size)
            free = self._free.setdefault(block, [])
            if free:
                ptr = free.pop()
            else:
                ptr = self._attempt_allocation(lambda: self._alloc(block))
            ctx = weakref.proxy(self.context)
            key = int(ptr)
            finalizer = _give_back(self.allocations, key, free, ptr)
            mem = drv.AutoFreePointer(ctx, ptr, block, finalizer=finalizer)
            self.allocations[key] = mem  # (the owned pointers hold only a weak proxy)
            return mem.own()

        def _alloc(self, block):
            try:
                return drv.driver.cuMemAlloc(block)
            except drv.CudaAPIError:
                self.release_cached()  # out of memory: free the cache, then once more
                return drv.driver.cuMemAlloc(block)

        def release_cached(self):
            """Free every cached (unused) block."""
            for blocks in self._free.values():
                while blocks:
                    drv.driver.cuMemFree(blocks.pop())

        def reset(self):
            self.release_cached()
            super().reset()

    return CachingMemoryManager


def _give_back(allocations, key, free, ptr):
    def finalizer():  # the array is gone: its block is free for the next request
        allocations.pop(key, None)
        free.append(ptr)

    return finalizer


_state = {}


def install():
    """Use the caching manager for CUDA contexts made from now on (once; real GPUs only),
    and switch off numba's low-occupancy warning."""
    if _state.get("done"):
        return
    _state["done"] = True
    from numba import config

    try:  # numba-cuda's own config (numba's built-in numba.cuda reads numba.config)
        from numba.cuda.core import config as cuda_config
    except ImportError:
        cuda_config = config
    # small tensors launch small grids by design: numba's "low occupancy" warning would
    # fire on most ops of a training step
    cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    if config.ENABLE_CUDASIM or os.environ.get("XOPS_CUDA_CACHING_ALLOCATOR", "1") == "0":
        return
    from numba.cuda.cudadrv import driver as drv

    drv.set_memory_manager(_manager_class())
