"""Manipulation and indexing functions of the array API standard (2024.12): reshape,
transpose, concatenation, repetition, ``take``/``take_along_axis`` — all spec data
movement ops (reshape, transpose, broadcast_in_dim, concatenate, reverse, slice,
gather), so every one is differentiable."""

import numpy as np

from ..errors import SpecError
from ..limits import check_nbytes
from ..ops import indexing as I
from ..ops import movement as M
from ..ops._core import tstr
from ..tensor import Tensor, tensor
from ._base import _promote_all, array, axes, axis1, broadcast_shapes, stack, to  # noqa: F401
from ._base import broadcast_to as _bcast


def broadcast_arrays(*arrays):
    ts = [array(a, "broadcast_arrays") for a in arrays]
    if not ts:
        return []
    shape = broadcast_shapes("broadcast_arrays", *ts)
    return [_bcast(t, shape) for t in ts]


def broadcast_to(x, /, shape):
    x = array(x, "broadcast_to")
    shape = tuple(int(s) for s in shape)
    try:
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise SpecError(
            "broadcast_to", "", f"{tstr(x)} does not broadcast to shape {shape}"
        ) from None
    return _bcast(x, shape)


def concat(arrays, /, *, axis=0):
    ts = _promote_all([array(a, "concat") for a in arrays], "concat")
    if axis is None:
        ts = [M.reshape(t, (t.size,)) for t in ts]
        axis = 0
    if any(t.ndim == 0 for t in ts):
        raise SpecError("concat", "", "0-d arrays cannot be concatenated (use axis=None)")
    ax = axis1("concat", axis, ts[0].ndim)
    return M.concatenate(ts, ax) if len(ts) > 1 else ts[0]


def expand_dims(x, /, axis=0):
    """Insert size-1 axes; ``axis`` may be an int or (2024.12 allows it) a tuple."""
    x = array(x, "expand_dims")
    items = axis if isinstance(axis, tuple) else (axis,)
    n = x.ndim + len(items)
    pos = axes("expand_dims", items, n)
    shape = list(x.shape)
    for p in pos:
        shape.insert(p, 1)
    return M.reshape(x, tuple(shape))


def flip(x, /, *, axis=None):
    x = array(x, "flip")
    dims = axes("flip", axis, x.ndim)
    return M.reverse(x, list(dims)) if dims else x


