"""Device storage of CUDA tensors and the launch helpers the CUDA kernels share (see
:mod:`xops.kernels.cuda`)."""

import numpy as np

from ... import device as _device, registry
from ...errors import SpecError

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
    if np_dtype.kind in "biufc" and np_dtype.type.__module__ == "numpy":  # (f8E5M2: kind f)
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
    wrap = _state.get("wrap")
    if wrap is None:  # (imported on first use: a function-level import costs 4 us a call)
        from ...tensor import _wrap as wrap

        _state["wrap"] = wrap
    return wrap(devarr, dt)


def simulated():
    """Whether numba.cuda is its CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def fast_path():
    """Whether xops builds launches and device arrays itself (a real GPU, unless
    ``XOPS_CUDA_FAST_LAUNCH=0``) instead of going through numba's own path."""
    import os

    return not simulated() and os.environ.get("XOPS_CUDA_FAST_LAUNCH", "1") != "0"


def device_empty(shape, np_dtype):
    """An uninitialised row-major device array of ``shape`` (holder dtype ``np_dtype``)."""
    make = _state.get("empty") or _array_makers()[0]
    return make(tuple(shape), storage_dtype(np_dtype))


def _array_makers():
    """(empty, flat, shaped): numba's ``device_array`` and ``reshape``, or on a real GPU the same
    arrays built directly. numba's ``device_array`` looks up the current CUDA context
    with a driver call on every call, and ``reshape`` re-derives the layout through its
    dummy array; a result and its 1-D view are made for every op, so on a GPU (one
    context, made at the first CUDA tensor) xops allocates through that context's memory
    manager (the caching allocator) and builds the ``DeviceNDArray`` itself
    (:func:`fast_path`). Made once, kept in ``_state``."""
    cuda = numba_cuda()
    if not fast_path():
        _state["empty"] = lambda shape, dt: cuda.device_array(shape, dtype=dt)
        _state["flat"], _state["shaped"] = _reshape_flat, _shaped_numba
        return _state["empty"], _state["flat"], _state["shaped"]
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    from numba.cuda.cudadrv.dummyarray import Array

    ctx = cuda.current_context()
    take = getattr(ctx.memory_manager, "block", None) or ctx.memalloc  # (see _pool)
    layouts = {}  # (shape, strides, itemsize) -> numba's dummy array of that layout
    new = object.__new__

    def array(shape, strides, dt, nbytes, mem):
        # DeviceNDArray(shape, strides, dt, gpu_data=mem), its layout (the dummy array,
        # which depends on shape, strides and item size only) made once per layout
        key = (shape, strides, dt.itemsize)
        d = layouts.get(key)
        if d is None:
            if len(layouts) > 4096:
                layouts.clear()
            d = layouts[key] = Array.from_desc(0, shape, strides, dt.itemsize)
        a = new(DeviceNDArray)
        a.__dict__.update(
            ndim=len(shape), _dummy=d, shape=d.shape, strides=d.strides, dtype=dt,
            size=d.size, alloc_size=nbytes, gpu_data=mem, stream=0,
        )  # fmt: skip
        return a

    known = cuda.device_array(1, np.uint8)
    if set(vars(known)) != _FIELDS:  # numba-cuda's arrays changed: its own constructor
        array = _numba_array  # noqa: F811

    def empty(shape, dt):
        shape = tuple(map(int, shape))
        strides, nbytes = _row_major(shape, dt.itemsize)
        if not nbytes:
            return cuda.device_array(shape, dtype=dt)
        return array(shape, strides, dt, nbytes, take(nbytes))

    def flat(devarr):
        if devarr.ndim == 1:
            return devarr
        if not devarr.size or not devarr.is_c_contiguous():
            return _reshape_flat(devarr)
        dt = devarr.dtype
        n = devarr.size
        return array((n,), (dt.itemsize,), dt, n * dt.itemsize, devarr.gpu_data)

    def shaped(devarr, shape, dtype, start):
        dt = devarr.dtype if dtype is None else np.dtype(dtype)
        strides, nbytes = _row_major(shape, dt.itemsize)
        first = start * devarr.dtype.itemsize
        if not nbytes or not devarr.is_c_contiguous():
            return _shaped_numba(devarr, shape, dtype, start)
        if first + nbytes > devarr.size * devarr.dtype.itemsize:
            raise ValueError(f"{shape} {dt} from element {start} overruns {devarr.shape}")
        mem = devarr.gpu_data if not first else devarr.gpu_data.view(first, first + nbytes)
        return array(shape, strides, dt, nbytes, mem)

    _state["empty"], _state["flat"], _state["shaped"] = empty, flat, shaped
    return empty, flat, shaped


