"""DLPack and ``__cuda_array_interface__`` for CUDA tensors, both ways.

**Out.** ``Tensor.__cuda_array_interface__`` (version 3) describes a CUDA tensor's
device memory for the element types that have a NumPy typestr (bool, integers, f16, f32,
f64, complex); bf16, the f8 family, i2/i4/ui2/ui4, f4/f6 and quantized types raise an
AttributeError that says to use DLPack or convert. ``"stream"`` is 1 (the legacy default
stream, where xops launches its kernels): consumers order their work after it.
``Tensor.__dlpack__`` builds a DLPack ``DLManagedTensor`` with ctypes (device
``(kDLCUDA, 0)``, C strides, type codes as :mod:`xops._dlpack` lists: bf16 4, bool 6,
the f8 codes 7-14) in a capsule named ``"dltensor"``. The exported memory stays alive
until the consumer calls the tensor's deleter (or the capsule is dropped unconsumed).
``stream`` follows the array API: None/1 the legacy default stream, 2 the per-thread
default stream (both ordered after xops' launches by CUDA itself), -1 no ordering, any
other value a consumer's stream handle, which is made to wait on an event recorded after
the work queued so far; 0 is an error. Tensors are immutable values: writing through
a consumer's view is undefined behaviour (other tensors may share the memory).

**In.** :func:`from_dlpack` takes a producer on CUDA device 0 (PyTorch, CuPy, another
xops tensor), asks it for a capsule ordered on the legacy default stream (``stream=1``),
and wraps the memory as a numba device array without a copy; the capsule is renamed
``"used_dltensor"`` and its deleter runs when the last xops tensor on that memory is
gone. :func:`from_cuda_array_interface` does the same for objects that only have the
interface (numba device arrays), keeping the object alive. Data that is not row-major
(a transposed view, negative strides) is copied to row-major on the device (xops tensors
are C-contiguous); with ``copy=False`` it is a BufferError.

Under numba's CUDA simulator "device memory" is host memory: the same code paths run
with host addresses, so the tests can check capsules and sharing without a GPU.
"""

import ctypes

import numpy as np

from ... import _dlpack as abi, device as _device, registry
from ...dtypes import as_dtype
from ._storage import from_holder, numba_cuda, shaped, simulated, storage_dtype
from .movement import strided_copy

__all__ = [
    "cuda_array_interface",
    "dlpack",
    "from_dlpack",
    "from_cuda_array_interface",
    "copy_tensor",
]

