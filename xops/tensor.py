"""The eager Tensor: an immutable value with a spec element type.

A Tensor holds a read-only NumPy array in its element type's holder dtype. No op
ever changes an existing tensor's data; every op returns new tensors. Python
operators map to the spec's ops (see :mod:`xops.ops.operators`).
"""

import threading

import numpy as np

from .dtypes import as_dtype, delegate
from .errors import SpecError
from . import device as _dev
from .device import of as _device_of, host_copy as _host_copy
from . import registry as _registry
from .kernels import pool as _pool
from .registry import op as _op  # ops by name, at call time: they sit above this layer

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
    __hash__ = object.__hash__  # tensors hash by identity (== is elementwise compare)

    def __init__(self, data, dtype=None):
        t = tensor(data, dtype)
        self._value = t._value
        self._dtype = t._dtype
        self.requires_grad = t.requires_grad  # Tensor(x) of a tensor on the tape stays on it
        self.grad = None
        self._node = t._node
        if t._node is not None:
            _tape._replace_output(t._node, t, self)

    # -- attributes ---------------------------------------------------------------
    shape = delegate("_value.shape", "The dimension sizes, a tuple.")
    dtype = delegate("_dtype", "The element type, an :class:`xops.DType`.")
    ndim = delegate("_value.ndim", "The rank.")
    size = delegate("_value.size", "The number of elements.")

    @property
    def type(self):
        """The spec-style type string, e.g. ``f32[2,3]``."""
        return typestr(self._dtype, self._value.shape)

    # -- conversion to host values -------------------------------------------------
    def numpy(self):
        """A writable NumPy copy in the holder dtype (ml_dtypes types stay ml_dtypes)."""
        if self.requires_grad:
            _note_escape(self)
        return _host_copy(self._value, self._dtype.np)  # (CUDA: an explicit device -> host copy)

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad:
            _note_escape(self)  # the tape cannot follow the value (xops.autodiff.boundary)
        v = self._value
        if type(v) is not np.ndarray:
            raise TypeError(
                f"a tensor on {self.device} does not convert to a NumPy array "
                f"implicitly: copy it to the host with .numpy() or .to('cpu')"
            )
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        return v.copy() if copy else v

    def item(self):
        if self._value.size != 1:
            raise ValueError(
                f"item(): only a one-element tensor converts to a Python scalar, got {self.type}"
            )
        if self.requires_grad:
            _note_escape(self)
        v = _host_value(self)
        return (
            v.reshape(()).item()
            if not self._dtype.is_narrow
            else v.reshape(()).astype(self._dtype.compute).item()
        )

    def tolist(self):
        if self.requires_grad:
            _note_escape(self)
        v = _host_value(self)
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
            raise ValueError(
                f"the truth value of a tensor with more than one element is "
                f"ambiguous, got {self.type}"
            )
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
        v = _host_value(self)  # (CUDA: an explicit copy to the host)
        if self._dtype.is_narrow and self._dtype.kind != "float":
            v = v.astype(self._dtype.compute)
        body = np.array2string(v, separator=", ", prefix="xo.tensor(", threshold=200)
        where = "" if type(self._value) is np.ndarray else f", device='{self.device}'"
        return f"xo.tensor({body}, {self.type}{where})"

    __str__ = __repr__

    # -- the everyday layer: methods and properties (xops.numpy, docs/numpy.md) -------
    # Each calls the namespace function, so methods promote and broadcast like xnp.
    # NumPy and PyTorch spellings both work: axis=/dim=, keepdims=/keepdim=,
    # x.reshape(2, 3) and x.reshape((2, 3)).
    @property
    def device(self):
        """Where the data lives: ``xops.device.Device`` (``str`` is ``"cpu"`` or
        ``"cuda:0"``)."""
        return _device_of(self._value)

    @property
    def __cuda_array_interface__(self):
        """A CUDA tensor's device memory (version 3; element types with a NumPy typestr
        only: :mod:`xops.kernels.cuda.interop`); AttributeError on the CPU."""
        if type(self._value) is np.ndarray:
            raise AttributeError("__cuda_array_interface__: the tensor lives on the CPU")
        return _interop.cuda_array_interface(self)

    @property
    def T(self):
        """The axes reversed (NumPy; the array API standard defines it for 2-D)."""
        if self._value.ndim < 2:
            return _fresh(self)  # a new object: t[...] = v must not show through it
        return _xnp.permute_dims(self, tuple(range(self.ndim))[::-1])

    @property
    def mT(self):
        """The last two axes swapped (a stack of matrices transposed)."""
        return _xnp.matrix_transpose(self)

    @property
    def real(self):
        return _xnp.real(self) if self._dtype.kind == "complex" else _fresh(self)

    @property
    def imag(self):
        return _xnp.imag(self)

    def __array_namespace__(self, /, *, api_version=None):
        if api_version not in (None, "2024.12", "2023.12", "2022.12", "2021.12"):
            raise ValueError(
                f"xops.numpy implements the array API standard 2024.12, not {api_version!r}"
            )
        return _xnp

    def to_device(self, device, /, *, stream=None):
        """This tensor on ``device`` (a Device, ``"cpu"``, ``"cuda"``): an explicit copy
        between devices (not recorded on the tape), a new object on the same device."""
        from .device import as_device, move

        d = as_device(device, "to_device")
        return _fresh(self) if d == self.device else move(self, d, "to_device")

    def to(self, target, /):
        """PyTorch's ``.to``: a device (``"cpu"``, a Device) or an element type."""
        from .device import as_device, is_device_spec

        if is_device_spec(target):
            d = as_device(target, "to")
            return _fresh(self) if d == self.device else self.to_device(d)
        return _xnp.astype(self, target, copy=False)

    def __format__(self, spec):
        if not spec:
            return str(self)
        if self._value.ndim:
            raise TypeError(
                f"unsupported format string {spec!r} for a tensor of rank "
                f"{self.ndim}: format specs apply to 0-d tensors (use .item())"
            )
        return format(self.item(), spec)

    def __round__(self, ndigits=None):
        if ndigits is None:
            return _xnp.round(self)
        f = 10.0**ndigits
        return _xnp.divide(_xnp.round(_xnp.multiply(self, f)), f)

    def reshape(self, *shape):
        """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; -1 infers one dim."""
        return _xnp.reshape(
            self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        )

    view = reshape

    def transpose(self, *axes):
        """No argument: axes reversed (NumPy). Two ints: swap those two axes (PyTorch's
        ``transpose(dim0, dim1)``, also for 2-D tensors). A tuple, or one int per axis
        for rank != 2: that permutation (NumPy)."""
        if len(axes) == 1 and not isinstance(axes[0], int):
            return _xnp.permute_dims(self, tuple(axes[0]))
        if not axes:
            return self.T
        if len(axes) == 2:
            perm = list(range(self.ndim))
            i, j = (a % self.ndim if self.ndim else a for a in axes)
            perm[i], perm[j] = perm[j], perm[i]
            return _xnp.permute_dims(self, tuple(perm))
        return _xnp.permute_dims(self, axes)

    def permute(self, *dims):
        """PyTorch's permute: ``x.permute(2, 0, 1)`` or ``x.permute((2, 0, 1))``."""
        return _xnp.permute_dims(
            self, tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
        )

    def flatten(self, start_dim=0, end_dim=-1):
        n = self._value.ndim
        if n == 0:
            return _xnp.reshape(self, (1,))
        s, e = start_dim % n, end_dim % n
        shape = self.shape[:s] + (int(np.prod(self.shape[s : e + 1])),) + self.shape[e + 1 :]
        return _xnp.reshape(self, shape)

    def squeeze(self, axis=None, *, dim=None):
        axis = _axis_arg(axis, dim)
        if axis is None:
            axis = tuple(d for d, s in enumerate(self.shape) if s == 1)
        return _xnp.squeeze(self, axis)

    def expand_dims(self, axis):
        return _xnp.expand_dims(self, axis)

    def unsqueeze(self, dim):
        return _xnp.expand_dims(self, dim)

    def sum(self, axis=None, dtype=None, keepdims=False, *, dim=None, keepdim=None):
        if (
            axis is None
            and dim is None
            and dtype is None
            and not keepdims
            and not keepdim
            and self._dtype.kind == "float"
        ):
            return _xnp._reduction.sum_all(self)  # the one-call fast path
        return _xnp.sum(
            self, axis=_axis_arg(axis, dim), dtype=dtype, keepdims=bool(keepdims or keepdim)
        )

    def prod(self, axis=None, dtype=None, keepdims=False, *, dim=None, keepdim=None):
        return _xnp.prod(
            self, axis=_axis_arg(axis, dim), dtype=dtype, keepdims=bool(keepdims or keepdim)
        )

    def mean(self, axis=None, dtype=None, keepdims=False, *, dim=None, keepdim=None):
        x = self if dtype is None else _xnp.astype(self, dtype)
        return _xnp.mean(x, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def max(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The largest value (a tensor; unlike torch, never a (values, indices) pair)."""
        return _xnp.max(self, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def min(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _xnp.min(self, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def argmax(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _xnp.argmax(self, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def argmin(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _xnp.argmin(self, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def var(self, axis=None, ddof=0, keepdims=False, *, dim=None, keepdim=None, correction=None):
        """Variance with ``ddof``/``correction`` (default 0, NumPy's and the standard's;
        PyTorch's default is 1)."""
        return _xnp.var(
            self,
            axis=_axis_arg(axis, dim),
            correction=ddof if correction is None else correction,
            keepdims=bool(keepdims or keepdim),
        )

    def std(self, axis=None, ddof=0, keepdims=False, *, dim=None, keepdim=None, correction=None):
        return _xnp.std(
            self,
            axis=_axis_arg(axis, dim),
            correction=ddof if correction is None else correction,
            keepdims=bool(keepdims or keepdim),
        )

    def cumsum(self, axis=None, dtype=None, *, dim=None):
        """Cumulative sum along ``axis``; no axis: over the flattened tensor (NumPy)."""
        axis = _axis_arg(axis, dim)
        x = self if axis is not None else _xnp.reshape(self, (self.size,))
        return _xnp.cumulative_sum(x, axis=0 if axis is None else axis, dtype=dtype)

    def any(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _xnp.any(self, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def all(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _xnp.all(self, axis=_axis_arg(axis, dim), keepdims=bool(keepdims or keepdim))

    def clip(self, min=None, max=None):  # noqa: A002
        return _xnp.clip(self, min=min, max=max)

    clamp = clip

    def astype(self, dtype, copy=True):
        """This tensor converted to ``dtype`` (``"f64"``, ``xo.float64``, ``np.float64``)."""
        return _xnp.astype(self, dtype, copy=copy)

    def exp(self):
        return _xnp.exp(self)

    def log(self):
        return _xnp.log(self)

    def abs(self):
        return _xnp.abs(self)

    def sqrt(self):
        return _xnp.sqrt(self)

    def conj(self):
        return _xnp.conj(self)

    def round(self, decimals=0):
        return self.__round__(decimals or None)

    def copy(self):
        """A tensor with its own buffer (on the tape when self is)."""
        if self.requires_grad:
            return _alias(self)  # the identity primitive
        return _wrap(self._value.copy(), self._dtype)

    clone = copy

    # -- autodiff (xops.autodiff) ---------------------------------------------------
    def backward(self, gradient=None, create_graph=False):
        """Accumulate the gradient of this tensor into ``.grad`` of the leaves it was
        computed from (``gradient`` defaults to 1 for one-element tensors)."""
        _tape.backward(self, gradient, create_graph)

    def detach(self):
        """The same value, cut off from the tape (never requires a gradient)."""
        return _wrap(self._value, self._dtype)

    def requires_grad_(self, flag=True):
        _check_grad_dtype(self, flag)
        self.requires_grad = flag
        return self

    # -- interop (xops._interop): DLPack and NumPy's protocols ------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the buffer (no copy; on the CPU read-only for DLPack 1.x consumers;
        CUDA tensors: :mod:`xops.kernels.cuda.interop`)."""
        return _interop.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _interop.dlpack_device(self)  # (kDLCPU, 0) or (kDLCUDA, 0)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy ufuncs on tensors (``np.sin(t)``, ``ndarray + t``) run xops.numpy's
        namesake: a Tensor, on the tape."""
        return _interop.array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on tensors (``np.mean(t)``) run xops.numpy's counterpart."""
        return _interop.array_function(func, types, args, kwargs)

    # -- indexing (xops._numpy_indexing; __getitem__ is installed by xops.ops.operators) --
    def __setitem__(self, key, value):
        """``t[key] = value`` rebinds ``t`` to ``t.at[key].set(value)``: copy-on-write,
        so views, detached copies and other holders of the old buffer never change."""
        _indexing.setitem(self, key, value)

    def index_add_(self, dim, index, source):
        """PyTorch's in-place ``index_add_``: add ``source``'s slices along ``dim`` at
        ``index`` (duplicates accumulate), in this tensor's own buffer where nothing else
        can see it, else by rebinding it (copy-on-write); returns ``self``. See
        :func:`xops.ops.scatter.index_add_`."""
        return _index_add_(self, dim, index, source)

    @property
    def at(self):
        """Functional updates as in JAX: ``t.at[idx].set(v)`` / ``.add`` / ``.multiply``
        / ``.min`` / ``.max`` / ``.get()`` return new tensors (through scatter)."""
        return _indexing.At(self)

    def __reduce__(self):
        # pickles value, element type (narrow and quantized too) and requires_grad; the
        # tape does not travel: an unpickled tensor is a leaf
        # (a CUDA tensor pickles its host copy and unpickles on the CPU)
        return (_unpickle, (_host_value(self), self._dtype, self.requires_grad))


_registry._TENSOR_TYPES.add(Tensor)  # (the device scan reads a Tensor's holder directly)


class _Escapes(threading.local):
    count = 0  # conversions of tensors that require a gradient to NumPy / Python
    watch = None  # a list collecting those tensors while xo.grad / vjp runs f


_escapes = _Escapes()


def _note_escape(t):
    _escapes.count += 1
    if _escapes.watch is not None:
        _escapes.watch.append(t)


def _unpickle(value, dtype, requires_grad=False):
    out = _wrap(np.array(value, copy=True), dtype)
    out.requires_grad = bool(requires_grad)
    return out


def _fresh(t):
    """A new Tensor object holding ``t``'s (immutable) buffer, on the tape when ``t`` is
    (the identity primitive). Methods return it where the value is unchanged, never
    ``t`` itself: ``t[...] = v`` rebinds the object ``t``, and results computed before
    must not change with it."""
    return _alias(t)


def _wrap(value, dtype):
    """Make a Tensor around a holder array without copying or checking (internal)."""
    t = Tensor.__new__(Tensor)
    if type(value) is np.ndarray:
        # (positional: a third of the cost of write=False, a fifth of value.flags's)
        value.setflags(False)
    elif not hasattr(value, "copy_to_host"):  # (a numba device array: kept as it is)
        value = np.asarray(value)  # NumPy ufuncs give scalars for 0-d inputs
        value.setflags(False)
    t._value = value
    t._dtype = dtype
    t.requires_grad = False
    t.grad = None
    t._node = None
    return t


def _host_value(t):
    """``t``'s holder on the host (a copy for a CUDA tensor)."""
    v = t._value
    return v if type(v) is np.ndarray else _host_copy(v, t._dtype.np)


def _default_dtype(value):
    """Element type for host data with no dtype given: NumPy dtypes are kept, Python
    values follow PyTorch/JAX for floats (f32) and PyTorch/NumPy for ints (i64)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return as_dtype(value.dtype)
    arr = _host_array(value)
    k = arr.dtype.kind
    if k == "b":
        return as_dtype("i1")
    if k in "iu":
        return as_dtype("i64")
    if k == "f":
        return as_dtype("f32")
    if k == "c":
        return as_dtype("c64")
    raise SpecError(
        "tensor",
        "",
        f"cannot make a tensor from {_describe(value)}: only "
        f"numbers (bool, int, float, complex) and nested sequences "
        f"of them are tensor data",
    )


def _describe(data):
    text = repr(data)
    return f"{type(data).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _host_array(data, np_dtype=None):
    """``np.asarray(data)`` for user data, with NumPy's errors for ragged or non-numeric
    data turned into one labelled SpecError; integers past 64 bits are refused (NumPy
    would make an object array of them)."""
    try:
        arr = np.asarray(data, dtype=np_dtype)
    except OverflowError as e:
        raise SpecError("tensor", "", f"{e}: integers must fit 64 bits") from None
    except (TypeError, ValueError) as e:
        if "inhomogeneous" in str(e) or "sequence" in str(e):
            raise SpecError(
                "tensor",
                "",
                f"ragged nested sequence (the rows must all have "
                f"the same length): {_describe(data)}",
            ) from None
        raise SpecError("tensor", "", f"cannot make a tensor from {_describe(data)}: {e}") from None
    if arr.dtype == object or arr.dtype.kind in "OSUVMm":
        raise SpecError(
            "tensor",
            "",
            f"cannot make a tensor from {_describe(data)}: only "
            f"numbers (bool, int, float, complex) and nested "
            f"sequences of them are tensor data (NumPy sees "
            f"dtype {arr.dtype})",
        )
    return arr


def _from_python(data, dt):
    """Nested Python data as an array. Integers stay exact (NumPy would go through
    float64 past the int64 range) and must fit the element type, as in NumPy 2."""
    if dt.kind in ("si", "ui"):
        try:
            arr = np.array(data, dtype=np.uint64 if dt.kind == "ui" else np.int64)
        except OverflowError as e:
            raise SpecError(
                "tensor", "", f"{e} for element type {dt.name} [{dt.min}, {dt.max}]"
            ) from None
        except (TypeError, ValueError):
            arr = _host_array(data)
        else:
            if arr.size and dt.bits < 64 and (int(arr.min()) < dt.min or int(arr.max()) > dt.max):
                raise SpecError(
                    "tensor",
                    "",
                    f"values in [{int(arr.min())}, {int(arr.max())}] do "
                    f"not fit element type {dt.name} [{dt.min}, {dt.max}]",
                )
            return arr
    else:
        arr = _host_array(data)
    return arr


def _cast(arr, dt):
    """A new C-contiguous holder array of element type ``dt`` from any NumPy array:
    floats round correctly to narrow floats; integers wrap like NumPy's astype."""
    from .dtypes import from_compute, int_to_float

    if arr.dtype == dt.np:
        # never alias user memory (tensors are immutable values); a large copy lands in a
        # pooled, 64-byte aligned buffer as op results do (NumPy's large arrays start 16
        # bytes into a page: AVX-512 loads then straddle two cache lines)
        out = _pool.empty(arr.shape, arr.dtype)
        np.copyto(out, arr)
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
            raise SpecError(
                "tensor", "", f"cannot hold {arr.dtype} data as {dt.name}: {e}"
            ) from None
    if not out.flags.c_contiguous or out is arr:
        out = out.copy()  # (np.ascontiguousarray would turn 0-d into 1-d)
    return out


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new Tensor from a Tensor, NumPy array, nested sequence or scalar.

    ``dtype`` is any name :func:`xops.dtypes.as_dtype` accepts. Without it NumPy arrays
    keep their dtype, Python floats become f32, ints i64, bools i1, complex c64.
    Python integers must fit the element type (as in NumPy 2); NumPy arrays convert
    like ``astype`` (floats round to nearest even, correctly for narrow floats;
    integers wrap). Use ``xo.convert`` for the spec's float -> int saturation.
    ``device``: ``"cpu"``, ``"cuda"`` or a Device (default: the CPU, or the device of
    ``with xo.default_device(...)``); a Tensor given with no device stays where it is.

    >>> xo.tensor([[1, 2], [3, 4]], dtype="bf16")
    xo.tensor([[1, 2],
               [3, 4]], bf16[2,2])
    """
    if isinstance(data, Tensor):
        dt = data._dtype if dtype is None else as_dtype(dtype, "tensor")
        if dt.kind == "quant" or data._dtype.kind == "quant":
            out = _quantized_literal(data, dt)
        elif data.requires_grad and not requires_grad and _recording():
            out = _on_tape(data, dt)  # xo.tensor(x) inside a transform keeps the graph
        else:
            if dt is not data._dtype and type(data._value) is not np.ndarray:
                raise SpecError(
                    "tensor",
                    "",
                    f"cannot convert a tensor on {data.device} to "
                    f"{dt.name} here: use xo.convert(x, "
                    f"{dt.name!r}) (on the device) or copy it "
                    f"to the host with x.to('cpu') first",
                )
            out = _wrap(data._value if dt is data._dtype else _cast(data._value, dt), dt)
    elif dtype is not None and as_dtype(dtype, "tensor").kind == "quant":
        out = _quantized_literal(data, as_dtype(dtype, "tensor"))
    else:
        mark = _escapes.count
        if isinstance(data, (list, tuple)) and _holds_quantized(data):
            raise SpecError(
                "tensor",
                "",
                "cannot stack quantized tensors with tensor() "
                "(their storage integers would lose the quantized "
                "type): use xo.concatenate, or give the storage "
                "values with dtype=<the quantized type>",
            )
        dt = as_dtype(dtype, "tensor") if dtype is not None else _default_dtype(data)
        if isinstance(data, (np.ndarray, np.generic)):
            arr = _cast(np.asarray(data), dt)
        else:
            arr = _cast(_from_python(data, dt), dt)
        out = _wrap(arr, dt)
        if (
            _escapes.count != mark
            and not requires_grad
            and isinstance(data, (list, tuple))
            and _recording()
        ):
            out = _from_tensors(data, dt)  # tensors that require a gradient inside
    if device is not None or _dev._default.device is not _dev.cpu and not isinstance(data, Tensor):
        target = (
            _dev.as_device(device, "tensor") if device is not None else _dev.get_default_device()
        )
        if target != out.device:
            out = _dev.move(out, target, "tensor")
    if requires_grad:
        _check_grad_dtype(out, True)
        out.requires_grad = True
    return out


def _holds_quantized(data):
    """Whether nested lists hold a quantized Tensor (a row of numbers ends the search
    at its first entry, so plain numeric data costs one check per row)."""
    for v in data:
        if isinstance(v, Tensor):
            if v._dtype.quantized:
                return True
        elif isinstance(v, (list, tuple)):
            if _holds_quantized(v):
                return True
        else:
            return False
    return False


def _recording():
    return _tape.is_grad_enabled()


def _on_tape(t, dt):
    """``t`` as element type ``dt``, recorded (a new Tensor object in either case)."""
    return _op.reshape(t, t.shape) if dt is t._dtype else _op.convert(t, dt)


def _from_tensors(data, dt):
    """``tensor(data)`` for nested lists holding tensors that require a gradient: built
    with reshape + concatenate (and convert), so the result stays on the tape."""
    concatenate, reshape = _op.concatenate, _op.reshape

    def build(x):
        if isinstance(x, Tensor):
            if x._dtype.quantized:
                raise SpecError(
                    "tensor",
                    "",
                    f"cannot stack quantized {x.type} with tensor(); use xo.concatenate",
                )
            return _on_tape(x, dt) if x.requires_grad else tensor(x, dt)
        if (
            isinstance(x, (list, tuple))
            and len(x)
            and any(isinstance(v, (Tensor, list, tuple)) for v in x)
        ):
            parts = [build(v) for v in x]
            if len({p.shape for p in parts}) > 1:
                raise TypeError(
                    f"cannot make a tensor from ragged data: parts of shapes "
                    f"{[p.shape for p in parts]}"
                )
            return concatenate([reshape(p, (1,) + p.shape) for p in parts], 0)
        return tensor(x, dt)

    watch = _escapes.watch
    if watch is not None:  # these conversions were ours, not the user's
        inside = {id(t) for t in _leaves(data)}
        watch[:] = [t for t in watch if id(t) not in inside]
    return build(data)


def _leaves(x):
    """The Tensors in a (nested) tuple/list, in order."""
    if isinstance(x, Tensor):
        return [x]
    out = []
    if isinstance(x, (list, tuple)):
        _collect(x, out)
    return out


def _collect(seq, out):
    """Append the Tensors in sequence ``seq`` (at any depth) to ``out``, in order."""
    for v in seq:
        if type(v) is int:  # (attribute lists: shapes, dims, padding pairs)
            continue
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)) and v:
            _collect(v, out)


def _integer_data(data):
    """Host data of integers: NumPy's integer kinds and ml_dtypes' int2/int4/uint2/uint4
    arrays (whose NumPy kind is 'V'), i.e. any holder of a spec integer type."""
    npd = np.asarray(data).dtype
    if npd.kind in "iu":
        return True
    try:
        return as_dtype(npd).kind in ("si", "ui")
    except TypeError:
        return False


def _quantized_literal(data, qt):
    """A tensor of quantized type ``qt`` from its *storage* values (as the spec's
    quantized literals are written); values must be storage-type values."""
    if isinstance(data, Tensor):
        if data._dtype == qt:
            return _wrap(data._value, data._dtype)
        if data._dtype.kind == "quant" or qt.kind != "quant":
            raise SpecError(
                "tensor",
                "",
                f"cannot change {data._dtype.name} into {qt.name} "
                f"with tensor(): use xo.uniform_quantize / "
                f"xo.uniform_dequantize / xo.bitcast_convert",
            )
    if not isinstance(data, Tensor) and not _integer_data(data):
        raise SpecError(
            "tensor",
            "C1",
            f"a quantized literal holds integers of the storage "
            f"type {qt.storage_type.name} (the spec's "
            f"has_syntax), got {np.asarray(data).dtype} data; "
            f"use xo.uniform_quantize for real values",
        )
    storage = tensor(data, qt.storage_type)
    qt.check_shape("tensor", storage.shape)
    return _wrap(storage._value, qt)


def _check_grad_dtype(t, flag):
    if flag and t._dtype.kind not in ("float", "complex"):
        raise SpecError(
            "tensor",
            "",
            f"only floating-point and complex tensors can require gradients, got {t.type}",
        )


# The operators are attached by xops.ops.operators (imported by xops/__init__).


def _axis_arg(axis, dim):
    """``axis=`` (NumPy) or ``dim=`` (PyTorch); lists become tuples."""
    if dim is not None:
        axis = dim
    return tuple(axis) if isinstance(axis, list) else axis


# The layers above this one that Tensor's methods reach. This module imports none of them
# (they are built on it); xops/__init__ binds them once they are loaded.
_xnp = None  # xops.numpy: the methods (reshape, sum, astype, ...)
_tape = None  # xops.autodiff.tape: backward, grad mode, Tensor(t) of a tensor on the tape
_interop = None  # xops._interop: DLPack, __array_ufunc__, __array_function__
_indexing = None  # xops._numpy_indexing: t[key] = v, t.at
_alias = None  # xops.autodiff.local.alias, the identity primitive: copy, _fresh
_index_add_ = None  # xops.ops.scatter.index_add_: Tensor.index_add_