# the attributes numba-cuda's DeviceNDArray.__init__ sets (checked once, see _array_makers)
_FIELDS = {
    "ndim", "_dummy", "shape", "strides", "dtype", "size", "alloc_size", "gpu_data", "stream",
}  # fmt: skip


def _row_major(shape, itemsize):
    """(byte strides, byte size) of a row-major array of ``shape``."""
    strides, nbytes = [], itemsize
    for n in reversed(shape):
        strides.append(nbytes)
        nbytes *= n
    return tuple(reversed(strides)), nbytes


def _numba_array(shape, strides, dt, nbytes, mem):
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray(shape, strides, dt, gpu_data=mem)


def _shaped_numba(devarr, shape, dtype, start):
    v = _reshape_flat(devarr)
    n = 1
    for d in shape:
        n *= d
    dt = v.dtype if dtype is None else np.dtype(dtype)
    v = v[start : start + n * dt.itemsize // v.dtype.itemsize]  # (source elements)
    return (v if dt == v.dtype else v.view(dt)).reshape(shape)


def shaped(devarr, shape, dtype=None, start=0):
    """Elements [start, start + size) of C-contiguous device array ``devarr`` as a
    row-major array of ``shape`` (its bytes read as ``dtype`` when given): a view, no
    copy; built directly on a real GPU (numba's slicing and reshape cost 20-30 us of
    host time each, for a layout xops already knows)."""
    make = _state.get("shaped") or _array_makers()[2]
    return make(devarr, tuple(shape), dtype, start)


def _reshape_flat(devarr):
    return devarr.reshape(devarr.size) if devarr.ndim != 1 else devarr


THREADS = 256  # threads per block of the 1-D kernels on a GPU (fewer for tiny launches)


def launch_1d(kernel, n, *args):
    """``kernel`` over ``n`` elements, one thread each: blocks of 256 threads, or one block
    of the fewest whole warps for a smaller ``n`` (nothing for n = 0)."""
    if n >= THREADS:
        kernel[(n + THREADS - 1) // THREADS, THREADS](*args)
    elif n:
        kernel[1, (n + 31) // 32 * 32](*args)


def on_device(op, t, name):
    """Tensor ``t``'s device array; a SpecError naming ``op`` when it lives on the CPU (a
    host operand that reached a kernel)."""
    v = t._value
    if not hasattr(v, "copy_to_host"):
        raise SpecError(
            op,
            "device",
            f"operands live on different devices (cpu, cuda:0): {name} is on the CPU; "
            f"move it first (x.to('cuda'))",
        )
    return v


_tables = {}
_TABLES_KEPT = 1024


def device_table(key, build):
    """The int64 array ``build()`` on the device, uploaded once per ``key`` (the values
    it is built from; a host->device copy waits for the device, so a training loop should
    upload each op's geometry once). Kernels only read it."""
    t = _tables.get(key)
    if t is None:
        if len(_tables) >= _TABLES_KEPT:  # (keys follow shapes: keep the cache bounded)
            _tables.clear()
        t = _tables[key] = numba_cuda().to_device(np.asarray(build(), np.int64))
    return t


_compiled = {}


def compiled(fn):
    """Kernel function ``fn`` jitted (:func:`jit`) once per process."""
    k = _compiled.get(fn)
    if k is None:
        k = _compiled[fn] = jit(fn)
    return k


def flat(devarr):
    """A 1-D view of a C-contiguous device array (0-d: one element)."""
    make = _state.get("flat") or _array_makers()[1]
    return make(devarr)


# -- kernel launches ------------------------------------------------------------------------
#
# numba.cuda's launch path (``kernel[grid, block](*args)``) types every argument, converts
# each device array to a strided memory view and builds the parameter list anew on every
# call: about 60-100 us of host time per launch on an H200 machine, more than most of
# xops' kernels take on the device. ``jit`` wraps a kernel so that, after numba's first
# launch with a given argument signature (which compiles it), later launches with the same
# signature reuse the compiled kernel and pass the parameters as numba itself would lay
# them out (per array: meminfo, parent, size, itemsize, data pointer, shape, strides), but
# with no typing. Anything the fast path does not know is launched by numba, unchanged.
# ``XOPS_CUDA_FAST_LAUNCH=0`` turns it off; the simulator never uses it.


def jit(fn):
    """``numba.cuda.jit(fn)`` (a kernel), launched through the fast path on a real GPU."""
    k = numba_cuda().jit(fn)
    return _Kernel(k) if fast_path() else k


class _Kernel:
    __slots__ = ("dispatcher", "_plans")

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self._plans = {}  # argument signature -> (cuda.core kernel, converters) or None

    def __getattr__(self, name):  # py_func, overloads, ...
        return getattr(self.dispatcher, name)

    def __getitem__(self, config):
        grid, block = config[0], config[1]
        if len(config) > 2 and any(config[2:]):  # a stream or dynamic shared memory
            return self.dispatcher[config]
        return _Launch(self, grid, block)


class _Launch:
    __slots__ = ("kernel", "grid", "block")

    def __init__(self, kernel, grid, block):
        self.kernel, self.grid, self.block = kernel, grid, block

    def __call__(self, *args):
        k = self.kernel
        try:
            key = tuple(map(_signature, args))
        except _Unplannable:
            key = None
        plan = k._plans.get(key, False) if key is not None else None
        if not plan:
            k.dispatcher[self.grid, self.block](*args)  # compiles if needed
            if plan is False:
                k._plans[key] = _make_plan(k.dispatcher, args)
            return
        cu_kernel, convs = plan
        params = []
        for conv, a in zip(convs, args):
            conv(a, params)
        _core.launch(_default_stream(), _launch_config(self.grid, self.block), cu_kernel, *params)


class _Unplannable(Exception):
    pass


def _signature(a):
    """A key that fixes numba's type of kernel argument ``a`` (cheaply)."""
    t = type(a)
    if t is _core.device_array_type:
        return _array_arg(a)[0]
    if t is int:
        n = a.bit_length()
        if n < 64:
            return "i"
        if n == 64 and a >= 0:
            return "u"
        raise _Unplannable
    if t is float or t is bool:
        return t
    if t is tuple:
        return tuple(map(_signature, a))
    if isinstance(a, np.generic):
        return a.dtype
    raise _Unplannable


def _make_plan(dispatcher, args):
    """(cuda.core kernel, per-argument converters) of the overload numba just launched
    for ``args``, or None when some argument is not one the fast path lays out."""
    try:
        argtypes = tuple(dispatcher.typeof_pyval(a) for a in args)
        compiled = dispatcher.overloads.get(argtypes)
        if compiled is None or compiled.debug or getattr(compiled, "cooperative", False):
            return None
        convs = [_converter(t) for t in compiled.argument_types]
        if any(c is None for c in convs):
            return None
        return compiled._codelibrary.get_cufunc().kernel, convs
    except Exception:  # an internal of numba-cuda changed: stay on its own launch path
        return None


def _converter(ty):
    import ctypes

    from numba.cuda import types

    if isinstance(ty, types.Array):
        return _array_params
    if isinstance(ty, types.Boolean):
        return _append
    if isinstance(ty, types.Integer):
        c = getattr(ctypes, f"c_{ty}")
        return lambda v, out: out.append(c(v))
    if ty == types.float64:
        return lambda v, out: out.append(ctypes.c_double(v))
    if ty == types.float32:
        return lambda v, out: out.append(ctypes.c_float(v))
    if isinstance(ty, types.BaseTuple):
        parts = [_converter(t) for t in ty]
        if any(p is None for p in parts):
            return None

        def tuple_params(v, out):
            for p, x in zip(parts, v):
                p(x, out)

        return tuple_params
    return None


def _append(v, out):
    out.append(v)


def _array_params(a, out):
    out += _array_arg(a)[1]


def _array_arg(a):
    """(type key, launch parameters) of device array ``a``, worked out at its first
    launch and kept on it (an array's layout and memory never change; xops launches
    most arrays twice, as a result and as an operand)."""
    arg = a.__dict__.get("_xops_arg")
    if arg is None:
        d = a._dummy
        broadcast = a.size != 0 and 0 in a.strides
        layout = "A" if broadcast else ("C" if d.is_c_contig else ("F" if d.is_f_contig else "A"))
        params = (0, 0, a.size, a.dtype.itemsize, a.device_ctypes_pointer.value or 0)
        arg = a.__dict__["_xops_arg"] = ((a.dtype, a.ndim, layout), params + a.shape + a.strides)
    return arg


class _Core:
    """numba-cuda's launch pieces, imported on first use."""

    def __getattr__(self, name):
        from cuda.core import LaunchConfig, launch
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        self.launch, self.LaunchConfig, self.device_array_type = launch, LaunchConfig, DeviceNDArray
        return getattr(self, name)


_core = _Core()
_configs = {}
_stream = []


def _launch_config(grid, block):
    c = _configs.get((grid, block))
    if c is None:
        if len(_configs) > 4096:  # (grids follow tensor sizes: keep the cache bounded)
            _configs.clear()
        from numba.cuda._compat import CUDA_CORE_GE_1_0

        flag = "is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch"
        c = _configs[(grid, block)] = _core.LaunchConfig(grid=grid, block=block, **{flag: False})
    return c


def _default_stream():
    if not _stream:
        from numba.cuda.cudadrv import driver

        _stream.append(driver._to_core_stream(0))
    return _stream[0]
