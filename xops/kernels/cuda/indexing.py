"""CUDA kernels of gather, scatter and iota.

Each kernel function takes the op's own arguments and runs the CPU op's checks, which
read only types, shapes and attributes: ``_gather_args`` / ``_scatter_args`` (the checked
plans of :mod:`xops.ops.indexing` / :mod:`xops.ops.scatter`) and ``iota_checks``
(:mod:`xops.ops.movement`), so every error is the CPU's own. The geometry (result
shape, strides, the attribute maps) goes to the device as one small int64 array per
plan (cached with the plan); start / scatter indices are read by the kernels on the
device, in their own integer type. No element or index ever travels to the host (a
generic scatter reads its round boundaries: see below).

* **gather** is output-parallel: one thread per result element (per 8-byte word of a
  16-byte element) decomposes its result index, reads its start index vector, clamps
  each component to [0, dim(operand) - slice_size] (the spec, as the CPU: uint64 values
  above the int64 range count as int64 max) and copies the raw bits: bit-exact for
  every element type. A collapsed or batching dim with slice size 0 gives zero bits,
  as on the CPU.
* **scatter** (one input; bodies add, multiply, maximum, minimum and ``lambda a, b: b``,
  recognised as the CPU recognises them) is parallel over the update-window positions
  that never collide and sequential over the rest: each thread owns one position along
  the window dims that no scatter index moves (a window starts at 0 there, so two
  threads never hit one result element), and walks the update windows in the CPU's
  schedule order (row-major scatter index, then the window dims that indices move), so
  updates that hit one element fold in the same order as on the CPU, with no atomics:
  results are bit-exact with the CPU's (NaN payloads aside: a GPU's NaN is canonical).
  Out-of-bounds update elements are skipped one by one (the spec; indices are never
  clamped). Element types: i1 (add = OR, multiply = AND), si/ui 8-64, f32, f64; the
  overwrite body moves raw bits of every type.
* **scatter, any other** (any body, built-in bodies on other element types such as f16,
  bf16, f8 or complex, several inputs): the CPU's vectorised rounds
  (:mod:`.scatter_rounds`): the targets from the spec's formula in xops ops, grouped by
  target stably by two device sorts, then per round of every target's k-th update one
  body call on device tensors, the body's element types and checks the CPU's; results
  bit for bit as the CPU's where the body's ops are exact. Host reads: the number of
  rounds and the round boundaries (small int64 arrays that steer the loop), never an
  element, update or index.
* **iota** (a creation op: it runs on the default device, ``xo.default_device``):
  one thread per element writes the bit pattern of its index in the element type,
  encoded in the kernel with integer arithmetic (round to nearest even, then the
  format's overflow value: inf, NaN or the saturated maximum). The few format
  constants come from the CPU's own conversion of 0, 1 and the maximum (O(1) host
  work), so the bits match the CPU's for every type (narrow floats, f8E8M0FNU's
  NaN zero, complex as index + 0i).
"""

import math

import numpy as np
from numba import cuda, int64

from ...device import default_device
from ...dtypes import as_dtype, from_compute
from ...errors import SpecError
from ...limits import check_nbytes
from ...ops._core import bound_arguments
from ...ops.indexing import _gather_args, gather as _gather_op
from ...ops.movement import iota_checks
from ...ops._device_grads import scatter_targets
from ...ops.scatter import _convert, _scatter_args, _scatter_body_types, _scatter_op_name
from ...ops.scatter import scatter as _scatter_op
from ...registry import get as _get_op, op as _op
from ...tensor import Tensor

from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d, numba_cuda
from ._storage import on_device
from .movement import _c_strides, _is_cuda
from .scatter_rounds import _WORDS, fold_rounds, words as _words
from .sorting import _zero_stand_in

__all__ = ["KERNELS"]

