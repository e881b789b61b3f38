"""CUDA kernels of the data-movement ops: strided copies with positions computed in the
kernel from small shape/stride tuples (kernel arguments, passed by value: no index
arrays, no host-to-device copy besides the launch).

broadcast_in_dim, broadcast, transpose, reshape, collapse, slice, reverse and
dynamic_slice return views on the CPU. Their kernels run the CPU op itself on a *layout
probe*: a read-only NumPy array with the operand's shape and row-major strides counted
in elements (one-byte items) over a one-byte buffer. The op's checks and attribute rules
are then the CPU's own, it never reads the buffer (a view op only computes strides), and
the view it returns gives the result's shape, strides and offset in elements. A result
that is contiguous is a view of the operand's device array (no copy, no launch); any
other is one strided-copy launch. pad, concatenate and dynamic_update_slice allocate on
the CPU, so their checks are factored out of the CPU ops (``pad_checks``,
``concatenate_checks``, ``dynamic_update_slice_checks``) and read only types and
shapes. Data moves as raw bits (unsigned words of the element size), bit-exact for every
type. Start indices of the dynamic ops are read on the host (a CUDA start index is
copied: a few bytes). (iota takes no tensor operand, so the seam always runs it on the
CPU; move its result with ``.to("cuda")``.)
"""

import numpy as np
from numba import cuda

from ...autodiff import local as _local  # noqa: F401  (declares the alias op, kernel below)
from ...autodiff.tape import _mode as _tape_mode, keep
from ...errors import SpecError
from ...ops._convolution_attrs import _frozen  # (the attribute-key helper of validated calls)
from ...ops._core import operands
from ...ops.movement import concatenate_checks
from ...ops.slicing import _clamped, dynamic_update_slice_checks, pad_checks
from ...registry import get as _get_op
from ...tensor import _wrap

from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d, shaped
from .elementwise import _dev, _stand_in

__all__ = ["KERNELS", "c_strides", "copy_into", "strided_copy", "fill"]

# element size -> the type moved (c128: as itself, a 16-byte load and store of its bits)
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}


def _copy(src, soff, sst, dst, doff, dstr, shape):
    """dst[doff + i . dstr] = src[soff + i . sst] for every index i of ``shape`` (one
    thread per element, i from the thread's row-major position)."""
    e = cuda.grid(1)
    n = 1
    for d in range(len(shape)):
        n *= shape[d]
    if e < n:
        s = soff
        t = doff
        rem = e
        for d in range(len(shape) - 1, -1, -1):
            q = rem // shape[d]
            i = rem - q * shape[d]
            s += i * sst[d]
            t += i * dstr[d]
            rem = q
        dst[t] = src[s]


def _pad(src, val, dst, shape, lo, step, ishape):
    """dst (row-major ``shape``) = pad of src (row-major ``ishape``): dst index o along
    dim d reads src index (o - lo[d]) / step[d] when that divides and is in range, else
    val[0]."""
    e = cuda.grid(1)
    if e < dst.shape[0]:
        s = 0
        stride = 1
        inside = True
        rem = e
        for d in range(len(shape) - 1, -1, -1):
            q = rem // shape[d]
            j = rem - q * shape[d] - lo[d]
            rem = q
            k = j // step[d]
            if j < 0 or k * step[d] != j or k >= ishape[d]:
                inside = False
            s += k * stride
            stride *= ishape[d]
        if inside:
            dst[e] = src[s]
        else:
            dst[e] = val[0]


def _fill(dst, val):
    e = cuda.grid(1)
    if e < dst.shape[0]:
        dst[e] = val


def _bits(devarr):
    """``devarr`` viewed as unsigned words of its element size (one kernel per size)."""
    w = _WORDS[devarr.dtype.itemsize]
    return devarr if devarr.dtype == w else devarr.view(w)


def c_strides(shape):
    """Element strides of a C-contiguous array of ``shape``."""
    st, s = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        st[d] = s
        s *= shape[d]
    return st


_c_strides = c_strides  # (the name other kernel modules import)


def _trim(shape, *strides):
    """Drop size-1 dims (they move nothing); no dims left: one dim of one element."""
    kept = [d for d in range(len(shape)) if shape[d] != 1]
    if not kept:
        return ((1,),) + tuple((0,) for _ in strides)
    return (tuple(shape[d] for d in kept),) + tuple(tuple(s[d] for d in kept) for s in strides)


