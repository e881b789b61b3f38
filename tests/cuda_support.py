"""What the CUDA test modules (``tests/test_cuda*.py``) share.

Without a GPU, ``tests/test_cuda.py::test_cuda_modules_under_the_simulator`` re-runs every
``tests/test_cuda*.py`` module in one subprocess under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` must be set before numba is imported, and flipping it in this
process would change numba's state for every other test module); in this process their
tests skip. With a GPU (or the simulator already on) they run directly. Shapes are tiny:
the simulator runs a Python thread per CUDA thread (about 3,500 threads a second here), so
keep each launch near 1k threads.
"""

import os

import numpy as np
import pytest

import xops as xo
from xops import device as _device

INNER = os.environ.get("XOPS_CUDA_INNER") == "1"  # this process is the simulator re-run
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _usable():
    try:
        return _device.cuda_available()
    except Exception:
        return False


HERE = _usable()  # CUDA tensors can be made in this process (a GPU or the simulator)

needs_cuda = pytest.mark.skipif(
    not HERE,
    reason="no CUDA device in this process (a GPU, or numba's simulator under "
    "NUMBA_ENABLE_CUDASIM=1); tests/test_cuda.py re-runs these tests under the simulator",
)


def cu(data, dtype=None):
    """``xo.tensor(data, dtype)`` on the CUDA device."""
    return xo.tensor(data, dtype, device="cuda")


def to_cuda(t):
    """A CUDA copy of the tensor ``t``, or of each tensor of the list ``t``."""
    return [v.to("cuda") for v in t] if isinstance(t, list) else t.to("cuda")


def same_error(op, tensors, *args, **kwargs):
    """``op(*tensors, *args, **kwargs)`` raises a SpecError on the CPU and on CUDA copies
    of ``tensors`` (:func:`to_cuda`), with the same message; that message."""
    with pytest.raises(xo.SpecError) as cpu:
        op(*tensors, *args, **kwargs)
    with pytest.raises(xo.SpecError) as dev:
        op(*[to_cuda(t) for t in tensors], *args, **kwargs)
    assert str(dev.value) == str(cpu.value)
    return str(cpu.value)


def same(dev, ref, rtol=1e-6):
    """CUDA result ``dev`` equals CPU result ``ref``: same type and shape; bit for bit for
    integer and boolean types, within ``rtol`` for float math."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    a, b = dev.numpy(), ref.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    if dev.dtype.kind in ("float", "complex"):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(a, b)


_APPLY = {}  # (device function, number of arguments) -> the kernel that maps it


def device_apply(fn, *args):
    """``fn(*args)`` element by element for a device function ``fn`` of integers (the bit
    pattern helpers of xops/kernels/cuda: decode, round and pack), over int64 arrays or
    scalars broadcast together; an int64 array. On a GPU it runs in a kernel, so the
    compiled code is what the caller checks; on the simulator it calls the Python function
    (a kernel there runs a Python thread per element, too slow for every bit pattern)."""
    cols = [c.ravel() for c in np.broadcast_arrays(*(np.asarray(a, np.int64) for a in args))]
    if SIM:
        py = getattr(fn, "py_func", None) or fn.fn
        return np.array([py(*row) for row in zip(*(c.tolist() for c in cols))], np.int64)
    from numba import cuda

    kernel = _APPLY.get((fn, len(args)))
    if kernel is None:
        names = ", ".join(f"a{i}" for i in range(len(args)))
        items = ", ".join(f"a{i}[i]" for i in range(len(args)))
        src = (
            f"def apply(out, {names}):\n    i = cuda.grid(1)\n"
            f"    if i < out.shape[0]:\n        out[i] = fn({items})\n"
        )
        space = {"cuda": cuda, "fn": fn}
        exec(src, space)
        kernel = _APPLY[fn, len(args)] = cuda.jit(space["apply"])
    n = cols[0].size
    out = cuda.device_array(n, np.int64)
    if n:
        kernel[(n + 255) // 256, 256](out, *(cuda.to_device(np.ascontiguousarray(c)) for c in cols))
    return out.copy_to_host()