_I64_MAX = (1 << 63) - 1
OVERWRITE, ADD, MULTIPLY, MAXIMUM, MINIMUM = 0, 1, 2, 3, 4  # the scatter op codes
_CODES = {"overwrite": OVERWRITE, "add": ADD, "multiply": MULTIPLY}
_CODES.update(maximum=MAXIMUM, minimum=MINIMUM)
_VALUE_TYPES = {np.dtype(t) for t in "bool int8 int16 int32 int64 float32 float64".split()}
_VALUE_TYPES |= {np.dtype(t) for t in "uint8 uint16 uint32 uint64".split()}


# ---------------------------------------------------------------------------------------
# kernels (plain numba.cuda: no device-function calls, so that each compiles to PTX on
# its own in tests/cuda_compile_check.py)
# ---------------------------------------------------------------------------------------


def _widen(idx, mode, out):
    """out[i] = index value i as int64: ``mode`` 1: uint64 bits, values above the int64
    range saturate to int64 max; ``mode`` b > 1: a b-bit signed bit pattern."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = int64(idx[i])
        if mode == 1:
            if v < 0:
                v = 9223372036854775807
        elif v >= (1 << (mode - 1)):
            v -= 1 << mode
        out[i] = v


def _gather(src, idx, g, nr, nk, words, out):
    """Output-parallel: out word e of result element i = e // words. ``g`` (int64):
    [0, nr) the result shape; [nr, 2nr) the operand stride of each result dim (offset
    dims, and batch dims that are batching dims; else 0); [2nr, 3nr) the start_indices
    stride of each result dim (batch dims; else 0); then per index component k the clamp
    bound and the operand stride (two entries); last, the stride of index_vector_dim."""
    e = cuda.grid(1)
    if e < out.shape[0]:
        i = e // words
        xo = 0
        io = 0
        rem = i
        for d in range(nr - 1, -1, -1):
            q = rem // g[d]
            c = rem - q * g[d]
            rem = q
            xo += c * g[nr + d]
            io += c * g[2 * nr + d]
        base = 3 * nr
        step = g[base + 2 * nk]
        for k in range(nk):
            v = int64(idx[io + k * step])
            hi = g[base + 2 * k]
            if v < 0:
                v = 0
            elif v > hi:
                v = hi
            xo += v * g[base + 2 * k + 1]
        out[e] = src[xo * words + (e - i * words)]


def _zeros(out):
    e = cuda.grid(1)
    if e < out.shape[0]:
        out[e] = 0


def _scatter(out, upd, idx, g, nf, nb, nk, nwin, nvar, words, op):
    """Thread f owns one position along the free window dims (``nf`` of them; a window
    starts at 0 there) and walks the ``nwin`` update windows in order, and within each
    the ``nvar`` positions along the window dims that indices move. ``g`` (int64):
    per free dim (size, result stride, update stride); per update scatter dim (size,
    update stride, index stride, result stride of its batching dim or 0); per index
    component (result dim size, result stride, window size, update stride); last, the
    stride of index_vector_dim. ``op``: the body's code (see the module's constants);
    ``words``: words per element (the overwrite body on 16-byte elements moves 2)."""
    f = cuda.grid(1)
    nthreads = 1
    for j in range(nf):
        nthreads *= g[3 * j]
    if f < nthreads:
        r0 = 0
        u0 = 0
        rem = f
        for j in range(nf - 1, -1, -1):
            q = rem // g[3 * j]
            c = rem - q * g[3 * j]
            rem = q
            r0 += c * g[3 * j + 1]
            u0 += c * g[3 * j + 2]
        bo = 3 * nf
        ko = bo + 4 * nb
        step = g[ko + 4 * nk]
        for b in range(nwin):
            r1 = r0
            u1 = u0
            io = 0
            rem = b
            for j in range(nb - 1, -1, -1):
                q = rem // g[bo + 4 * j]
                c = rem - q * g[bo + 4 * j]
                rem = q
                u1 += c * g[bo + 4 * j + 1]
                io += c * g[bo + 4 * j + 2]
                r1 += c * g[bo + 4 * j + 3]
            inside = True
            for k in range(nk):  # the components whose dim has a window of size 1
                if g[ko + 4 * k + 2] == 1:
                    v = int64(idx[io + k * step])
                    if v < 0 or v >= g[ko + 4 * k]:
                        inside = False
                    else:
                        r1 += v * g[ko + 4 * k + 1]
            if not inside:
                continue
            for p in range(nvar):
                r = r1
                u = u1
                rem = p
                for k in range(nk - 1, -1, -1):
                    ws = g[ko + 4 * k + 2]
                    if ws != 1:
                        q = rem // ws
                        c = rem - q * ws
                        rem = q
                        v = int64(idx[io + k * step])
                        if v < -c or v >= g[ko + 4 * k] - c:  # (no overflow: c, dims small)
                            inside = False
                        else:
                            r += (v + c) * g[ko + 4 * k + 1]
                            u += c * g[ko + 4 * k + 3]
                if not inside:
                    inside = True
                    continue
                if op == OVERWRITE:
                    for w in range(words):
                        out[r * words + w] = upd[u * words + w]
                    continue
                a = out[r]
                x = upd[u]
                if op == ADD:
                    a = a + x
                elif op == MULTIPLY:
                    a = a * x
                elif a != a or x != x:  # maximum / minimum: NaN propagates
                    a = a + x
                elif a == x:  # -0 < +0
                    if (math.copysign(1.0, a) < 0) == (op == MAXIMUM):
                        a = x
                elif (x > a) == (op == MAXIMUM):
                    a = x
                out[r] = a


def _iota(out, n, inner, words, kind, mant, bias, zero, maxb, ovf):
    """One thread per word: element i = e // words holds (i // inner) % n, as an integer
    (``kind`` 0) or as the bits of a float with ``mant`` mantissa bits and exponent bias
    ``bias``, rounded to nearest even; ``zero``: the bits of 0; bit patterns above
    ``maxb`` (the largest finite) become ``ovf``. Other words (imaginary parts) are 0."""
    e = cuda.grid(1)
    if e < out.shape[0]:
        i = e // words
        v = (i // inner) % n
        bits = v
        if e - i * words != 0:
            bits = 0
        elif kind != 0:
            if v == 0:
                bits = zero
            else:
                ex = 0
                t = v
                while t > 1:
                    t >>= 1
                    ex += 1
                if ex <= mant:
                    m = (v << (mant - ex)) - (1 << mant)
                else:
                    sh = ex - mant
                    q = v >> sh
                    r = v - (q << sh)
                    half = int64(1) << (sh - 1)
                    if r > half or (r == half and (q & 1) == 1):
                        q += 1
                    if q == (int64(1) << (mant + 1)):
                        q >>= 1
                        ex += 1
                    m = q - (1 << mant)
                bits = ((ex + bias) << mant) | m
                if bits > maxb:
                    bits = ovf
        out[e] = bits


# ---------------------------------------------------------------------------------------
# host side: operands, geometry
# ---------------------------------------------------------------------------------------


def _on_device(op, t, given, name):
    """``t``'s device array. Index operands given as host data (a list, a NumPy array:
    not a Tensor) are copied to the device, as the user's literal; host tensors are the
    seam's error, and host data for any other operand is an error here."""
    if name.endswith("indices") and not _is_cuda(t) and not isinstance(given, Tensor):
        return numba_cuda().to_device(np.ascontiguousarray(t._value).view(_storage(t)))
    return on_device(op, t, name)