def moveaxis(x, source, destination, /):
    x = array(x, "moveaxis")
    src = source if isinstance(source, tuple) else (source,)
    dst = destination if isinstance(destination, tuple) else (destination,)
    if len(src) != len(dst):
        raise SpecError(
            "moveaxis", "", f"source {source} and destination {destination} must have as many axes"
        )
    src = [axis1("moveaxis", s, x.ndim) for s in src]
    dst = [axis1("moveaxis", d, x.ndim) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise SpecError("moveaxis", "", "repeated axis")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def permute_dims(x, /, axes):
    x = array(x, "permute_dims")
    perm = [int(a) % x.ndim if x.ndim else int(a) for a in axes]
    if sorted(perm) != list(range(x.ndim)):
        raise SpecError(
            "permute_dims",
            "",
            f"axes must be a permutation of {list(range(x.ndim))}, got {tuple(axes)}",
        )
    return x if perm == list(range(x.ndim)) else M.transpose(x, perm)


def matrix_transpose(x, /):
    x = array(x, "matrix_transpose")
    if x.ndim < 2:
        raise SpecError("matrix_transpose", "", f"needs rank >= 2, got {tstr(x)}")
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return M.transpose(x, perm)


def reshape(x, /, shape, *, copy=None):
    x = array(x, "reshape")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise SpecError("reshape", "", f"only one dimension can be -1, got {tuple(shape)}")
    if -1 in shape:
        rest = int(np.prod([s for s in shape if s != -1]))
        if rest == 0 or x.size % rest:
            raise SpecError("reshape", "", f"cannot reshape {tstr(x)} into {tuple(shape)}")
        shape[shape.index(-1)] = x.size // rest
    if int(np.prod(shape)) != x.size or any(s < 0 for s in shape):
        raise SpecError("reshape", "", f"cannot reshape {tstr(x)} into {tuple(shape)}")
    return x if tuple(shape) == x.shape and not copy else M.reshape(x, tuple(shape))


def take(x, indices, /, *, axis=None):
    """Elements of ``x`` at ``indices`` along ``axis`` (gather; negative indices count
    from the end). ``axis`` may be omitted for a 1-D x."""
    x = array(x, "take")
    if axis is None:
        if x.ndim != 1:
            raise SpecError("take", "", f"axis is required for an array of rank {x.ndim}")
        axis = 0
    ax = axis1("take", axis, x.ndim)
    idx = _index_values("take", indices, x.shape[ax])
    return _take(x, idx, ax)


def _index_values(op, indices, n):
    """Integer indices as an int64 host array, negative ones wrapped, range-checked."""
    if isinstance(indices, Tensor):
        if indices._dtype.kind not in ("si", "ui"):
            raise SpecError(op, "", f"indices must be integers, got {tstr(indices)}")
        v = np.asarray(indices._value).astype(np.int64)
    else:
        v = np.asarray(indices)
        if v.size and v.dtype.kind not in "iu":
            raise SpecError(op, "", f"indices must be integers, got {v.dtype}")
        v = v.astype(np.int64)
    if v.size and (v.min() < -n or v.max() >= n):
        raise SpecError(
            op, "", f"indices must be in [-{n}, {n}), got values in [{v.min()}, {v.max()}]"
        )
    return np.where(v < 0, v + n, v)


def _take(x, idx, ax):
    """Gather ``x`` along axis ``ax`` at the host int64 indices ``idx`` (any shape)."""
    flat = idx.reshape(-1)
    r = x.ndim
    out_shape = x.shape[:ax] + idx.shape + x.shape[ax + 1 :]
    if flat.size == 0:  # nothing to gather: an empty slice keeps the graph
        limit = list(x.shape)
        limit[ax] = 0
        return M.reshape(M.slice(x, [0] * r, limit), out_shape)
    sizes = list(x.shape)
    sizes[ax] = 1
    out = I.gather(
        x,
        tensor(flat.reshape(-1, 1)),
        offset_dims=[d for d in range(r) if d != ax],
        collapsed_slice_dims=[ax],
        start_index_map=[ax],
        index_vector_dim=1,
        slice_sizes=sizes,
    )
    return out if idx.ndim == 1 else M.reshape(out, out_shape)


def take_along_axis(x, indices, /, *, axis=-1):
    x = array(x, "take_along_axis")
    ax = axis1("take_along_axis", axis, x.ndim)
    ind = np.asarray(indices._value if isinstance(indices, Tensor) else indices)
    if ind.ndim != x.ndim:
        raise SpecError(
            "take_along_axis", "", f"indices must have x's rank {x.ndim}, got {ind.ndim}"
        )
    idx = _index_values("take_along_axis", ind, x.shape[ax])
    shape = list(
        np.broadcast_shapes(
            tuple(s if d != ax else 1 for d, s in enumerate(x.shape)),
            tuple(s if d != ax else 1 for d, s in enumerate(idx.shape)),
        )
    )
    xs = list(shape)
    xs[ax] = x.shape[ax]
    ishape = list(shape)
    ishape[ax] = idx.shape[ax]
    x = _bcast(x, tuple(xs))
    idx = np.broadcast_to(idx, tuple(ishape))
    # linear indices into the flattened x: the other dims index themselves
    grids = np.indices(idx.shape, sparse=True)
    strides = np.cumprod((list(x.shape[1:]) + [1])[::-1])[::-1]
    lin = sum((idx if d == ax else grids[d]) * int(strides[d]) for d in range(x.ndim))
    return _take(M.reshape(x, (x.size,)), np.asarray(lin, np.int64).reshape(idx.shape), 0)


def repeat(x, repeats, /, *, axis=None):
    x = array(x, "repeat")
    if axis is None:
        x = M.reshape(x, (x.size,))
        axis = 0
    ax = axis1("repeat", axis, x.ndim)
    r = np.asarray(repeats._value if isinstance(repeats, Tensor) else repeats)
    if r.dtype.kind not in "iu" or (r.size and r.min() < 0):
        raise SpecError("repeat", "", f"repeats must be non-negative integers, got {repeats!r}")
    if r.shape in ((), (1,)):  # (one count for every element: the standard's (1,) too)
        r = np.broadcast_to(r.reshape(()), (x.shape[ax],))
    if r.shape != (x.shape[ax],):
        raise SpecError(
            "repeat", "", f"repeats must have 1 or {x.shape[ax]} entries, got shape {r.shape}"
        )
    if r.size and int(r.max()) > (1 << 62) // r.size:  # (the int64 sum could wrap; uint64)
        total = int(r.max())  # (already past every limit: the check below raises)
    else:
        total = int(r.sum(dtype=np.int64)) if r.size else 0
    shape = x.shape[:ax] + (total,) + x.shape[ax + 1 :]
    check_nbytes("repeat", shape, x._dtype)
    check_nbytes("repeat", (total,), np.dtype(np.int64), "index")
    return _take(x, np.repeat(np.arange(x.shape[ax]), r.astype(np.int64)), ax)


def roll(x, /, shift, *, axis=None):
    x = array(x, "roll")
    if axis is None:
        flat = M.reshape(x, (x.size,))
        return M.reshape(roll(flat, shift, axis=0), x.shape)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    ax = axis if isinstance(axis, tuple) else (axis,)
    if len(shifts) != len(ax):
        shifts = shifts * len(ax) if len(shifts) == 1 else shifts
        if len(shifts) != len(ax):
            raise SpecError("roll", "", f"shift {shift} and axis {axis} must have as many entries")
    out = x
    for s, a in zip(shifts, ax):
        a = axis1("roll", a, x.ndim)
        n = x.shape[a]
        if n == 0:
            continue
        k = int(s) % n
        if k:
            out = _take(out, (np.arange(n) - k) % n, a)
    return out


def squeeze(x, /, axis):
    x = array(x, "squeeze")
    dims = axes("squeeze", axis, x.ndim)
    if any(x.shape[d] != 1 for d in dims):
        raise SpecError(
            "squeeze", "", f"can only squeeze axes of size 1, got axis {axis} of {tstr(x)}"
        )
    return M.reshape(x, tuple(s for d, s in enumerate(x.shape) if d not in dims))


def tile(x, repetitions, /):
    x = array(x, "tile")
    reps = tuple(int(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise SpecError("tile", "", f"repetitions must be non-negative, got {reps}")
    n = max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    x = M.reshape(x, (1,) * (n - x.ndim) + x.shape)
    # broadcast a new axis in front of each dim, then merge the pairs
    big = tuple(v for r, s in zip(reps, x.shape) for v in (r, s))
    dims = [2 * i + 1 for i in range(n)]
    out = M.broadcast_in_dim(x, dims, big)
    return M.reshape(out, tuple(r * s for r, s in zip(reps, x.shape)))


def unstack(x, /, *, axis=0):
    x = array(x, "unstack")
    ax = axis1("unstack", axis, x.ndim)
    shape = x.shape[:ax] + x.shape[ax + 1 :]
    out = []
    for i in range(x.shape[ax]):
        start = [0] * x.ndim
        limit = list(x.shape)
        start[ax], limit[ax] = i, i + 1
        out.append(M.reshape(M.slice(x, start, limit), shape))
    return tuple(out)


__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "take",
    "take_along_axis",
    "tile",
    "unstack",
]
