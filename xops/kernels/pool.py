"""A pool of large buffers: ``empty(shape, dtype)`` is ``np.empty`` that recycles the
memory of earlier arrays nothing refers to any more.

Why: a fresh large NumPy array is fresh memory from the OS, and the kernel zeroes every
page on first touch. A 64 MiB result costs 1.5-2.5 ms of page faults (2 MiB pages, via
NumPy's huge-page madvise), a third of a whole 100k-row scatter-add into it; the ~5 MiB
of index temporaries of that scatter fault in 4 KiB pages (~750 faults, ~1 ms) or not,
depending on glibc's adaptive mmap threshold, i.e. on what the process freed before.
Recycled buffers make both cost nothing (measurements: docs/kernels.md, "Result and
temporary buffers").

Safety, i.e. why a buffer is never handed out while anything can still reach it:

* The pool hands out arrays made by ``np.frombuffer`` from a small :class:`_Lease`
  object (a ctypes array at the buffer's address, holding the buffer). NumPy keeps that
  object as the array's ``base``; every view (slices, reshapes, ``.view``, ``.T``,
  ``np.asarray`` of a Tensor) keeps either it or an array that keeps it, and every other
  consumer of NumPy memory (``memoryview``, ``torch.from_numpy``, DLPack, Numba) keeps
  the array. So the lease lives exactly as long as something can reach the memory
  through Python objects, and its ``__del__`` is the only place a buffer comes back.
  Raw addresses (``.ctypes.data``) are no references, as they are not for any NumPy
  array.
* NumPy arrays are not tracked by the cyclic GC, and a lease refers only to its buffer
  record (the pool's array and an address), so a lease is never part of a garbage
  cycle: it dies by reference count only, when the last array viewing it is
  deallocated (not earlier, as a finaliser of cyclic garbage could). Each buffer is a
  plain array (a 64-byte aligned slice of one), kept with its address, that only the
  pool or its one live lease holds.
* Threads: ``__del__`` may run in any thread, or inside the pool's own code (the cyclic
  GC runs finalisers at allocations). It only appends to a deque (atomic) and then
  *tries* the lock. No code here except :func:`clear` waits for the lock, so nothing
  can deadlock, and the free lists change only under it. Whoever holds the lock settles
  (moves to the free lists, trims) what came back meanwhile, after releasing it, so a
  returned buffer never waits for a later call. A failed try just allocates fresh
  memory.
* After ``fork`` the child starts with a fresh lock and an empty pool.

Bounds: only buffers of at least ``MIN_BYTES`` (env ``XOPS_POOL_MIN_BYTES``, 256 KiB;
smaller ones are cheap for malloc) are pooled; a buffer is reused only for the same
byte size; free buffers total at most ``MAX_FREE_BYTES`` (env ``XOPS_POOL_BYTES``,
256 MiB; 0 turns the pool off), the least recently used size dropped first.
"""

import collections
import ctypes
import os
import threading

import numpy as np

MIN_BYTES = int(os.environ.get("XOPS_POOL_MIN_BYTES", 1 << 18))
MAX_FREE_BYTES = int(os.environ.get("XOPS_POOL_BYTES", 1 << 28))

_lock = threading.Lock()
_free = collections.OrderedDict()  # nbytes -> [buffers]; least recently used size first
_free_bytes = 0
_returned = collections.deque()  # buffers whose lease died, not yet in _free
_stats = {"hits": 0, "misses": 0}


# The bytes a lease claims to span: one ctypes array type serves every buffer size
# (``np.frombuffer`` reads only a buffer's own bytes, with ``count``). A type per size
# would cost ~30 us to make at each new size, and ctypes keeps every array type it made.
_SPAN = 1 << 46


class _Lease(ctypes.c_char * _SPAN):
    """The ``base`` of a pooled array: dies with the last array that views the buffer,
    and then gives the buffer back. A ctypes array at the buffer's address, so that
    NumPy takes it through the buffer protocol (``np.frombuffer``, 0.4 us) rather than
    through ``__array_interface__`` (a dict parsed per hand-out, 1.7 us). Only this
    module and :func:`over` read its memory, never past the buffer's own bytes."""

    __slots__ = ("_buf",)

    def __del__(self):
        try:
            _returned.append(self._buf)
            _settle()
        except Exception:  # interpreter shutdown: module globals may be gone
            pass


def _settle():
    """Move returned buffers into the free lists and trim them to MAX_FREE_BYTES. If the
    lock is taken, its holder settles after releasing it (this loop runs again)."""
    global _free_bytes
    while _returned and _lock.acquire(blocking=False):
        try:
            while _returned:
                buf = _returned.popleft()
                nbytes = buf[0].nbytes
                _free.setdefault(nbytes, []).append(buf)
                _free.move_to_end(nbytes)
                _free_bytes += nbytes
            while _free_bytes > MAX_FREE_BYTES:
                nbytes, bufs = next(iter(_free.items()))
                bufs.pop()
                _free_bytes -= nbytes
                if not bufs:
                    del _free[nbytes]
        finally:
            _lock.release()


def _take(nbytes):
    """A free buffer of exactly ``nbytes`` (the most recently freed one), or None."""
    global _free_bytes
    buf = None
    if _lock.acquire(blocking=False):
        try:
            bufs = _free.get(nbytes)
            if bufs:
                buf = bufs.pop()
                _free_bytes -= nbytes
                if bufs:
                    _free.move_to_end(nbytes)
                else:  # no empty lists: the trim loop pops from the first one
                    del _free[nbytes]
            _stats["hits" if buf is not None else "misses"] += 1
        finally:
            _lock.release()
        _settle()
    return buf


def _new(nbytes):
    """Fresh memory, 64-byte aligned (cache lines: NumPy's large arrays start 16 bytes
    into a page, so 64-byte rows would straddle two lines, and AVX-512 loads too), as
    (array, its address)."""
    raw = np.empty(nbytes + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    return raw[skip : skip + nbytes], raw.ctypes.data + skip


def empty(shape, dtype):
    """``np.empty(shape, dtype)`` (C order), from a recycled buffer where one of the same
    byte size is free. The contents are arbitrary, as with ``np.empty``."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < MIN_BYTES or MAX_FREE_BYTES <= 0:
        return np.empty(shape, dtype)
    buf = _take(nbytes)
    if buf is None:
        buf = _new(nbytes)
    lease = _Lease.from_address(buf[1])
    lease._buf = buf
    return np.frombuffer(lease, dtype, nbytes // dtype.itemsize).reshape(shape)


def over(lease, v):
    """A writeable array over the memory of ``v``, a C-contiguous array whose chain of
    bases ends at ``lease`` (the lease's buffer holds v's bytes, at v's own offset)."""
    off = v.ctypes.data - lease._buf[1]
    return np.frombuffer(lease, np.uint8, v.nbytes, off).view(v.dtype).reshape(v.shape)


def clear():
    """Drop every free buffer (their memory goes back to the OS). The one call here that
    waits for the lock: never call it from a finaliser."""
    global _free_bytes
    with _lock:
        _free.clear()
        _free_bytes = 0
    _settle()


def stats():
    """{'hits', 'misses', 'free_buffers', 'free_bytes'}: for tests and benchmarks."""
    return dict(
        _stats, free_buffers=sum(len(b) for b in list(_free.values())), free_bytes=_free_bytes
    )


def _after_fork():
    global _lock, _free_bytes
    _lock = threading.Lock()
    _free.clear()
    _free_bytes = 0
    _returned.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