def _storage(t):
    from ._storage import storage_dtype

    return storage_dtype(t._value.dtype)


def _indices(op, t, given, name):
    """The index tensor's values on the device, flat, in a type the kernels read as
    int64 (NumPy's integer types as they are; uint64 and narrow signed types widened to
    int64 by one launch)."""
    dev = _on_device(op, t, given, name)
    if t.size == 0:  # (index vectors of size 0: nothing to read)
        return numba_cuda().device_array(1, np.int64)
    dev = flat(dev)
    dt = t._dtype
    mode = 1 if dt.np == np.uint64 else (dt.bits if dt.kind == "si" and dt.is_narrow else 0)
    if not mode:
        return dev
    wide = numba_cuda().device_array(dev.shape[0], np.int64)
    launch_1d(_k(_widen), dev.shape[0], dev, mode, wide)
    return wide


_GEOMETRY = {}  # id(plan) -> (plan, words, device geometry); a plan is a pure function
_GEOMETRY_MAX = 256  # of shapes and attributes, and the entry keeps it alive


def _geometry(plan, words, make):
    hit = _GEOMETRY.get(id(plan))
    if hit is not None and hit[0] is plan and hit[1] == words:
        return hit[2]
    g = make()
    dev = numba_cuda().to_device(np.asarray(g + [0], np.int64))  # (never empty)
    if len(_GEOMETRY) >= _GEOMETRY_MAX:
        _GEOMETRY.clear()
    _GEOMETRY[id(plan)] = (plan, words, dev)
    return dev