_USED = {False: b"used_dltensor", True: b"used_dltensor_versioned"}
_NAME = b"dltensor"
_c_void_p, _c_char_p = ctypes.c_void_p, ctypes.c_char_p
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, _c_void_p, _c_char_p, _c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, _c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi)
)
# the capsule destructor receives the capsule as a raw pointer
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, _c_void_p, _c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_raw_pointer = ctypes.PYFUNCTYPE(_c_void_p, _c_void_p, _c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
_DELETER_TYPE = ctypes.CFUNCTYPE(None, _c_void_p)

# address of each exported DLManagedTensor -> the ctypes objects and the device array it
# points into; its deleter drops the entry
_live = {}


@_DELETER_TYPE
def _deleter(address):
    _live.pop(address, None)


@_DELETER_TYPE
def _capsule_destructor(capsule):
    # a capsule dropped unconsumed still owns its DLManagedTensor
    if _raw_is_valid(capsule, _NAME):
        _live.pop(_raw_pointer(capsule, _NAME), None)


_DELETER = ctypes.cast(_deleter, _c_void_p).value
_DESTRUCTOR = ctypes.cast(_capsule_destructor, _c_void_p).value


def live_exports():
    """How many exported DLPack tensors are still held by their consumers (for tests)."""
    return len(_live)


def _pointer(devarr):
    """The device address of a device array (under the simulator: its host buffer)."""
    if simulated():
        return devarr._ary.ctypes.data  # the simulator's FakeCUDAArray wraps a NumPy array
    return devarr.device_ctypes_pointer.value or 0


def _c_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


def _row_major(shape, strides):
    """Whether element ``strides`` (None: row-major) lay ``shape`` out row-major (dims of
    size 1 and empty arrays may carry any stride)."""
    if strides is None or 0 in shape:
        return True
    return all(n == 1 or s == c for n, s, c in zip(shape, strides, _c_strides(shape)))


# ---------------------------------------------------------------------------------------
# out
# ---------------------------------------------------------------------------------------


def cuda_array_interface(t):
    """``Tensor.__cuda_array_interface__`` (see the module docstring)."""
    dt = t._dtype
    if dt.quantized or storage_dtype(dt.np) != np.dtype(dt.np):
        raise AttributeError(
            f"__cuda_array_interface__: {t.type} has no typestr (the interface knows "
            f"NumPy's element types only); export it with DLPack (torch.from_dlpack(t)) "
            f"or xo.convert it first"
        )
    v = t._value
    return {
        "shape": tuple(v.shape),
        "strides": None,
        "data": (_pointer(v), False),
        "typestr": np.dtype(dt.np).str,
        "stream": None if simulated() else _default_stream_handle(),
        "version": 3,
    }


def _default_stream_handle():
    from numba import config

    return 2 if config.CUDA_PER_THREAD_DEFAULT_STREAM else 1


def _order_for(stream):
    """Make the consumer's ``stream`` see the work xops queued so far (array API rules)."""
    if stream is None or stream == -1:
        return
    if not isinstance(stream, int) or isinstance(stream, bool) or stream < -1:
        raise BufferError(f"__dlpack__: stream must be None or an int, got {stream!r}")
    if stream == 0:
        raise BufferError(
            "__dlpack__: stream=0 is ambiguous for CUDA (array API): pass 1 (the legacy "
            "default stream), 2 (the per-thread default stream) or a stream handle"
        )
    if stream in (1, 2) or simulated():
        return  # the default streams are ordered after xops' launches by CUDA itself
    cuda = numba_cuda()
    event = cuda.event(timing=False)
    event.record(cuda.default_stream())
    event.wait(cuda.external_stream(stream))


def dlpack(t, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__`` of a CUDA tensor: a ``"dltensor"`` capsule (see the module
    docstring). ``max_version`` is accepted; the capsule is DLPack's unversioned form,
    which every 1.x consumer still takes."""
    if dl_device is not None and tuple(dl_device) != (abi.CUDA, 0):
        raise BufferError(
            f"__dlpack__: {t.type} lives on cuda:0 (kDLCUDA = 2, device 0), cannot "
            f"export to device {tuple(dl_device)!r}; move it with t.to(device) first"
        )
    code, bits = abi.export_code(t._dtype, t.type)
    _order_for(stream)
    v = copy_array(t._value) if copy else t._value
    return export_capsule(_pointer(v), v.shape, code, bits, abi.CUDA, v)


def export_capsule(address, shape, code, bits, device_type, keep):
    """A ``"dltensor"`` capsule of a new DLManagedTensor over row-major memory at
    ``address`` on ``(device_type, 0)``; ``keep`` (and the structure) stay alive until
    the consumer calls its deleter, or the capsule is dropped unconsumed."""
    m = abi.DLManagedTensor()
    nd = len(shape)
    dims = (ctypes.c_int64 * max(nd, 1))(*shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*_c_strides(shape))
    dl = m.dl_tensor
    dl.data = address or None
    dl.device = abi.DLDevice(device_type, 0)
    dl.ndim = nd
    dl.dtype = abi.DLDataType(code, bits, 1)
    dl.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    dl.byte_offset = 0
    key = ctypes.addressof(m)
    m.manager_ctx = key
    m.deleter = _DELETER
    _live[key] = (m, dims, strides, keep)
    return _capsule_new(key, _NAME, _DESTRUCTOR)


def copy_array(devarr):
    """A new device array with ``devarr``'s contents (a device-to-device copy)."""
    out = numba_cuda().device_array(devarr.shape, dtype=devarr.dtype)
    if devarr.size:
        out.copy_to_device(devarr)
    return out


def copy_tensor(t):
    """A CUDA tensor with its own copy of ``t``'s memory."""
    return from_holder(copy_array(t._value), t._dtype)


# ---------------------------------------------------------------------------------------
# in
# ---------------------------------------------------------------------------------------


class _Owner:
    """Owns a consumed DLManagedTensor: calls its deleter when the last device array on
    its memory is gone."""

    __slots__ = ("_address", "_deleter")

    def __init__(self, address, deleter):
        self._address, self._deleter = address, deleter

    def __del__(self):
        if self._deleter:
            _DELETER_TYPE(self._deleter)(self._address)


class _HostView:
    """The simulator's stand-in for device memory at ``address``: a NumPy array over it
    that keeps ``owner`` alive."""

    def __init__(self, address, shape, np_dtype, owner):
        self._owner = owner
        self.__array_interface__ = {
            "data": (address, False),
            "shape": tuple(shape),
            "typestr": np_dtype.str,
            "strides": None,
            "version": 3,
        }


def _wrap_pointer(address, shape, np_dtype, owner):
    """A C-contiguous numba device array over ``address`` that keeps ``owner`` alive."""
    cuda = numba_cuda()
    if 0 in shape:
        return cuda.device_array(shape, dtype=np_dtype)
    if simulated():
        host = np.asarray(_HostView(address, shape, np_dtype, owner))
        return type(cuda.device_array(1, dtype=np.uint8))(host)  # the FakeCUDAArray class
    desc = {
        "shape": tuple(shape),
        "strides": None,
        "typestr": np_dtype.str,
        "data": (address, False),
        "version": 3,
    }
    return cuda.from_cuda_array_interface(desc, owner=owner, sync=False)


def _usable(op):
    _device.as_device("cuda", op)  # a clear error when there is no CUDA device
    registry.use_device("cuda")  # (once) from now on the primitives dispatch by device


def _not_row_major(shape, strides, unit):
    return BufferError(
        f"from_dlpack: the CUDA data (shape {tuple(shape)}, strides {tuple(strides)} in "
        f"{unit}) is not row-major, which xops tensors are, so it takes a copy: "
        f"copy=False cannot be honoured (leave copy=None, or make it contiguous first: "
        f"torch .contiguous(), cupy.ascontiguousarray)"
    )


def _strided(address, shape, strides, np_dtype, dt, owner):
    """A CUDA tensor with a row-major copy of the strided data at ``address`` (element
    ``strides``, negative ones too), made on the device. The copy is waited for before
    returning, since ``owner`` (the producer's reference) may go right after and the
    producer may then reuse its memory on a stream of its own."""
    lo = hi = 0  # (the lowest and highest element offsets the layout reaches)
    for n, st in zip(shape, strides):
        lo, hi = (lo + (n - 1) * st, hi) if st < 0 else (lo, hi + (n - 1) * st)
    span = _wrap_pointer(address + lo * np_dtype.itemsize, (hi - lo + 1,), np_dtype, owner)
    out = strided_copy(span, shape, strides, -lo)
    numba_cuda().synchronize()
    return from_holder(shaped(out, shape), dt)


def from_dlpack(x, dev, copy=None):
    """A CUDA tensor on the memory of DLPack producer ``x`` on CUDA device ``dev``."""
    if dev[1] != 0:
        raise BufferError(
            f"from_dlpack: the data lives on CUDA device {dev[1]}; xops uses one CUDA "
            f"device, cuda:0"
        )
    _usable("from_dlpack")
    stream = None if simulated() else _default_stream_handle()
    try:
        capsule = x.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a DLPack 0.x producer
        capsule = x.__dlpack__(stream=stream)
    return from_capsule(capsule, copy)


def from_capsule(capsule, copy=None):
    """A CUDA tensor on the memory a DLPack capsule (of a CUDA producer) describes; the
    capsule is consumed."""
    m, versioned = abi.managed(capsule)
    dl = m.dl_tensor
    where = (dl.device.device_type, dl.device.device_id)
    if where[0] not in (abi.CUDA, abi.CUDA_MANAGED) or where[1] != 0:
        raise BufferError(
            f"from_dlpack: the capsule's data lives on DLPack device {where}, not cuda:0"
        )
    dt = as_dtype(abi.import_name(dl.dtype))
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    strides = tuple(dl.strides[i] for i in range(dl.ndim)) if dl.strides else None
    plain = _row_major(shape, strides)
    if not plain and copy is False:
        raise _not_row_major(shape, strides, "elements")
    _usable("from_dlpack")
    _capsule_set_name(capsule, _USED[versioned])  # consumed: its deleter is ours to call
    owner = _Owner(ctypes.addressof(m), m.deleter)
    address = (dl.data or 0) + dl.byte_offset
    if not plain:  # (a copy: row-major on the device)
        return _strided(address, shape, strides, storage_dtype(dt.np), dt, owner)
    out = from_holder(_wrap_pointer(address, shape, storage_dtype(dt.np), owner), dt)
    return copy_tensor(out) if copy else out


def from_cuda_array_interface(x, copy=None):
    """A CUDA tensor on the memory that ``x.__cuda_array_interface__`` describes; ``x``
    is kept alive while the tensor (or one sharing its memory) lives."""
    desc = x.__cuda_array_interface__
    if desc.get("mask") is not None:
        raise BufferError("from_dlpack: masked __cuda_array_interface__ data is not supported")
    try:
        np_dtype = np.dtype(desc["typestr"])
        dt = as_dtype(np_dtype)
    except (TypeError, ValueError):
        raise BufferError(
            f"from_dlpack: __cuda_array_interface__ typestr {desc['typestr']!r} has no "
            f"xops element type"
        ) from None
    shape = tuple(desc["shape"])
    strides = desc.get("strides")
    plain = True
    if strides is not None:
        if any(s % np_dtype.itemsize for s in strides):
            raise BufferError(
                f"from_dlpack: __cuda_array_interface__ strides {tuple(strides)} are not "
                f"multiples of the element size {np_dtype.itemsize}"
            )
        plain = _row_major(shape, [s // np_dtype.itemsize for s in strides])
        if not plain and copy is False:
            raise _not_row_major(shape, strides, "bytes")
    _usable("from_dlpack")
    stream = desc.get("stream")
    if stream not in (None, 1, 2) and not simulated():  # xops' stream after the producer's
        cuda = numba_cuda()
        event = cuda.event(timing=False)
        event.record(cuda.external_stream(stream))
        event.wait(cuda.default_stream())
    if not plain:  # (a copy: row-major on the device)
        elements = [st // np_dtype.itemsize for st in strides]
        return _strided(desc["data"][0], shape, elements, np_dtype, dt, x)
    out = from_holder(_wrap_pointer(desc["data"][0], shape, np_dtype, x), dt)
    return copy_tensor(out) if copy else out
