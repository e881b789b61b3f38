"""Interop with NumPy, PyTorch and every other DLPack / NumPy-protocol library.

**DLPack.** ``Tensor.__dlpack__`` exports the tensor's buffer without a copy, so
``np.from_dlpack(t)`` and ``torch.from_dlpack(t)`` share memory with ``t``. Consumers
that speak DLPack 1.x (NumPy >= 2.1, PyTorch >= 2.4: they pass ``max_version``) get the
buffer flagged read-only; older consumers get it without the flag (DLPack 0.x cannot
say read-only). Tensors are immutable values: writing through a foreign view is
undefined behaviour (other tensors may share the buffer). Element types: every type
NumPy exports (bool, integers, f16/f32/f64, complex) plus bf16 and the f8 family
(DLPack 1.1's type codes, which PyTorch uses); i2/i4/ui2/ui4, f4/f6 and quantized types
have no DLPack form (BufferError). :func:`from_dlpack` imports the same set from any
producer (NumPy arrays, PyTorch tensors incl. bf16 / f8); it shares memory unless
``copy=True`` — the tensor then sees later writes *by the producer*, so copy if the
producer's buffer will change. CUDA tensors and CUDA producers (device ``kDLCUDA``, or
objects with only ``__cuda_array_interface__``) go through
:mod:`xops.kernels.cuda.interop`; ``device=`` moves the result explicitly.

**NumPy functions on tensors.** ``np.sin(t)``, ``np.add(t, 1)``, ``np.maximum(t, u)``
and ``ndarray + t`` run the ufunc's namesake in :mod:`xops.numpy` (``__array_ufunc__``):
the result is a Tensor, recorded on the tape. ``np.add.reduce`` / ``accumulate`` map to
sum / prod / max / min / all / any and cumulative_sum / cumulative_prod. ``np.mean``,
``np.concatenate``, ``np.where``, ``np.stack``, ``np.sum``, ``np.reshape``,
``np.transpose`` and the other functions that :mod:`xops.numpy` has a counterpart of run
that counterpart (``__array_function__``), with NumPy's parameter names mapped (``a`` ->
``x``, ``ddof`` -> ``correction``, ``a_min`` -> ``min``, ...). Functions that only inspect
values (``np.allclose``, ``np.array_equal``, ``np.shape``, ``np.isclose``, saving, printing)
run in NumPy on the values. Anything else — an unsupported ufunc, method or parameter,
``out=`` into a tensor — is a TypeError that points to ``xops.numpy``: nothing falls
into NumPy silently and drops the graph. ``np.asarray(t)`` (``__array__``) still gives a
read-only NumPy view of the value.
"""

import inspect
import sys

import numpy as np

from .dtypes import as_dtype
from ._dlpack import CODE_NAMES as _CODE_NAMES, CPU as _CPU, CUDA as _CUDA
from ._dlpack import CUDA_MANAGED as _CUDA_MANAGED, NARROW_CODES as _NARROW_CODES
from ._dlpack import UINT as _UINT_CODE, UINT_OF as _UINT, dl_tensor as _dl_tensor
from ._dlpack import export_code as _export_code
from .device import as_device as _as_device, move as _move
from .tensor import Tensor, _wrap

__all__ = ["array_function", "array_ufunc", "dlpack", "dlpack_device", "from_dlpack"]


# ---------------------------------------------------------------------------------------
# DLPack
# ---------------------------------------------------------------------------------------


class _WritableAlias:
    """A writable NumPy alias of a read-only buffer, for DLPack 0.x consumers (which
    cannot be told that it is read-only); holds the buffer's array alive."""

    def __init__(self, arr):
        self._keep = arr
        self.__array_interface__ = {
            "data": (arr.ctypes.data, False),
            "shape": arr.shape,
            "strides": arr.strides,
            "typestr": arr.dtype.str,
            "version": 3,
        }


