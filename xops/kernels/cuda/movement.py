"""CUDA kernels of the data-movement ops, by index maps.

Each kernel function runs the CPU op itself on *index tensors* (si64 tensors holding each
operand element's flat position, with -1 standing for padding), so every spec check and
every attribute rule is the CPU op's own, and the CPU result is the op's index map: a
gather ``out[i] = src[map[i]]`` on the device moves the data (bit-exact: raw element
bits). Only positions travel host -> device, never tensor data. Covers broadcast_in_dim,
broadcast, transpose, reshape, collapse, slice, reverse, pad, concatenate,
dynamic_slice and dynamic_update_slice (their start indices are read on the host: a
device start index is copied, a few bytes). (iota takes no tensor operand, so the seam
always runs it on the CPU; move its result with ``.to("cuda")``.)
"""

import numpy as np

from ...dtypes import as_dtype
from ...errors import SpecError
from ...registry import get as _get_op
from ...tensor import _wrap
from numba import cuda

from ._storage import device_empty, flat, from_holder, launch_1d, storage_dtype

__all__ = ["KERNELS"]

_I64 = as_dtype("i64")


def _gather(src, idx, fill, use_fill, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        j = idx[i]
        if j >= 0:
            out[i] = src[j]
        elif use_fill:
            out[i] = fill[0]


def _gather2(a, b, idx, out):  # idx >= 0: from a; idx < 0: from b at -1 - idx
    i = cuda.grid(1)
    if i < out.shape[0]:
        j = idx[i]
        if j >= 0:
            out[i] = a[j]
        else:
            out[i] = b[-1 - j]


_compiled = {}


def _k(fn):
    k = _compiled.get(fn)
    if k is None:
        k = _compiled[fn] = cuda.jit(fn)
    return k


def _positions(t, offset=0):
    """An si64 CPU tensor of ``t``'s shape holding flat positions (+ offset)."""
    return _wrap(np.arange(offset, offset + t.size, dtype=np.int64).reshape(t.shape), _I64)


def _is_cuda(t):
    return hasattr(getattr(t, "_value", None), "copy_to_host")


def _cpu_op(name):
    return _get_op(name).kernels["cpu"]


def _host_scalars(x):
    """Start indices on the host (a CUDA tensor is copied: a few bytes)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_host_scalars(v) for v in x)
    return x.to("cpu") if _is_cuda(x) else x


def _launch(src, idx_host, dt, shape, fill=None):
    out = device_empty(shape, dt.np)
    n = idx_host.size
    if n:
        idx = cuda.to_device(np.ascontiguousarray(idx_host.reshape(-1)))
        f = fill if fill is not None else flat(src)
        launch_1d(_k(_gather), n, flat(src), idx, f, int(fill is not None), flat(out))
    return from_holder(out, dt)


def _unary_movement(name):
    def kernel(operand, *args, **kwargs):
        if not _is_cuda(operand):
            raise SpecError(name, "device", "operand must be a tensor on the device")
        m = _cpu_op(name)(_positions(operand), *args, **kwargs)
        return _launch(operand._value, np.asarray(m._value), operand._dtype, m.shape)

    kernel.__name__ = f"{name}_cuda"
    return kernel


def pad(operand, padding_value, edge_padding_low, edge_padding_high, interior_padding):
    from ...ops._core import operands

    x, p = operands("pad", operand, padding_value, names=["operand", "padding_value"])
    if x._dtype is not p._dtype or p.ndim != 0:  # the CPU op words the error
        _cpu_op("pad")(
            _positions(x),
            p.to("cpu") if _is_cuda(p) else p,
            edge_padding_low,
            edge_padding_high,
            interior_padding,
        )
    m = _cpu_op("pad")(_positions(x), -1, edge_padding_low, edge_padding_high, interior_padding)
    fill = (
        p._value
        if _is_cuda(p)
        else cuda.to_device(np.asarray(p._value).reshape(1).view(storage_dtype(p._dtype.np)))
    )
    return _launch(x._value, np.asarray(m._value), x._dtype, m.shape, flat(fill))


def concatenate(inputs, dimension):
    from ...ops._core import operands

    xs = operands("concatenate", *inputs) if isinstance(inputs, (list, tuple)) else None
    if xs is None:
        return _cpu_op("concatenate")(inputs, dimension)  # the CPU op words the error
    offsets, pos = [], 0
    for x in xs:
        offsets.append(pos)
        pos += x.size
    stand = [_positions(x, o) for x, o in zip(xs, offsets)]
    if any(x._dtype is not xs[0]._dtype for x in xs):  # the CPU op words the error
        _cpu_op("concatenate")([_stand_in(y) for y in xs], dimension)
    m = _cpu_op("concatenate")(stand, dimension)
    dt = xs[0]._dtype
    src = device_empty((max(pos, 1),), dt.np)
    for x, o in zip(xs, offsets):  # the inputs back to back, then one gather
        if x.size:
            src[o : o + x.size] = flat(x._value)
    return _launch(src, np.asarray(m._value), dt, m.shape)


def _stand_in(t):
    one = np.zeros(1, t._dtype.np)
    v = np.lib.stride_tricks.as_strided(one, t.shape, (0,) * t.ndim) if t.ndim else one.reshape(())
    return _wrap(v, t._dtype)


def dynamic_update_slice(operand, update, start_indices):
    from ...ops._core import operands

    x, u = operands("dynamic_update_slice", operand, update, names=["operand", "update"])
    if x._dtype is not u._dtype:
        _cpu_op("dynamic_update_slice")(_stand_in(x), _stand_in(u), _host_scalars(start_indices))
    m = _cpu_op("dynamic_update_slice")(
        _positions(x), _neg_positions(u), _host_scalars(start_indices)
    )
    out = device_empty(x.shape, x._dtype.np)
    if x.size:
        idx = cuda.to_device(np.ascontiguousarray(np.asarray(m._value).reshape(-1)))
        launch_1d(
            _k(_gather2),
            x.size,
            flat(x._value),
            flat(u._value) if u.size else flat(x._value),
            idx,
            flat(out),
        )
    return from_holder(out, x._dtype)


def _neg_positions(t):
    return _wrap(-1 - np.arange(t.size, dtype=np.int64).reshape(t.shape), _I64)


def dynamic_slice(operand, start_indices, slice_sizes):
    m = _cpu_op("dynamic_slice")(_positions(operand), _host_scalars(start_indices), slice_sizes)
    return _launch(operand._value, np.asarray(m._value), operand._dtype, m.shape)


KERNELS = {
    name: _unary_movement(name)
    for name in (
        "broadcast_in_dim",
        "broadcast",
        "transpose",
        "reshape",
        "collapse",
        "slice",
        "reverse",
    )
}
KERNELS.update(
    pad=pad,
    concatenate=concatenate,
    dynamic_slice=dynamic_slice,
    dynamic_update_slice=dynamic_update_slice,
)