# ---------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------


def gather(*args, **kwargs):
    """gather (the op's arguments) on the device; see the module docstring."""
    bound = bound_arguments(_gather_op, args, kwargs)
    x, si, p = _gather_args(*bound.values())
    operand, start_indices = bound["operand"], bound["start_indices"]
    check_nbytes("gather", p.result_shape, x._dtype)
    dt = x._dtype
    xdev = _on_device("gather", x, operand, "operand")
    out = device_empty(p.result_shape, dt.np)
    if out.size == 0:
        return from_holder(out, dt)
    dst, words = _words(out)
    n = dst.shape[0]
    if any(p.slice_sizes[d] == 0 for d in p.collapsed + p.obd):
        launch_1d(_k(_zeros), n, dst)  # no element to read: zero bits, as the CPU
        return from_holder(out, dt)
    src, _ = _words(xdev)
    idx = _indices("gather", si, start_indices, "start_indices")
    g = _geometry(p, words, lambda: _gather_geometry(x, si, p))
    nk = len(p.start_index_map)
    launch_1d(_k(_gather), n, src, idx, g, len(p.result_shape), nk, words, dst)
    return from_holder(out, dt)


def _gather_geometry(x, si, p):
    """The ``g`` of the _gather kernel (see there)."""
    xstr, istr = _c_strides(x.shape), _c_strides(si.shape)
    rank = len(p.result_shape)
    xmul, imul = [0] * rank, [0] * rank
    odims = [d for d in range(x.ndim) if d not in p.collapsed and d not in p.obd]
    for d, od in zip(p.offset_dims, odims):
        xmul[d] = xstr[od]
    batch = [d for d in range(rank) if d not in p.offset_dims]
    si_dims = [d for d in range(si.ndim) if d != p.ivd]
    for d, sd in zip(batch, si_dims):
        imul[d] = istr[sd]
        if sd in p.sibd:
            xmul[d] = xstr[p.obd[p.sibd.index(sd)]]
    comps = []
    for d in p.start_index_map:
        comps += [x.shape[d] - p.slice_sizes[d], xstr[d]]
    step = istr[p.ivd] if p.ivd < si.ndim else 0
    return list(p.result_shape) + xmul + imul + comps + [step]


# ---------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------