def dlpack(t, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: see the module docstring."""
    if type(t._value) is not np.ndarray:
        return _cuda().dlpack(t, stream, max_version, dl_device, copy)
    dt = t._dtype
    if stream is not None and stream != -1:
        raise BufferError(
            f"__dlpack__: {t.type} lives on the CPU, which has no streams; got stream={stream!r}"
        )
    if dl_device is not None and tuple(dl_device)[:1] != (_CPU,):
        raise BufferError(
            f"__dlpack__: {t.type} lives on the CPU (kDLCPU = 1), cannot "
            f"export to device {dl_device!r}; move it with t.to(device) first"
        )
    _export_code(dt, t.type)  # a BufferError for the types DLPack has not
    code = _NARROW_CODES.get(dt.name)
    arr = t._value
    if code is not None:
        arr = arr.view(_UINT[dt.itemsize])
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    if not versioned and not arr.flags.writeable and not copy:
        arr = np.asarray(_WritableAlias(arr))
    kwargs = {"copy": copy} if copy is not None else {}
    if versioned:
        kwargs["max_version"] = tuple(max_version)
    capsule = arr.__dlpack__(**kwargs)
    if code is not None:  # relabel the unsigned view with the narrow float's type code
        _dl_tensor(capsule).dtype.code = code
    return capsule


def dlpack_device(t):
    return (_CPU, 0) if type(t._value) is np.ndarray else (_CUDA, 0)


def cuda_array_interface(t):
    """``Tensor.__cuda_array_interface__`` of a CUDA tensor (see
    :mod:`xops.kernels.cuda.interop`)."""
    return _cuda().cuda_array_interface(t)


def _cuda():
    from .kernels.cuda import interop

    return interop


class _Relabelled:
    """A DLPack producer shim: hands NumPy a capsule whose narrow-float type code was
    relabelled as unsigned integers of the same width."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise BufferError("from_dlpack: capsule already consumed")
        return capsule

    def __dlpack_device__(self):
        return self._device


def from_dlpack(x, /, *, device=None, copy=None):
    """A Tensor from any object with ``__dlpack__`` (NumPy arrays, PyTorch tensors, JAX
    arrays, ...), sharing its memory unless ``copy=True`` (see the module docstring).

    >>> xnp.from_dlpack(torch.arange(3.0))   # f32[3], the same memory  # doctest: +SKIP
    """
    target = None if device is None else _as_device(device, "from_dlpack")
    out = _import(x, copy)
    if target is not None and target != out.device:
        if copy is False:
            raise BufferError(
                f"from_dlpack: copy=False, but the data lives on {out.device}, not on "
                f"the requested device {target}"
            )
        out = _move(out, target, "from_dlpack")
    return out


def _import(x, copy):
    """from_dlpack on the producer's own device."""
    if isinstance(x, Tensor):
        if not copy:
            return _wrap(x._value, x._dtype)
        if type(x._value) is np.ndarray:
            return _wrap(np.array(x._value, copy=True), x._dtype)
        return _cuda().copy_tensor(x)
    if not hasattr(x, "__dlpack__"):
        if hasattr(x, "__cuda_array_interface__"):  # numba device arrays, ...
            return _cuda().from_cuda_array_interface(x, copy)
        raise TypeError(
            f"from_dlpack: {type(x).__name__} does not implement __dlpack__; use "
            f"xnp.asarray for host data"
        )
    dev = tuple(x.__dlpack_device__()) if hasattr(x, "__dlpack_device__") else (_CPU, 0)
    if dev[0] in (_CUDA, _CUDA_MANAGED):
        return _cuda().from_dlpack(x, dev, copy)
    if dev[0] != _CPU:
        raise BufferError(
            f"from_dlpack: the data lives on DLPack device {dev} (neither the CPU nor "
            f"CUDA); move it to the host first"
        )
    try:
        capsule = x.__dlpack__(max_version=(1, 0))
    except TypeError:  # a DLPack 0.x producer
        capsule = x.__dlpack__()
    dl = _dl_tensor(capsule)
    name = _CODE_NAMES.get(dl.dtype.code) if dl.dtype.lanes == 1 else None
    if name is not None and dl.dtype.bits == 8 * as_dtype(name).itemsize:
        dl.dtype.code = _UINT_CODE  # NumPy takes it as unsigned; viewed back below
        dt = as_dtype(name)
        arr = np.from_dlpack(_Relabelled(capsule, dev)).view(dt.np)
    else:
        arr = np.from_dlpack(_Relabelled(capsule, dev))
        dt = as_dtype(arr.dtype)
    if copy:
        arr = arr.copy()
    elif not arr.flags.c_contiguous:
        if copy is False:
            raise BufferError(
                f"from_dlpack: copy=False, but the data (strides "
                f"{arr.strides}) is not row-major, which xops tensors need"
            )
        arr = np.ascontiguousarray(arr)
    return _wrap(arr.view(), dt)  # our own read-only view object


# ---------------------------------------------------------------------------------------
# __array_ufunc__
# ---------------------------------------------------------------------------------------

_UFUNCS = {  # NumPy ufunc name -> xops.numpy function
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "divide": "divide",
    "true_divide": "divide",
    "floor_divide": "floor_divide",
    "remainder": "remainder",
    "power": "pow",
    "negative": "negative",
    "positive": "positive",
    "absolute": "abs",
    "sign": "sign",
    "sqrt": "sqrt",
    "square": "square",
    "reciprocal": "reciprocal",
    "exp": "exp",
    "expm1": "expm1",
    "log": "log",
    "log1p": "log1p",
    "log2": "log2",
    "log10": "log10",
    "logaddexp": "logaddexp",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arctan2": "atan2",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "rint": "round",
    "conjugate": "conj",
    "maximum": "maximum",
    "minimum": "minimum",
    "hypot": "hypot",
    "fmax": "fmax",
    "fmin": "fmin",
    "fmod": "fmod",
    "deg2rad": "deg2rad",
    "rad2deg": "rad2deg",
    "radians": "deg2rad",
    "degrees": "rad2deg",
    "exp2": "exp2",
    "cbrt": "cbrt",
    "copysign": "copysign",
    "nextafter": "nextafter",
    "signbit": "signbit",
    "isnan": "isnan",
    "isinf": "isinf",
    "isfinite": "isfinite",
    "equal": "equal",
    "not_equal": "not_equal",
    "less": "less",
    "less_equal": "less_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
    "logical_not": "logical_not",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
    "matmul": "matmul",
}
_REDUCE = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}
_ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
_IGNORED = {"casting": "same_kind", "order": "K", "subok": True}