def copy_into(src, soff, sst, dst, doff, dstr, shape):
    """Launch dst[doff + i . dstr] = src[soff + i . sst] over ``shape`` (flat device
    arrays; offsets and strides in elements)."""
    n = 1
    for s in shape:
        n *= s
    if n:
        shape, sst, dstr = _trim(list(shape), list(sst), list(dstr))
        launch_1d(_k(_copy), n, _bits(src), soff, sst, _bits(dst), doff, dstr, shape)


def strided_copy(devarr, shape, strides, offset):
    """A new flat device array: the elements of ``devarr`` (any shape, C-contiguous) at
    ``offset + i . strides`` for every index i of ``shape``, in row-major order."""
    n = 1
    for s in shape:
        n *= s
    out = device_empty((max(n, 1),), devarr.dtype)
    copy_into(flat(devarr), offset, strides, out, 0, c_strides(shape), shape)
    return out


def fill(devarr, value):
    """Set every element of the flat device array ``devarr`` to ``value``."""
    launch_1d(_k(_fill), devarr.shape[0], devarr, devarr.dtype.type(value))


# -- the view ops, through a layout probe -----------------------------------------------

_BYTE = np.zeros(1, np.uint8)
_BYTE.flags.writeable = False


def _probe(t):
    """A tensor of ``t``'s type and shape whose holder is a read-only view with row-major
    strides in elements over one byte (never read: see the module docstring)."""
    v = np.lib.stride_tricks.as_strided(
        _BYTE, t.shape, c_strides(t.shape), subok=False, writeable=False
    )
    return _wrap(v, t._dtype)


def _is_cuda(t):
    return hasattr(getattr(t, "_value", None), "copy_to_host")


def _cpu_op(name):
    return _get_op(name).kernels["cpu"]


def _host_scalars(x):
    """Start indices on the host (a CUDA tensor is copied: a few bytes)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_host_scalars(v) for v in x)
    return x.to("cpu") if _is_cuda(x) else x


def _layout(v):
    """(shape, strides, offset, contiguous, size) of probe view ``v``, in elements."""
    off = v.__array_interface__["data"][0] - _BYTE.__array_interface__["data"][0]
    return v.shape, v.strides, off, v.flags.c_contiguous, v.size


def _from_view(x, layout):
    """The CUDA result of a view op on ``x``: ``layout`` (:func:`_layout`) is that of the
    op's result on ``_probe(x)``."""
    shape, strides, off, contiguous, n = layout
    dt = x._dtype
    if n == 0:
        return from_holder(device_empty(shape, dt.np), dt)
    if contiguous:  # (so are size-1 views): a view of the operand's array
        return from_holder(shaped(x._value, shape, start=off), dt)
    out = strided_copy(flat(x._value), shape, strides, off)
    return from_holder(shaped(out, shape), dt)


# (op, operand shape and type, attributes) -> (layout, the attributes the op kept): a
# training loop repeats the same view ops, and the CPU op on a probe (its checks and
# attribute parsing) costs more host time than the launch it saves; attributes that are
# not hashable values (tensors: dynamic_slice's start indices) always take the probe
_layouts = {}
_LAYOUTS_KEPT = 4096


def _probed(name, operand, args, kwargs):
    """(layout, kept attributes) of view op ``name`` on ``operand``: the CPU op run on
    the layout probe, the attributes it keeps for the tape captured (and passed on)."""
    saved = _tape_mode.kept
    _tape_mode.kept = mine = {}
    try:
        v = _cpu_op(name)(_probe(operand), *args, **kwargs)._value
    finally:
        _tape_mode.kept = saved
    return _layout(v), mine.get(name)


def _view_op(name):
    def kernel(operand, *args, **kwargs):
        if not _is_cuda(operand):
            raise SpecError(name, "device", "operand must be a tensor on the device")
        if name == "dynamic_slice":
            args = (_host_scalars(args[0]), *args[1:]) if args else args
            if "start_indices" in kwargs:
                kwargs["start_indices"] = _host_scalars(kwargs["start_indices"])
            key = None
        else:
            attrs = _frozen((args, kwargs))  # (None: an attribute that is not a plain value)
            key = None if attrs is None else (name, operand.shape, operand._dtype, attrs)
        hit = _layouts.get(key) if key is not None else None
        if hit is None:
            hit = _probed(name, operand, args, kwargs)
            if key is not None:
                if len(_layouts) >= _LAYOUTS_KEPT:
                    _layouts.clear()
                _layouts[key] = hit
        layout, kept = hit
        if kept is not None:
            keep(name, **kept)
        return _from_view(operand, layout)

    kernel.__name__ = f"{name}_cuda"
    return kernel


