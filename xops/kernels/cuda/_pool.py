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

import ctypes
import os
import weakref

__all__ = ["install", "round_size", "Block"]

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

        def block(self, size):
            """A :class:`Block` of at least ``size`` bytes (xops' own arrays)."""
            block = round_size(size)
            free = self._free.get(block)
            if free is None:
                free = self._free[block] = []
            if free:
                return Block(free.pop(), block, free)
            return Block(self._attempt_allocation(lambda: self._alloc(block)), block, free)

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


class _Bytes:
    """numba's device-memory protocol (``__cuda_memory__``, ``device_ctypes_pointer``,
    ``view``) over bytes [_start, _start + size) of a :class:`Block` (``owner``)."""

    __cuda_memory__ = True
    __slots__ = ("device_ctypes_pointer", "size", "_cuda_memsize_")

    @property
    def device_pointer(self):
        return self.device_ctypes_pointer.value

    handle = device_pointer_value = device_pointer

    def view(self, start, stop=None):
        return _View(self.owner, self._start + start, (self.size if stop is None else stop) - start)

    def free(self):
        """(Nothing: a block returns to the cache when no array uses it.)"""

    def memset(self, byte, count=None, stream=0):
        _memset(self, byte, count, stream)


class Block(_Bytes):
    """The device memory of one xops array, a block of the caching manager. It speaks
    numba's device-memory protocol at a fraction of the host cost of numba's owned
    pointers (two weak finalizers and two proxies per allocation: 5-6 us on an H100
    machine, more than a kernel launch); the block goes back to its free list when the
    last array or view that uses it is gone (``__del__``), as the owned pointers'
    finalizer does."""

    __slots__ = ("_ptr", "_free")
    _start = 0

    def __init__(self, ptr, size, free):
        self._ptr, self._free = ptr, free
        self.size = self._cuda_memsize_ = size
        self.device_ctypes_pointer = ctypes.c_size_t(int(ptr))

    def __del__(self):
        self._free.append(self._ptr)

    @property
    def owner(self):
        return self


class _View(_Bytes):
    """Bytes [start, start + size) of a :class:`Block` (numba's slices and reshapes of
    an array make these); keeps the block alive."""

    __slots__ = ("owner", "_start")

    def __init__(self, owner, start, size):
        if size < 0:
            raise RuntimeError("size cannot be negative")
        self.owner, self._start = owner, start
        self.size = self._cuda_memsize_ = size
        self.device_ctypes_pointer = ctypes.c_size_t(owner.device_ctypes_pointer.value + start)


def _memset(mem, byte, count, stream):
    from numba.cuda.cudadrv import driver as drv

    count = mem.size if count is None else count
    if stream:
        drv.driver.cuMemsetD8Async(mem.device_pointer, byte, count, stream.handle)
    else:
        drv.driver.cuMemsetD8(mem.device_pointer, byte, count)


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