def _xnp():
    # xops.numpy, which sits above this module: the namespace xops/__init__ binds for the
    # Tensor methods (the module xops.tensor; the package's `tensor` is the function)
    return sys.modules[Tensor.__module__]._xnp


def _known(types):
    return all(
        issubclass(t, (Tensor, np.ndarray, np.generic)) or t in (int, float, complex, bool)
        for t in types
    )


def _to_xnp(v):
    """NumPy arrays among a call's arguments become tensors (lists too)."""
    if isinstance(v, np.ndarray):
        return _xnp().asarray(v)
    if isinstance(v, (list, tuple)) and any(isinstance(e, (Tensor, np.ndarray)) for e in v):
        return type(v)(_to_xnp(e) for e in v)
    return v


def _unsupported(what, hint=""):
    return TypeError(
        f"{what} is not supported on xops tensors (it would leave the tape): "
        f"use the xops.numpy function (import xops.numpy as xnp){hint}, or "
        f"np.asarray(t) to work on a NumPy copy of the values"
    )


def array_ufunc(ufunc, method, *inputs, **kwargs):
    """``Tensor.__array_ufunc__``: see the module docstring."""
    if not _known(type(v) for v in inputs if not isinstance(v, (list, tuple))):
        return NotImplemented
    name = ufunc.__name__
    xnp = _xnp()
    inputs = [xnp.asarray(v) if isinstance(v, (list, tuple)) else v for v in inputs]
    out = kwargs.pop("out", None)
    for k, default in _IGNORED.items():
        if k in kwargs and kwargs.pop(k) != default:
            raise _unsupported(f"np.{name}(..., {k}=...)")
    where = kwargs.pop("where", True)
    if where is not True:
        raise _unsupported(f"np.{name}(..., where=...)", " with xnp.where")
    dtype = kwargs.pop("dtype", None)
    if kwargs.pop("signature", None) is not None or kwargs.pop("sig", None) is not None:
        raise _unsupported(f"np.{name}(..., signature=...)")
    args = [_to_xnp(v) for v in inputs]
    if dtype is not None:
        args = [xnp.astype(a, as_dtype(dtype)) if isinstance(a, Tensor) else a for a in args]
    if method == "__call__":
        fn = getattr(xnp, _UFUNCS.get(name, "-"), None)
        if fn is None or kwargs:
            raise _unsupported(f"np.{name}" + (f"(..., {', '.join(kwargs)}=...)" if kwargs else ""))
        result = fn(*args)
    elif method in ("reduce", "accumulate"):
        table = _REDUCE if method == "reduce" else _ACCUMULATE
        fn = getattr(xnp, table.get(name, "-"), None)
        if fn is None or len(args) != 1:
            raise _unsupported(f"np.{name}.{method}")
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs.pop("initial", np._NoValue) is not np._NoValue or kwargs:
            raise _unsupported(f"np.{name}.{method}(..., {', '.join(kwargs) or 'initial'}=...)")
        x = args[0]
        if not isinstance(x, Tensor):
            x = xnp.asarray(x)
        if method == "reduce":
            result = (
                fn(x, axis=axis, keepdims=keepdims)
                if not isinstance(axis, list)
                else fn(x, axis=tuple(axis), keepdims=keepdims)
            )
        else:
            result = fn(x, axis=axis)
    else:
        raise _unsupported(f"np.{name}.{method}")
    if out is None:
        return result
    return _write_out(name, out, result, inputs)


