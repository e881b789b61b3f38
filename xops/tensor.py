"""The eager Tensor: an immutable value with a spec element type.

A Tensor holds a read-only NumPy array in its element type's holder dtype. No op
ever changes an existing tensor's data; every op returns new tensors. Python
operators map to the spec's ops (see :mod:`xops.ops.operators`).
"""
import numpy as np

from .dtypes import DType, as_dtype
from .errors import SpecError

__all__ = ["Tensor", "tensor", "typestr"]


def typestr(dtype, shape):
    """The spec-style short type of a value: ``f32[2,3]``, ``i1[]``."""
    return f"{dtype.name}[{','.join(map(str, shape))}]"


class Tensor:
    """An immutable n-dimensional array of one spec element type.

    Create one with :func:`xops.tensor`. ``.shape``, ``.dtype``, ``.ndim``, ``.size``;
    ``.numpy()`` returns a (writable) copy, ``np.asarray(t)`` a read-only view.
    """

    __slots__ = ("_value", "_dtype", "requires_grad", "grad", "_node", "__weakref__")
    __array_ufunc__ = None  # make `ndarray <op> Tensor` defer to Tensor's operators
    __hash__ = object.__hash__  # tensors hash by identity (== is elementwise compare)

    def __init__(self, data, dtype=None):
        t = tensor(data, dtype)
        self._value = t._value
        self._dtype = t._dtype
        self.requires_grad = False
        self.grad = None
        self._node = None

    # -- attributes ---------------------------------------------------------------
    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return self._value.size

    @property
    def type(self):
        """The spec-style type string, e.g. ``f32[2,3]``."""
        return typestr(self._dtype, self._value.shape)

    # -- conversion to host values -------------------------------------------------
    def numpy(self):
        """A writable NumPy copy in the holder dtype (ml_dtypes types stay ml_dtypes)."""
        return self._value.copy()

    def __array__(self, dtype=None, copy=None):
        v = self._value
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        return v.copy() if copy else v

    def item(self):
        if self._value.size != 1:
            raise ValueError(f"item(): only a one-element tensor converts to a Python "
                             f"scalar, got {self.type}")
        return self._value.reshape(()).item() if not self._dtype.is_narrow else \
            self._value.reshape(()).astype(self._dtype.compute).item()

    def tolist(self):
        v = self._value
        if self._dtype.is_narrow:
            v = v.astype(self._dtype.compute)
        return v.tolist()

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._value.shape[0]))

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError(f"the truth value of a tensor with more than one element is "
                             f"ambiguous, got {self.type}")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if not (self._dtype.is_int or self._dtype.is_bool) or self._value.size != 1:
            raise TypeError(f"only a one-element integer tensor can be an index, got {self.type}")
        return int(self.item())

    def __repr__(self):
        v = self._value
        if self._dtype.is_narrow and self._dtype.kind != "float":
            v = v.astype(self._dtype.compute)
        body = np.array2string(v, separator=", ", prefix="xo.tensor(", threshold=200)
        return f"xo.tensor({body}, {self.type})"

    __str__ = __repr__

    # -- autodiff (xops.autodiff) ---------------------------------------------------
    def backward(self, gradient=None, create_graph=False):
        """Accumulate the gradient of this tensor into ``.grad`` of the leaves it was
        computed from (``gradient`` defaults to 1 for one-element tensors)."""
        from .autodiff.tape import backward
        backward(self, gradient, create_graph)

    def detach(self):
        """The same value, cut off from the tape (never requires a gradient)."""
        return _wrap(self._value, self._dtype)

    def requires_grad_(self, flag=True):
        _check_grad_dtype(self, flag)
        self.requires_grad = flag
        return self

    def __setitem__(self, key, value):
        raise TypeError("xops tensors are immutable values; build a new one with "
                        "xo.dynamic_update_slice, xo.select or xo.pad")

    def __reduce__(self):
        return (tensor, (self._value, self._dtype.name))


def _wrap(value, dtype):
    """Make a Tensor around a holder array without copying or checking (internal)."""
    t = Tensor.__new__(Tensor)
    if type(value) is not np.ndarray:
        value = np.asarray(value)  # NumPy ufuncs give scalars for 0-d inputs
    if value.flags.writeable:
        value.flags.writeable = False
    t._value = value
    t._dtype = dtype
    t.requires_grad = False
    t.grad = None
    t._node = None
    return t