def scatter(*args, **kwargs):
    """scatter (the op's arguments) on the device; see the module docstring."""
    bound = bound_arguments(_scatter_op, args, kwargs)
    xs, seq, us, useq, si, p = _scatter_args(*bound.values())
    inputs, updates = bound["inputs"], bound["updates"]
    name = _scatter_op_name(p.body) if len(xs) == 1 else None
    x, u = xs[0], us[0]
    dt = x._dtype
    if name is None or (name != "overwrite" and (dt.np not in _VALUE_TYPES or dt.quantized)):
        res = _scatter_generic(xs, us, si, p, bound)
        return tuple(res) if seq or useq else res[0]
    xdev = _on_device("scatter", x, inputs, "inputs")
    udev = _on_device("scatter", u, updates, "updates")
    out = device_empty(x.shape, dt.np)
    if x.size:
        flat(out).copy_to_device(flat(xdev))
    res = from_holder(out, dt)
    if x.size and u.size:
        code = _CODES[name]
        if dt.kind == "bool" and code != OVERWRITE:  # on 0/1 bytes: OR and AND
            code = MAXIMUM if code in (ADD, MAXIMUM) else MINIMUM
        if code == OVERWRITE or dt.kind == "bool":
            dst, words = _words(out)
            src, _ = _words(udev)
        else:
            dst, src, words = flat(out), flat(udev), 1
        idx = _indices("scatter", si, bound["scatter_indices"], "scatter_indices")
        g = _geometry(p, words, lambda: _scatter_geometry(x, si, u, p))
        nf, nb, nk, nwin, nvar, nthreads = _scatter_counts(x, si, u, p)
        launch_1d(_k(_scatter), nthreads, dst, src, idx, g, nf, nb, nk, nwin, nvar, words, code)
    return (res,) if seq or useq else res


def _scatter_generic(xs, us, si, p, bound):
    """Any other scatter: the CPU's vectorised rounds on the device (:mod:`.scatter_rounds`),
    with the body's element types found as the CPU op finds them (on zeros made on the
    host: no element is read). The targets are the spec's formula in xops ops
    (:func:`xops.ops._device_grads.scatter_targets`), put in schedule order: the update
    dims moved to (update scatter dims, update window dims), row-major."""
    for t in xs:
        on_device("scatter", t, "inputs")
    for t in us:
        on_device("scatter", t, "updates")
    si = _index_tensor(si, bound["scatter_indices"])
    dts = _scatter_body_types(xs, us, p.body, probe=_zero_stand_in)
    xs, us = ([from_holder(t._value, t._dtype) for t in ts] for ts in (xs, us))  # (no grad)
    xs, us = ([_convert(t, dt) for t, dt in zip(ts, dts)] for ts in (xs, us))
    shape, ushape, m = list(xs[0].shape), list(us[0].shape), us[0].size
    if xs[0].size == 0 or m == 0:
        return xs
    flat_xs = [_op.reshape(x, [x.size]) for x in xs]
    tgt = scatter_targets(shape, si, ushape, p)
    with default_device(si.device):
        ids = _op.reshape(_op.iota(0, [m], "i64"), ushape)
    order = [d for d in range(len(ushape)) if d not in p.uwd] + list(p.uwd)
    if order != list(range(len(ushape))):
        tgt, ids = _op.transpose(tgt, order), _op.transpose(ids, order)
    tgt, ids = _op.reshape(tgt, [m]), _op.reshape(ids, [m])
    flat_us = [_op.reshape(u, [m]) for u in us]
    where = ("scatter", "C15", "update_computation")
    outs = fold_rounds(flat_xs, tgt, ids, flat_us, p.body, dts, where)
    return [_op.reshape(o, shape) for o in outs]


def _index_tensor(si, given):
    """The scatter indices as a device tensor (a literal copied there); uint64 indices
    widened to int64 as the kernels read them (values above the int64 range as int64
    max: out of bounds)."""
    dev = _on_device("scatter", si, given, "scatter_indices")
    if si._dtype.np != np.uint64 or not si.size:
        return from_holder(dev, si._dtype)
    wide = device_empty(si.shape, np.int64)
    launch_1d(_k(_widen), si.size, flat(dev), 1, flat(wide))
    return from_holder(wide, as_dtype("i64"))


def _window(x, u, p):
    """Per input dim: (window size, update stride) of its window dim, (1, 0) for the
    inserted and batching dims."""
    ustr = _c_strides(u.shape)
    wsize, wstr = [1] * x.ndim, [0] * x.ndim
    wdims = [d for d in range(x.ndim) if d not in p.iwd and d not in p.ibd]
    for d, ud in zip(wdims, p.uwd):
        wsize[d], wstr[d] = u.shape[ud], ustr[ud]
    return wsize, wstr