def _write_out(name, out, result, inputs):
    """``out=``: NumPy arrays receive the values (``ndarray += t``); a tensor cannot."""
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    if any(isinstance(o, Tensor) for o in outs):
        raise TypeError(
            f"np.{name}(..., out=tensor): xops tensors are immutable values; "
            f"use the result (t = np.{name}(...)) or t[...] = value"
        )
    if any(isinstance(v, Tensor) and v.requires_grad for v in inputs):
        raise _unsupported(f"np.{name}(..., out=ndarray) on a tensor that requires a gradient")
    for o, r in zip(outs, results):
        np.copyto(o, np.asarray(r), casting="same_kind")
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------------------------
# __array_function__
# ---------------------------------------------------------------------------------------

# NumPy functions that only read values (results are not arrays of the data, or have no
# gradient anyway): run in NumPy on the values
_INSPECT = {
    "allclose",
    "array_equal",
    "array_equiv",
    "isclose",
    "shape",
    "ndim",
    "size",
    "iscomplexobj",
    "isrealobj",
    "result_type",
    "may_share_memory",
    "shares_memory",
    "array_repr",
    "array_str",
    "array2string",
    "save",
    "savez",
    "savez_compressed",
    "savetxt",
    "copyto",
    "min_scalar_type",
    "can_cast",
    "isreal",
    "iscomplex",
    "count_nonzero",
    "argwhere",
    "flatnonzero",
    "histogram",
    "bincount",
    "digitize",
    "unravel_index",
    "ravel_multi_index",
}

_NAMES = {  # numpy function -> xops.numpy function, where the names differ
    "concatenate": "concat",
    "amax": "max",
    "amin": "min",
    "around": "round",
    "cumsum": "cumulative_sum",
    "cumprod": "cumulative_prod",
    "transpose": "permute_dims",
    "abs": "abs",
    "absolute": "abs",
    "power": "pow",
    "conjugate": "conj",
    "invert": "bitwise_invert",
}
_PARAMS = {  # NumPy parameter name -> xops.numpy parameter name
    "a": "x",
    "arr": "x",
    "ary": "x",
    "m": "x",
    "array": "x",
    "tup": "arrays",
    "newshape": "shape",
    "a_min": "min",
    "a_max": "max",
    "ddof": "correction",
    "reps": "repetitions",
    "ind": "indices",
    "v": "x2",
    "b": "x2",
    "x": "x1",
    "y": "x2",
    "ar": "x",
}


def _bind(func, args, kwargs):
    """The explicitly passed arguments of a NumPy call, by NumPy parameter name."""
    try:
        sig = inspect.signature(func)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None, None
    return sig, dict(bound.arguments)


def _special(name, given, xnp):
    """NumPy spellings with no one-to-one xops.numpy counterpart, as calls."""
    x = given.get("a")
    if name == "transpose":
        axes = given.get("axes")
        x = _to_xnp(x)
        return xnp.permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else axes)
    if name in ("cumsum", "cumprod") and given.get("axis") is None:
        x = _to_xnp(x)
        fn = xnp.cumulative_sum if name == "cumsum" else xnp.cumulative_prod
        return fn(xnp.reshape(x, (-1,)), dtype=given.get("dtype"))
    if name == "squeeze" and given.get("axis") is None:
        x = _to_xnp(x)
        return xnp.squeeze(x, tuple(d for d, n in enumerate(x.shape) if n == 1))
    if name == "ravel":
        return xnp.reshape(_to_xnp(x), (-1,))
    if name == "copy":
        return xnp.asarray(_to_xnp(x), copy=True)
    if name == "where" and "x" not in given and "y" not in given:
        return xnp.nonzero(_to_xnp(given["condition"]))
    if name in ("round", "around") and given.get("decimals", 0) != 0:
        raise _unsupported(
            f"np.{name}(..., decimals={given['decimals']})", " (scale, xnp.round, unscale)"
        )
    if name == "norm" and "x" in given:  # np.linalg.norm
        x, ordv, axis = _to_xnp(given["x"]), given.get("ord"), given.get("axis")
        keep = bool(given.get("keepdims", False))
        if axis is None and ordv is None:
            out = xnp.linalg.vector_norm(xnp.reshape(x, (-1,)))
            return xnp.reshape(out, (1,) * x.ndim) if keep else out
        if isinstance(axis, int) or (axis is None and x.ndim == 1):
            return xnp.linalg.vector_norm(
                x, axis=axis, keepdims=keep, ord=2 if ordv is None else ordv
            )
        return (
            xnp.linalg.matrix_norm(x, keepdims=keep, ord="fro" if ordv is None else ordv)
            if axis in (None, (-2, -1)) and x.ndim >= 2
            else None
        )
    if name == "dot":
        a, b = _to_xnp(given["a"]), _to_xnp(given["b"])
        if getattr(a, "ndim", 0) == 0 or getattr(b, "ndim", 0) == 0:
            return xnp.multiply(a, b)
        if a.ndim <= 2 and b.ndim <= 2:
            return xnp.matmul(a, b)
    return None


