"""Creation functions of the array API standard (2024.12), plus ``array``.

Default types (the standard leaves them to the implementation): Python floats give
float32, ints int64, complex complex64 — as PyTorch and JAX. Pass ``dtype=`` (or
float64 data) for double precision.
"""

import functools

import numpy as np

from ..device import as_device, get_default_device, move
from ..errors import SpecError
from ..limits import MAX_RANK
from ..ops import elementwise as E
from ..ops import movement as M
from ..tensor import Tensor, _wrap, tensor
from . import _dtypes as D
from ._base import array as _array
from ._base import from_numpy, to


def _dt(dtype, op, default=None):
    return default if dtype is None else D.as_dtype(dtype, op)


def _shape(shape, op):
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise SpecError(op, "", f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise SpecError(op, "", f"shape must be non-negative, got {shape}")
    if len(shape) > MAX_RANK:
        raise SpecError(op, "", f"at most {MAX_RANK} dimensions are supported, got {len(shape)}")
    return shape


def _fill_dtype(fill_value, op):
    if isinstance(fill_value, bool):
        return D.bool
    if isinstance(fill_value, int):
        return D.default_int
    if isinstance(fill_value, float):
        return D.default_float
    if isinstance(fill_value, complex):
        return D.default_complex
    raise SpecError(
        op,
        "",
        f"fill_value must be a Python bool, int, float or complex, got {type(fill_value).__name__}",
    )


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An array from a Tensor, NumPy array, buffer, nested sequence or scalar.

    Tensors are immutable, so ``copy=False`` and ``copy=None`` return the same tensor
    when no conversion is needed; host data is always copied (``copy=False`` on host
    data is an error, as the standard asks when a copy cannot be avoided)."""
    as_device(device, "asarray")
    dt = _dt(dtype, "asarray")
    if isinstance(obj, Tensor):
        if dt is None or dt is obj._dtype:
            return _wrap(obj._value.copy(), obj._dtype) if copy else obj
        if copy is False:
            raise ValueError("asarray: copy=False but converting the dtype needs a copy")
        return to(obj, dt)
    if copy is False:
        raise ValueError(
            "asarray: copy=False cannot share memory with host data (xops "
            "tensors own immutable buffers); use copy=None or xnp.from_dlpack"
        )
    if isinstance(obj, (memoryview, bytes, bytearray)) or (
        not isinstance(obj, (np.ndarray, np.generic, list, tuple, bool, int, float, complex))
        and hasattr(obj, "__array__")
    ):
        obj = np.asarray(obj)
    if dt is None or _has_t(obj):
        out = _array(obj, "asarray")
        return out if dt is None else to(out, dt)
    if (
        isinstance(obj, (float, complex))
        and dt.kind in ("si", "ui", "bool")
        or isinstance(obj, complex)
        and dt.kind == "float"
    ):
        raise SpecError(
            "asarray",
            "",
            f"cannot make a {dt.name} array from the Python {type(obj).__name__} {obj!r}",
        )
    try:
        return tensor(obj, dt)
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, SpecError):
            raise
        raise SpecError(
            "asarray", "", f"cannot make a {dt.name} array from {obj!r:.60}: {e}"
        ) from None


def _has_t(x):
    if isinstance(x, Tensor):
        return True
    return isinstance(x, (list, tuple)) and any(_has_t(v) for v in x)


def array(object, dtype=None, copy=True):
    """NumPy's spelling of :func:`asarray` (an extra)."""
    return asarray(object, dtype=dtype, copy=True if copy else None)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    as_device(device, "arange")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise SpecError("arange", "", "step must not be 0")
    vals = (start, stop, step)
    if dtype is None:
        dt = D.default_float if any(isinstance(v, float) for v in vals) else D.default_int
    else:
        dt = D.as_dtype(dtype, "arange")
    if all(isinstance(v, int) for v in vals):
        n = len(range(start, stop, step))  # exact for Python ints of any size
    else:
        n = max(0, int(np.ceil((stop - start) / step)))
    if dt.kind in ("si", "ui", "bool") and all(isinstance(v, int) for v in vals):
        # start + i * step in wrapping 64-bit arithmetic: exact wherever the values fit
        u = np.arange(n, dtype=np.uint64) * np.uint64(step % 2**64) + np.uint64(start % 2**64)
        out = u.view(np.int64) if dt.kind != "ui" else u
    elif dt.kind in ("si", "ui"):
        out = np.floor(start + step * np.arange(n, dtype=np.float64)).astype(np.int64)
    else:
        out = start + step * np.arange(n, dtype=np.float64)
    return from_numpy(out, dt)


def empty(shape, *, dtype=None, device=None):
    return zeros(shape, dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None):
    return zeros_like(x, dtype=dtype, device=device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    as_device(device, "eye")
    dt = _dt(dtype, "eye", D.default_float)
    return from_numpy(np.eye(n_rows, n_cols, k, dtype=np.float64), dt)


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from any object with ``__dlpack__`` (NumPy arrays, PyTorch tensors, on
    the CPU or CUDA), sharing its memory unless ``copy=True`` or ``device`` differs from
    the producer's (:func:`xops._interop.from_dlpack`)."""
    from .._interop import from_dlpack as _from_dlpack

    return _from_dlpack(x, device=device, copy=copy)


def full(shape, fill_value, *, dtype=None, device=None):
    as_device(device, "full")
    shape = _shape(shape, "full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = _dt(dtype, "full", _fill_dtype(fill_value, "full"))
    return _full(shape, fill_value, dt, "full")


def _full(shape, value, dt, op):
    if dt.kind in ("si", "ui") and not isinstance(value, (bool, int)):
        raise SpecError(op, "", f"fill_value {value!r} cannot fill an integer array ({dt.name})")
    if dt.kind in ("si", "ui") and not dt.min <= value <= dt.max:
        raise SpecError(op, "", f"fill_value {value} does not fit {dt.name} [{dt.min}, {dt.max}]")
    if dt.kind in ("si", "ui"):
        host = np.full(shape, int(value), np.int64 if dt.kind == "si" else np.uint64)
    elif dt.kind == "bool":
        host = np.full(shape, bool(value))
    else:
        host = np.full(shape, value, np.complex128 if isinstance(value, complex) else np.float64)
    return tensor(host, dt)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    return _full_like(x, fill_value, dtype, device, "full_like")


def _full_like(x, value, dtype, device, op):
    """``op`` (full_like, ones_like, zeros_like): x's shape filled with ``value``, in
    ``dtype`` or x's own type."""
    x = _array(x, op)
    as_device(device, op)
    return _full(x.shape, value, _dt(dtype, op, x._dtype), op)


def _full_new(shape, value, dtype, device, op):
    """``op`` (ones, zeros): ``shape`` filled with ``value``, in ``dtype`` or the default
    float type."""
    as_device(device, op)
    return _full(_shape(shape, op), value, _dt(dtype, op, D.default_float), op)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    as_device(device, "linspace")
    cplx = isinstance(start, complex) or isinstance(stop, complex)
    dt = _dt(dtype, "linspace", D.default_complex if cplx else D.default_float)
    if dt.kind not in ("float", "complex"):
        raise SpecError("linspace", "", f"dtype must be floating or complex, got {dt.name}")
    out = np.linspace(
        start,
        stop,
        num,
        endpoint=endpoint,
        dtype=np.complex128 if dt.kind == "complex" else np.float64,
    )
    return tensor(out, dt)


def meshgrid(*arrays, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise SpecError("meshgrid", "", f"indexing must be 'xy' or 'ij', got {indexing!r}")
    ts = [_array(a, "meshgrid") for a in arrays]
    if any(t.ndim != 1 for t in ts):
        raise SpecError("meshgrid", "", "every input must be 1-D")
    if not ts:
        return []
    dt = ts[0]._dtype
    for t in ts[1:]:
        dt = D.promote_types(dt, t._dtype, "meshgrid")
    shape = [t.shape[0] for t in ts]
    dims = list(range(len(ts)))
    if indexing == "xy" and len(ts) > 1:
        shape[0], shape[1] = shape[1], shape[0]
        dims[0], dims[1] = 1, 0
    return [M.broadcast_in_dim(to(t, dt), [d], tuple(shape)) for t, d in zip(ts, dims)]


def ones(shape, *, dtype=None, device=None):
    return _full_new(shape, 1, dtype, device, "ones")


def ones_like(x, /, *, dtype=None, device=None):
    return _full_like(x, 1, dtype, device, "ones_like")


def _triangle(x, k, op, lower):
    x = _array(x, op)
    if x.ndim < 2:
        raise SpecError(op, "", f"needs an array of rank >= 2, got rank {x.ndim}")
    n, m = x.shape[-2:]
    mask = np.tril(np.ones((n, m), bool), k) if lower else np.triu(np.ones((n, m), bool), k)
    keep = M.broadcast_in_dim(tensor(mask), [x.ndim - 2, x.ndim - 1], x.shape)
    return E.select(keep, x, from_numpy(np.zeros(x.shape, x._dtype.np), x._dtype))


def tril(x, /, *, k=0):
    return _triangle(x, k, "tril", True)


def triu(x, /, *, k=0):
    return _triangle(x, k, "triu", False)


def zeros(shape, *, dtype=None, device=None):
    return _full_new(shape, 0, dtype, device, "zeros")


def zeros_like(x, /, *, dtype=None, device=None):
    return _full_like(x, 0, dtype, device, "zeros_like")


def _placed(fn):
    """``fn`` with its result on ``device=`` (default: the ``*_like`` operand's device,
    else :func:`xops.default_device`'s): an explicit copy when it was made elsewhere."""
    like = fn.__name__.endswith("_like")

    @functools.wraps(fn)
    def placed(*args, device=None, **kwargs):
        out = fn(*args, device=device, **kwargs)
        if device is not None:
            d = as_device(device, fn.__name__)
        elif like and isinstance(args[0], Tensor):
            d = args[0].device
        else:
            d = get_default_device()
        return out if out.device == d else move(out, d, fn.__name__)

    return placed


for _name in (
    "arange asarray empty empty_like eye full full_like linspace ones ones_like zeros zeros_like"
).split():
    globals()[_name] = _placed(globals()[_name])
del _name

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]
