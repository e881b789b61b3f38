"""Device storage of CUDA tensors and the launch helpers the CUDA kernels share (see
:mod:`xops.kernels.cuda`)."""

import numpy as np

from ... import device as _device, registry

__all__ = ["numba_cuda", "to_cuda", "from_holder", "storage_dtype", "launch_1d"]

_state = {}


def numba_cuda():
    """The ``numba.cuda`` module (imported on first use)."""
    mod = _state.get("cuda")
    if mod is None:
        from numba import cuda as mod

        _state["cuda"] = mod
    return mod


def storage_dtype(np_dtype):
    """The device array dtype of a holder dtype: narrow (ml_dtypes) types as unsigned
    integers of their size, NumPy's own dtypes as they are."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind in "biufc" and type(np_dtype).__module__.startswith("numpy"):
        return np_dtype
    return np.dtype(f"u{np_dtype.itemsize}")


def to_cuda(t, device):
    """Tensor ``t`` copied to ``device`` (a cuda Device); a CUDA tensor as it is. Moving
    back to the CPU copies explicitly."""
    from ...tensor import Tensor, _wrap

    v = t._value
    if device.kind == "cpu":
        if not hasattr(v, "copy_to_host"):
            out = _wrap(v, t._dtype)
        else:
            out = _wrap(_device.host_copy(v, t._dtype.np), t._dtype)
    elif hasattr(v, "copy_to_host"):
        out = _wrap(v, t._dtype)
    else:
        registry.use_device("cuda")  # (once) from now on the primitives dispatch by device
        host = np.array(v, order="C", copy=True).view(storage_dtype(v.dtype))  # (0-d kept)
        out = _wrap(numba_cuda().to_device(host), t._dtype)
    assert isinstance(out, Tensor)
    if t.requires_grad:
        out.requires_grad = True
    return out


def from_holder(devarr, dt):
    """A Tensor of element type ``dt`` around device array ``devarr`` (no copy)."""
    from ...tensor import _wrap

    return _wrap(devarr, dt)


def device_empty(shape, np_dtype):
    return numba_cuda().device_array(tuple(shape), dtype=storage_dtype(np_dtype))


THREADS = 128  # threads per block of the 1-D kernels


def launch_1d(kernel, n, *args):
    """Launch ``kernel[blocks, THREADS](*args)`` over ``n`` elements (nothing for n=0)."""
    if n:
        kernel[(n + THREADS - 1) // THREADS, THREADS](*args)


def flat(devarr):
    """A 1-D view of a C-contiguous device array (0-d: one element)."""
    return devarr.reshape(max(devarr.size, 1)) if devarr.ndim != 1 else devarr