def array_function(func, types, args, kwargs):
    """``Tensor.__array_function__``: see the module docstring."""
    if not _known(types):
        return NotImplemented
    name = func.__name__
    module = func.__module__ or "numpy"
    if name in _INSPECT and module.startswith("numpy"):
        return func(*_host(args), **_host(kwargs))
    xnp = _xnp()
    space = xnp
    sub = module.split(".")[1] if module.startswith("numpy.") else ""
    if sub in ("linalg", "fft"):
        space = getattr(xnp, sub)
    elif sub and sub not in ("_core", "core", "lib", "fromnumeric", "_core.fromnumeric"):
        space = None if not sub.startswith(("_core", "core", "lib")) else xnp
    sig, given = _bind(func, args, kwargs)
    label = f"np.{sub + '.' if space is not xnp and space is not None else ''}{name}"
    if given is None or space is None:
        raise _unsupported(label)
    if space is xnp or name == "norm":
        special = _special(name, given, xnp)
        if special is not None:
            return special
    fn = getattr(space, _NAMES.get(name, name), None)
    if fn is None or not callable(fn):
        raise _unsupported(label)
    return _call(fn, label, sig, given)


def _host(v):
    if isinstance(v, Tensor):
        return np.asarray(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_host(e) for e in v)
    if isinstance(v, dict):
        return {k: _host(e) for k, e in v.items()}
    return v


def _is_default(param, value):
    if value is None or value is np._NoValue:
        return True
    d = param.default if param is not None else inspect.Parameter.empty
    return (
        d is not inspect.Parameter.empty
        and d is not np._NoValue
        and type(d) is type(value)
        and d == value
    )


def _call(fn, label, sig, given):
    """Call xops.numpy ``fn`` with a NumPy call's arguments, renamed."""
    try:
        target = inspect.signature(fn)
    except (TypeError, ValueError):
        raise _unsupported(label) from None
    params = list(target.parameters.values())
    names = {p.name for p in params}
    values = {}
    var = None
    for npname, value in given.items():
        p = sig.parameters[npname]
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            var = [_to_xnp(v) for v in value]
            continue
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            for k, v in value.items():
                if not _is_default(None, v):
                    raise _unsupported(f"{label}(..., {k}=...)")
            continue
        xname = npname if npname in names else _PARAMS.get(npname)
        if npname == "a" and "x" not in names and "x1" in names:
            xname = "x1"
        if npname == "kind" and "stable" in names:
            continue  # xops.numpy sorts are stable
        if xname is None or xname not in names or xname in values:
            if _is_default(p, value):
                continue
            raise _unsupported(
                f"{label}(..., {npname}=...)", f" ({fn.__name__} takes {', '.join(sorted(names))})"
            )
        values[xname] = _to_xnp(value)
    pos, kw, missing = [], {}, object()
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            pos.extend(var or [])
        elif p.name in values:
            if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                pos.append(values.pop(p.name))
            else:
                kw[p.name] = values.pop(p.name)
        elif p.kind is inspect.Parameter.POSITIONAL_ONLY:
            if p.default is inspect.Parameter.empty:
                raise _unsupported(f"{label} without its argument {p.name!r}")
            pos.append(missing)  # a default, unless a later positional follows
    while pos and pos[-1] is missing:
        pos.pop()
    pos = [params[i].default if v is missing else v for i, v in enumerate(pos)]
    return fn(*pos, **kw)