def reshape(operand, shape, dimensions=None):
    if dimensions is None or not _is_cuda(operand):
        return _view_op("reshape")(operand, shape)
    # transpose by `dimensions`, then reshape: the CPU op checks on a stride-0 stand-in
    # (its transpose and reshape stay views, nothing is read)
    _cpu_op("reshape")(_stand_in(operand), shape, dimensions)
    perm = [int(d) for d in np.asarray(dimensions).reshape(-1)]
    keep("reshape", shape=list(shape), dimensions=perm)
    t = _view_op("transpose")(operand, perm)
    return from_holder(shaped(t._value, tuple(int(s) for s in shape)), t._dtype)


# -- pad, concatenate, dynamic_update_slice ------------------------------------------------


def pad(operand, padding_value, edge_padding_low, edge_padding_high, interior_padding):
    x, p = operands("pad", operand, padding_value, names=["operand", "padding_value"])
    low, high, inner, dims = pad_checks(x, p, edge_padding_low, edge_padding_high, interior_padding)
    keep("pad", edge_padding_low=low, edge_padding_high=high, interior_padding=inner)
    out = device_empty(dims, x._dtype.np)
    n = out.size
    if n:
        fo = flat(out)
        val = _bits(_dev("pad", p))  # (a host scalar: a cached device copy)
        shape, lo, step, ishape = _trim_pad(dims, low, [i + 1 for i in inner], x.shape)
        src = _bits(flat(x._value)) if x.size else val  # (never read: all padding)
        launch_1d(_k(_pad), n, src, val, _bits(fo), shape, lo, step, ishape)
    return from_holder(out, x._dtype)


def _trim_pad(dims, low, step, ishape):
    """pad's tuples without the dims where both sides have size 1 and no offset."""
    keep_ = [d for d in range(len(dims)) if not (dims[d] == 1 and ishape[d] == 1 and low[d] == 0)]
    if not keep_:
        return (1,), (0,), (1,), (1,)
    return tuple(tuple(int(v[d]) for d in keep_) for v in (dims, low, step, ishape))


def concatenate(inputs, dimension):
    xs, dim = concatenate_checks(inputs, dimension)
    keep("concatenate", dimension=dim)
    shape = list(xs[0].shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    dt = xs[0]._dtype
    out = device_empty(shape, dt.np)
    dst = flat(out)
    ost = c_strides(shape)
    pos = 0
    for x in xs:
        if x.size:
            copy_into(flat(x._value), 0, c_strides(x.shape), dst, pos * ost[dim], ost, x.shape)
        pos += x.shape[dim]
    return from_holder(out, dt)


def dynamic_update_slice(operand, update, start_indices):
    x, u, starts = dynamic_update_slice_checks(operand, update, _host_scalars(start_indices))
    out = device_empty(x.shape, x._dtype.np)
    if x.size:
        dst = flat(out)
        dst.copy_to_device(flat(x._value))
        if u.size:
            adj = _clamped(starts, x.shape, u.shape)
            st = c_strides(x.shape)
            off = sum(a * s for a, s in zip(adj, st))
            copy_into(flat(u._value), 0, c_strides(u.shape), dst, off, st, u.shape)
    return from_holder(out, x._dtype)


KERNELS = {
    name: _view_op(name)
    for name in (
        "broadcast_in_dim",
        "broadcast",
        "transpose",
        "collapse",
        "slice",
        "reverse",
        "dynamic_slice",
    )
}
KERNELS.update(
    reshape=reshape, pad=pad, concatenate=concatenate, dynamic_update_slice=dynamic_update_slice
)


def _alias(x):
    """The tape's identity primitive (``t.to(its own device)``, local_vjp): the same
    device buffer in a new tensor."""
    return from_holder(x._value, x._dtype)


KERNELS["autodiff.local.alias"] = _alias  # (a primitive outside the spec: its full name)