def _free_dims(x, u, p):
    """The window dims no scatter index moves (size > 1): the threads' dims."""
    wsize, _ = _window(x, u, p)
    return [d for d in range(x.ndim) if wsize[d] > 1 and d not in p.sdod]


def _scatter_counts(x, si, u, p):
    """(nf, nb, nk, nwin, nvar, threads) of the _scatter kernel."""
    wsize, _ = _window(x, u, p)
    free = _free_dims(x, u, p)
    nb = si.ndim - (1 if p.ivd < si.ndim else 0)
    nwin = math.prod(n for d, n in enumerate(si.shape) if d != p.ivd)
    nvar = math.prod(wsize[d] for d in p.sdod)
    return len(free), nb, len(p.sdod), nwin, nvar, math.prod(wsize[d] for d in free)


def _scatter_geometry(x, si, u, p):
    """The ``g`` of the _scatter kernel (see there)."""
    rstr, istr, ustr = _c_strides(x.shape), _c_strides(si.shape), _c_strides(u.shape)
    wsize, wstr = _window(x, u, p)
    g = []
    for d in _free_dims(x, u, p):
        g += [wsize[d], rstr[d], wstr[d]]
    usd = [d for d in range(u.ndim) if d not in p.uwd]
    si_dims = [d for d in range(si.ndim) if d != p.ivd]
    for ud, sd in zip(usd, si_dims):
        bd = p.ibd[p.sibd.index(sd)] if sd in p.sibd else None
        g += [u.shape[ud], ustr[ud], istr[sd], 0 if bd is None else rstr[bd]]
    for d in p.sdod:
        g += [x.shape[d], rstr[d], wsize[d], wstr[d]]
    return g + [istr[p.ivd] if p.ivd < si.ndim else 0]


# ---------------------------------------------------------------------------------------
# iota
# ---------------------------------------------------------------------------------------


def iota(iota_dimension, shape, dtype="i64"):
    d, dims, dt = iota_checks(iota_dimension, shape, dtype)
    if dt.quantized:  # quantize(index), as the CPU op, where the device can quantize
        if "cuda" not in _get_op("uniform_quantize").kernels:
            raise SpecError(
                "iota",
                "device",
                f"has no cuda kernel for quantized element type {dt.name} "
                f"(uniform_quantize has none)",
            )
        return _get_op("uniform_quantize").fn(iota(d, dims, dt.expressed_type), dt)
    out = device_empty(dims, dt.np)
    words = 2 if dt.kind == "complex" else 1
    if out.size:
        dst = flat(out).view(_WORDS[dt.itemsize // words])
        inner = math.prod(dims[d + 1 :])
        kind = int(dt.kind in ("float", "complex"))
        fmt = _float_format(dt) if kind else (0, 0, 0, 0, 0)
        launch_1d(_k(_iota), dst.shape[0], dst, dims[d], inner, words, kind, *fmt)
    return from_holder(out, dt)


def _float_format(dt):
    """(mantissa bits, exponent bias, bits of 0, bits of the largest finite value, bits
    of an overflowing value) of a float type (of a complex type's parts), from the CPU's
    own conversion of 0, 1, the maximum and twice the maximum."""
    part = as_dtype({"c64": "f32", "c128": "f64"}.get(dt.name, dt.name))
    top = part.max
    bits = from_compute(np.array([0.0, 1.0, top, top * 2], np.float64), part)
    bits = [int(b) for b in bits.view(_WORDS[part.itemsize])]
    mant = _mantissa_bits(part)
    return mant, bits[1] >> mant, bits[0], bits[2], bits[3]


def _mantissa_bits(part):
    import ml_dtypes

    return int((ml_dtypes.finfo if part.is_narrow else np.finfo)(part.np).nmant)


KERNELS = {"gather": gather, "scatter": scatter, "iota": iota}