def _default_dtype(value):
    """Element type for host data with no dtype given: NumPy dtypes are kept, Python
    values follow PyTorch/JAX for floats (f32) and PyTorch/NumPy for ints (i64)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return as_dtype(value.dtype)
    arr = np.asarray(value)
    k = arr.dtype.kind
    if k == "b":
        return as_dtype("i1")
    if k in "iu":
        return as_dtype("i64")
    if k == "f":
        return as_dtype("f32")
    if k == "c":
        return as_dtype("c64")
    raise TypeError(f"cannot make a tensor from {type(value).__name__} "
                    f"(NumPy sees dtype {arr.dtype})")


def _from_python(data, dt):
    """Nested Python data as an array. Integers stay exact (NumPy would go through
    float64 past the int64 range) and must fit the element type, as in NumPy 2."""
    if dt.kind in ("si", "ui"):
        try:
            arr = np.array(data, dtype=np.uint64 if dt.kind == "ui" else np.int64)
        except OverflowError as e:
            raise SpecError("tensor", "", f"{e} for element type {dt.name} "
                                          f"[{dt.min}, {dt.max}]") from None
        except (TypeError, ValueError):
            arr = np.asarray(data)
        else:
            if arr.size and dt.bits < 64 and (int(arr.min()) < dt.min or int(arr.max()) > dt.max):
                raise SpecError("tensor", "", f"values in [{int(arr.min())}, {int(arr.max())}] do "
                                              f"not fit element type {dt.name} [{dt.min}, {dt.max}]")
            return arr
    else:
        arr = np.asarray(data)
    if arr.dtype == object:
        raise TypeError(f"cannot make a tensor from ragged or object data: {data!r:.60}")
    return arr


def _cast(arr, dt):
    """A new C-contiguous holder array of element type ``dt`` from any NumPy array:
    floats round correctly to narrow floats; integers wrap like NumPy's astype."""
    from .dtypes import from_compute, int_to_float
    if arr.dtype == dt.np:
        out = arr.copy()  # never alias user memory: tensors are immutable values
    elif arr.dtype == np.float64 and dt.kind == "float":
        out = from_compute(arr, dt)  # correctly rounded f64 -> narrow float
    elif arr.dtype.kind in "iub" and dt.kind == "float":
        out = int_to_float(arr, dt)  # one rounding, also past 2**53
    elif dt.kind in ("si", "ui") and arr.dtype.kind in "iub":
        out = arr.astype(np.uint64 if arr.dtype.kind == "u" else np.int64).astype(dt.np)
    else:
        try:
            with np.errstate(all="ignore"):
                out = arr.astype(dt.np)
        except (TypeError, ValueError) as e:
            raise SpecError("tensor", "", f"cannot hold {arr.dtype} data as {dt.name}: {e}") \
                from None
    if not out.flags.c_contiguous or out is arr:
        out = out.copy()  # (np.ascontiguousarray would turn 0-d into 1-d)
    return out


def tensor(data, dtype=None, requires_grad=False):
    """A new Tensor from a Tensor, NumPy array, nested sequence or scalar.

    ``dtype`` is any name :func:`xops.dtypes.as_dtype` accepts. Without it NumPy arrays
    keep their dtype, Python floats become f32, ints i64, bools i1, complex c64.
    Python integers must fit the element type (as in NumPy 2); NumPy arrays convert
    like ``astype`` (floats round to nearest even, correctly for narrow floats;
    integers wrap). Use ``xo.convert`` for the spec's float -> int saturation.

    >>> xo.tensor([[1, 2], [3, 4]], dtype="bf16")
    xo.tensor([[1, 2],
               [3, 4]], bf16[2,2])
    """
    if isinstance(data, Tensor):
        dt = data._dtype if dtype is None else as_dtype(dtype)
        if dt.kind == "quant" or data._dtype.kind == "quant":
            out = _quantized_literal(data, dt)
        else:
            out = _wrap(data._value if dt is data._dtype else _cast(data._value, dt), dt)
    elif dtype is not None and as_dtype(dtype).kind == "quant":
        out = _quantized_literal(data, as_dtype(dtype))
    else:
        dt = as_dtype(dtype) if dtype is not None else _default_dtype(data)
        if isinstance(data, (np.ndarray, np.generic)):
            arr = _cast(np.asarray(data), dt)
        else:
            arr = _cast(_from_python(data, dt), dt)
        out = _wrap(arr, dt)
    if requires_grad:
        _check_grad_dtype(out, True)
        out.requires_grad = True
    return out


def _quantized_literal(data, qt):
    """A tensor of quantized type ``qt`` from its *storage* values (as the spec's
    quantized literals are written); values must be storage-type values."""
    if isinstance(data, Tensor):
        if data._dtype == qt:
            return _wrap(data._value, data._dtype)
        if data._dtype.kind == "quant" or qt.kind != "quant":
            raise SpecError("tensor", "", f"cannot change {data._dtype.name} into {qt.name} "
                                          f"with tensor(): use xo.uniform_quantize / "
                                          f"xo.uniform_dequantize / xo.bitcast_convert")
    if not isinstance(data, Tensor) and np.asarray(data).dtype.kind not in "iu":
        raise SpecError("tensor", "C1", f"a quantized literal holds integers of the storage "
                                        f"type {qt.storage_type.name} (the spec's "
                                        f"has_syntax), got {np.asarray(data).dtype} data; "
                                        f"use xo.uniform_quantize for real values")
    storage = tensor(data, qt.storage_type)
    qt.check_shape("tensor", storage.shape)
    return _wrap(storage._value, qt)


def _check_grad_dtype(t, flag):
    if flag and t._dtype.kind not in ("float", "complex"):
        raise SpecError("tensor", "", f"only floating-point and complex tensors can require "
                                      f"gradients, got {t.type}")


# The operators are attached by xops.ops.operators (imported by xops/__init__).
