"""NumPy-style indexing on Tensors: ``t[key]``, ``t[key] = v`` and ``t.at[key].<update>``.

Everything is built on the spec ops, so all of it is differentiable:

* **basic keys** (ints, slices with any step, ``...``, ``None``) map to slice, reverse
  and reshape;
* **advanced keys** (integer lists / arrays / tensors, boolean masks) map to one
  ``gather`` after the slices, with NumPy's rules: index arrays broadcast together; the
  broadcast dims replace the indexed dims in place when the advanced indices are
  adjacent in the key, and go first when a slice, ``...`` or ``None`` separates them
  (an int next to an array counts as an advanced index, as in NumPy). A boolean mask
  covering k dims must match their sizes and acts as its ``nonzero()`` (its dims are
  merged first, so a mask becomes one flat index array). Result shapes that depend on
  the data (masks) are fine: xops is eager.
* **bounds**: an integer index outside ``[-n, n)`` raises :class:`IndexBoundsError`
  (an ``IndexError``) naming the axis and its size, as NumPy does; indices are never
  clamped silently (gather alone would clamp).
* **updates** ``t.at[key].set/add/multiply/min/max(v)`` (as in JAX) return a new
  tensor through ``scatter`` on the flat element positions of the selection. ``v`` is
  broadcast to the selection's shape and converted to ``t``'s element type with
  ``xo.convert``. Duplicate indices: ``add``/``multiply``/``min``/``max`` combine every
  update; ``set`` is deterministic, **the last update wins** in row-major order of the
  selection (``x.at[[0, 0]].set([1, 2])`` gives 2 at 0, as NumPy's ``x[[0, 0]] = [1, 2]``;
  JAX leaves the winner unspecified). Gradients: ``set`` and ``add`` through scatter's
  own rules (a set's overwritten values get zero cotangent; only the winning update gets
  one); ``multiply``/``min``/``max`` with gradients run as rounds of unique-index
  scatters (round r applies every target's r-th update, so the result is the same as
  one scatter) built from differentiable gather / scatter-set steps.
* **modes** (``.at[]`` only, as JAX): ``mode=None`` / ``"promise_in_bounds"`` raise on
  out-of-bounds indices (NumPy's behaviour, xops' default), ``"clip"`` clamps them,
  ``get(mode="fill", fill_value=...)`` (or ``"drop"``) reads ``fill_value`` there (default
  NaN / the most negative signed / largest unsigned integer / True), updates with
  ``mode="drop"`` skip them.
* ``t[key] = v`` rebinds ``t`` to ``t.at[key].set(v)``: copy-on-write. Views, detached
  copies and other tensors that shared the old buffer never change; the Tensor object
  ``t`` gets the new value and a new version (see :func:`xops.autodiff.tape.rebind`).
"""

import operator

import numpy as np

from .dtypes import as_dtype
from .errors import SpecError
from .tensor import Tensor, _wrap

__all__ = ["At", "IndexBoundsError", "getitem", "setitem", "update"]

_I64 = None  # the i64 DType (set lazily: dtypes are ready at import, kept for speed)


def _i64():
    global _I64
    if _I64 is None:
        _I64 = as_dtype("i64")
    return _I64


class IndexBoundsError(SpecError, IndexError):
    """An integer index is out of bounds for its axis (an IndexError, as in NumPy, and
    an xops SpecError)."""


# ---------------------------------------------------------------------------------------
# Parsing a key
# ---------------------------------------------------------------------------------------


class _Plan:
    """A parsed key. ``wshape`` is the operand's shape with the dims of each boolean
    mask merged into one and a size-1 dim inserted for each boolean scalar (same
    element count, row-major). ``entries`` (key order) are ``("new",)``, ``("sep",)`` (an
    empty ``...``), ``("slice",
    d, start, step, count)``, ``("int", d, i)`` (basic keys only) and ``("adv", d,
    array)``; d is a dim of wshape. ``advanced``: whether any entry is "adv"."""

    __slots__ = ("adjacent", "advanced", "bshape", "entries", "layout", "shape", "valid", "wshape")


def _bounds_error(op, axis, n, value):
    return IndexBoundsError(op, "", f"index {value} is out of bounds for axis {axis} with size {n}")


def _as_index_array(k, op):
    """An array-like index as a NumPy array of integers or booleans."""
    if isinstance(k, Tensor):
        dt = k._dtype
        if dt.kind == "bool":
            return k._value
        if dt.kind not in ("si", "ui"):
            raise IndexError(
                f"{op}: tensors used as indices must be of integer or boolean type, got {k.type}"
            )
        v = k._value
        return v if not dt.is_narrow else v.astype(dt.compute)
    arr = np.asarray(k)
    if arr.dtype.kind == "f" and arr.size == 0:
        return arr.astype(np.int64)  # [] is an empty integer index, as in NumPy
    if arr.dtype.kind not in "iub":
        raise IndexError(
            f"{op}: arrays used as indices must be of integer or boolean type, "
            f"got {type(k).__name__} of dtype {arr.dtype}"
        )
    return arr


def _checked(arr, d, n, op, mode=None, valid=None):
    """Integer index array for a dim of size n: bounds-checked, negatives wrapped.
    ``mode`` "clip" clamps into [0, n); "drop"/"fill" append the in-bounds mask to
    ``valid`` and point the rest at 0."""
    if arr.size == 0:
        if valid is not None:
            valid.append(np.ones(arr.shape, bool))
        return arr.astype(np.int64, copy=False)
    if mode in ("clip", "drop", "fill"):
        a = arr.astype(np.int64)
        ok = (a >= -n) & (a < n)
        a = np.where(a < 0, a + n, a)
        if mode == "clip":
            return np.clip(a, 0, max(n - 1, 0))
        valid.append(ok)
        return np.where(ok, a, 0)
    lo, hi = arr.min(), arr.max()
    if hi >= n or lo < -n:
        bad = hi if hi >= n else lo
        raise _bounds_error(op, d, n, int(bad))
    if lo < 0:
        arr = np.where(arr < 0, arr.astype(np.int64) + n, arr)
    if arr.dtype != np.int32 and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    return arr


def _classify(key, op):
    """The key's items as (kind, value): "new", "ellipsis", "slice", "int", "bool0",
    "array" (integer array), "mask" (boolean array)."""
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if k is None:
            items.append(("new", None))
        elif k is Ellipsis:
            items.append(("ellipsis", None))
        elif isinstance(k, slice):
            items.append(("slice", k))
        elif isinstance(k, (bool, np.bool_)):
            items.append(("bool0", bool(k)))
        elif type(k) is int or isinstance(k, np.integer):
            items.append(("int", int(k)))
        elif isinstance(k, (Tensor, np.ndarray, list, tuple)):
            arr = _as_index_array(k, op)
            if arr.ndim == 0:
                items.append(("bool0", bool(arr)) if arr.dtype.kind == "b" else ("int", int(arr)))
            else:
                items.append(("mask" if arr.dtype.kind == "b" else "array", arr))
        else:
            try:
                items.append(("int", operator.index(k)))
            except TypeError:
                raise IndexError(
                    f"{op}: only integers, slices (`:`), ellipsis (`...`), "
                    f"None, and integer or boolean arrays/tensors are valid "
                    f"indices, got {type(k).__name__}"
                ) from None
    return items


def _parse(shape, key, op="getitem", mode=None):
    """Parse ``key`` for ``shape``; ``mode`` (``.at[]``, as JAX): None or
    "promise_in_bounds" raise on out-of-bounds indices, "clip" clamps them, "drop" /
    "fill" mark them (``p.valid``: the selection's in-bounds mask, or None)."""
    if mode not in (None, "promise_in_bounds", "clip", "drop", "fill"):
        raise ValueError(
            f"{op}: mode must be None, 'promise_in_bounds', 'clip', 'drop' or 'fill', got {mode!r}"
        )
    masks = [] if mode in ("drop", "fill") else None
    items = _classify(key, op)
    rank = len(shape)
    if sum(kind == "ellipsis" for kind, _ in items) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    used = sum(
        v.ndim if kind == "mask" else 1
        for kind, v in items
        if kind in ("slice", "int", "array", "mask")
    )
    if used > rank:
        raise IndexError(f"{op}: too many indices for a tensor of rank {rank}: {used} dims indexed")
    fill = [("slice", slice(None))] * (rank - used)
    if any(kind == "ellipsis" for kind, _ in items):
        i = next(i for i, (kind, _) in enumerate(items) if kind == "ellipsis")
        # an empty "..." still separates advanced indices (NumPy's placement rule)
        items[i : i + 1] = fill or [("sep", None)]
    else:
        items += fill
    advanced = any(kind in ("array", "mask", "bool0") for kind, _ in items) or (
        mode in ("clip", "drop", "fill") and any(kind == "int" for kind, _ in items)
    )
    # index arrays that broadcast to an empty selection are not bounds-checked (NumPy:
    # a[..., [[0], [5]], [False]] of a (2, 1, 1) array is empty, not an IndexError);
    # integer scalars still are
    empty = False
    if advanced:
        sizes = [
            v.shape if kind == "array" else (int(np.count_nonzero(v)),) if kind == "mask" else ()
            for kind, v in items
            if kind in ("array", "mask")
        ]
        sizes += [(1 if v else 0,) for kind, v in items if kind == "bool0"]
        try:
            empty = int(np.prod(np.broadcast_shapes(*sizes), dtype=np.int64)) == 0
        except ValueError:  # (raised below, with the shapes)
            pass
    p = _Plan()
    wshape, entries = [], []
    d = 0  # operand dim
    for kind, v in items:
        w = len(wshape)  # working dim
        if kind in ("new", "sep"):
            entries.append((kind,))
        elif kind == "bool0":
            wshape.append(1)
            entries.append(("adv", w, np.zeros(1 if v else 0, np.int64)))
        elif kind == "slice":
            n = shape[d]
            start, stop, step = v.indices(n)
            entries.append(("slice", w, start, step, len(range(start, stop, step))))
            wshape.append(n)
            d += 1
        elif kind == "int":
            n = shape[d]
            if mode in ("clip", "drop", "fill"):
                entries.append(("adv", w, _checked(np.array(v, np.int64), d, n, op, mode, masks)))
                wshape.append(n)
                d += 1
                continue
            if not -n <= v < n:
                raise _bounds_error(op, d, n, v)
            i = v + n if v < 0 else v
            entries.append(("adv", w, np.array(i, np.int64)) if advanced else ("int", w, i))
            wshape.append(n)
            d += 1
        elif kind == "array":
            n = shape[d]
            if empty and mode not in ("clip", "drop", "fill"):
                entries.append(("adv", w, np.zeros(v.shape, np.int64)))  # (selects nothing)
            else:
                entries.append(("adv", w, _checked(v, d, n, op, mode, masks)))
            wshape.append(n)
            d += 1
        else:  # mask over dims d .. d + v.ndim - 1, merged into one working dim
            dims = tuple(shape[d : d + v.ndim])
            if v.shape != dims:
                for j, (a, b) in enumerate(zip(v.shape, dims)):
                    if a != b and a != 0:  # an empty mask axis selects nothing (NumPy)
                        raise IndexError(
                            f"{op}: boolean index did not match indexed tensor "
                            f"along axis {d + j}; size of axis is {b} but size "
                            f"of corresponding boolean axis is {a}"
                        )
            entries.append(("adv", w, np.flatnonzero(v)))
            wshape.append(int(np.prod(dims, dtype=np.int64)))
            d += v.ndim
    p.wshape, p.entries, p.advanced = wshape, entries, advanced
    layout = []  # the result's dims before None dims are inserted
    if advanced:
        arrays = [e[2] for e in entries if e[0] == "adv"]
        try:
            b = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            raise IndexError(
                f"{op}: shape mismatch: indexing arrays could not be broadcast "
                f"together with shapes "
                f"{' '.join(str(a.shape) for a in arrays)}"
            ) from None
        where = [i for i, e in enumerate(entries) if e[0] == "adv"]
        p.adjacent = where[-1] - where[0] + 1 == len(where)
        p.bshape = b
    # adjacent advanced indices put their broadcast dims where the first one stands,
    # others put them first (NumPy's rule)
    final = [] if not advanced or p.adjacent else list(b)
    for e in entries:
        if e[0] == "slice":
            layout.append(e[4])
            final.append(e[4])
        elif e[0] == "new":
            final.append(1)
        elif advanced and p.adjacent and e is entries[where[0]]:
            layout.extend(b)
            final.extend(b)
    if advanced and not p.adjacent:
        layout = list(b) + layout
    p.layout, p.shape = layout, tuple(final)
    p.valid = None
    if masks:
        ok = np.broadcast_to(masks[0], p.bshape)
        for m in masks[1:]:
            ok = ok & np.broadcast_to(m, p.bshape)
        if not ok.all():
            b0 = 0
            if p.adjacent:
                first = next(i for i, e in enumerate(entries) if e[0] == "adv")
                b0 = sum(1 for e in entries[:first] if e[0] == "slice")
            view = [1] * b0 + list(p.bshape) + [1] * (len(layout) - b0 - len(p.bshape))
            p.valid = np.broadcast_to(ok.reshape(view), layout).reshape(p.shape)
    return p


# ---------------------------------------------------------------------------------------
# t[key]
# ---------------------------------------------------------------------------------------


def getitem(t, key, mode=None, fill_value=None):
    """``t[key]`` with NumPy's indexing rules (see the module docstring); ``mode`` and
    ``fill_value`` as ``jax.Array.at[key].get``."""
    from .ops import movement as mv

    if type(key) is int and t.ndim and mode is None:  # the common t[i]
        n = t._value.shape[0]
        if not -n <= key < n:
            raise _bounds_error("getitem", 0, n, key)
        i = key + n if key < 0 else key
        out = mv.slice(t, [i] + [0] * (t.ndim - 1), [i + 1] + list(t.shape[1:]))
        return mv.reshape(out, t.shape[1:])
    p = _parse(t.shape, key, "getitem" if mode is None else "at.get", mode)
    x = t
    if tuple(p.wshape) != t.shape:
        x = mv.reshape(x, p.wshape)
    x = _slices(x, p)
    if not p.advanced:
        return mv.reshape(x, p.shape)  # a new Tensor object even for t[...] (copy-on-write)
    if 0 in p.shape:  # nothing to read: an empty result of the right shape, on the tape
        flat = mv.reshape(x, [x.size])
        return mv.reshape(mv.slice(flat, [0], [0]), p.shape)
    if 0 in x.shape:  # mode "fill" on an empty dim: nothing in bounds
        x = mv.pad(
            x,
            _fill_of(t, fill_value),
            [0] * x.ndim,
            [1 if n == 0 else 0 for n in x.shape],
            [0] * x.ndim,
        )
    out = _gather(x, p)
    if p.valid is None:
        return out
    from .ops.elementwise import select

    fill = mv.broadcast_in_dim(_fill_of(t, fill_value), [], list(p.shape))
    return select(_wrap(np.array(p.valid), as_dtype("i1")), out, fill)


def _fill_of(t, fill_value):
    """The 0-d fill of ``.at[].get(mode="fill")``: ``fill_value``, else JAX's defaults
    (NaN for floats, the most negative signed / largest unsigned integer, True)."""
    from .ops._core import as_tensor

    dt = t._dtype
    if fill_value is None:
        fill_value = (
            float("nan")
            if dt.kind in ("float", "complex")
            else dt.min
            if dt.kind == "si"
            else dt.max
            if dt.kind == "ui"
            else True
        )
    return as_tensor(fill_value, dt, "at.get", "fill_value")


def _slices(x, p):
    """Apply the key's slices (reverse, then strided slice); ints of a basic key take
    one element (their dim goes away in the final reshape)."""
    from .ops import movement as mv

    start, limit, strides, flip = [], [], [], []
    for e in p.entries:
        if e[0] in ("new", "sep"):
            continue
        n = p.wshape[e[1]]
        if e[0] == "slice":
            _, d, lo, step, count = e
            if step < 0:  # walk the reversed dim forward: position j there is n-1-j here
                flip.append(d)
                lo = n - 1 - lo
            start.append(lo)
            limit.append(lo + (count - 1) * abs(step) + 1 if count else lo)
            strides.append(abs(step))
        elif e[0] == "int":
            start.append(e[2]), limit.append(e[2] + 1), strides.append(1)
        else:
            start.append(0), limit.append(n), strides.append(1)
    if flip:
        x = mv.reverse(x, flip)
    if (
        any(s != 0 for s in start)
        or any(s != 1 for s in strides)
        or any(lim != n for lim, n in zip(limit, x.shape))
    ):
        x = mv.slice(x, start, limit, strides)
    return x


def _gather(x, p):
    """One gather for the advanced entries of ``p`` on the sliced operand ``x``."""
    from .ops import movement as mv
    from .ops.indexing import gather

    adv = [e for e in p.entries if e[0] == "adv"]
    dims = [e[1] for e in adv]
    b = p.bshape
    nb = len(b)
    if len(adv) == 1:
        si = adv[0][2].reshape(b) if adv[0][2].shape != b else adv[0][2]
    else:
        si = np.stack([np.broadcast_to(e[2], b) for e in adv], axis=-1)
    rest = [d for d in range(x.ndim) if d not in dims]
    if p.adjacent:
        before = sum(1 for d in rest if d < dims[0])
        offset = list(range(before)) + list(range(before + nb, nb + len(rest)))
    else:
        offset = list(range(nb, nb + len(rest)))
    sizes = [1 if d in dims else x.shape[d] for d in range(x.ndim)]
    idx = _wrap(si, as_dtype("i32") if si.dtype == np.int32 else _i64())
    out = gather(x, idx, offset, dims, dims, nb, sizes)
    if out.shape != p.shape:
        out = mv.reshape(out, p.shape)
    return out


# ---------------------------------------------------------------------------------------
# t.at[key].<update>(v), t[key] = v
# ---------------------------------------------------------------------------------------


def _positions(p):
    """The flat (row-major) element positions of the selection, shape ``p.shape``."""
    strides = [1] * len(p.wshape)
    for d in range(len(p.wshape) - 2, -1, -1):
        strides[d] = strides[d + 1] * p.wshape[d + 1]
    rank = len(p.layout)
    nb = len(p.bshape) if p.advanced else 0
    pos = np.zeros([1] * rank, np.int64)
    axis = 0
    b0 = None
    for e in p.entries:
        if e[0] == "slice":
            if p.advanced and not p.adjacent and b0 is None:
                b0, axis = 0, nb
            _, d, lo, step, count = e
            view = [1] * rank
            view[axis] = count
            pos = pos + ((lo + step * np.arange(count, dtype=np.int64)) * strides[d]).reshape(view)
            axis += 1
        elif e[0] == "int":
            pos = pos + e[2] * strides[e[1]]
        elif e[0] == "adv":
            if b0 is None:
                b0 = axis if p.adjacent else 0
                axis = b0 + nb if p.adjacent else nb
            a = e[2].astype(np.int64, copy=False)
            shape = [1] * b0 + [1] * (nb - a.ndim) + list(a.shape) + [1] * (rank - b0 - nb)
            pos = pos + a.reshape(shape) * strides[e[1]]
    return np.broadcast_to(pos, p.layout).reshape(p.shape)


def _update_value(v, dt, op):
    """``v`` as a Tensor of element type ``dt`` (converted with xo.convert)."""
    from .ops._core import as_tensor
    from .ops.conversion import convert
    from .tensor import tensor

    if isinstance(v, Tensor):
        t = v
    elif isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic):
        try:
            return as_tensor(v, dt, op, "value")
        except SpecError:
            t = tensor(v)
    elif isinstance(v, (list, tuple)):
        t = tensor(v)
    else:
        t = as_tensor(v, None, op, "value")
    if t._dtype is dt:
        return t
    if t._dtype.kind == "complex" and dt.kind != "complex":
        raise SpecError(
            op,
            "",
            f"cannot store complex values {t.type} in a {dt.name} tensor "
            f"(take xo.real / xo.imag first)",
        )
    if t._dtype.quantized or dt.quantized:
        raise SpecError(
            op,
            "",
            f"cannot store {t.type} values in a {dt.name} tensor: use "
            f"xo.uniform_quantize / xo.uniform_dequantize",
        )
    return convert(t, dt)


def _overwrite(a, b):
    return b  # scatter recognises this body from its bytecode (the overwrite kernel)


_BODIES = {
    "set": "_overwrite",
    "add": "add",
    "multiply": "multiply",
    "max": "maximum",
    "min": "minimum",
}


def update(t, key, values, how, op=None, mode=None):
    """``t`` with the selection ``t[key]`` combined with ``values`` (``how``: "set",
    "add", "multiply", "min", "max"); a new tensor. ``mode`` "drop" (or "fill") skips
    out-of-bounds index values, "clip" clamps them (as JAX); None raises."""
    from .autodiff.tape import is_grad_enabled
    from .ops import elementwise as ew
    from .ops import movement as mv
    from .ops.indexing import scatter

    op = op or f"at.{how}"
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    p = _parse(t.shape, key, op, mode)
    dt = t._dtype
    v = _update_value(values, dt, op)
    sel = p.shape
    if v.shape != sel:
        vs = v.shape
        while len(vs) > len(sel) and vs[0] == 1:  # NumPy drops leading size-1 dims
            vs = vs[1:]
        try:
            if len(vs) > len(sel) or np.broadcast_shapes(vs, sel) != tuple(sel):
                raise ValueError
        except ValueError:
            raise SpecError(
                op, "", f"could not broadcast value {v.type} to the selection's shape {list(sel)}"
            ) from None
        if vs != v.shape:
            v = mv.reshape(v, vs)
        v = mv.broadcast_in_dim(v, list(range(len(sel) - len(vs), len(sel))), list(sel))
    pos = _positions(p)
    if p.valid is not None:  # dropped updates: a flat position past the end is skipped
        pos = np.where(p.valid, pos, t.size)
    pos = pos.reshape(-1, 1)
    n = pos.shape[0]
    flat = mv.reshape(t, [t.size])
    upd = mv.reshape(v, [n])
    body = _overwrite if how == "set" else getattr(ew, _BODIES[how])
    recorded = is_grad_enabled() and (t.requires_grad or v.requires_grad)
    if how in ("set", "add") or not recorded or n == 0:
        out = scatter(flat, _wrap(pos, _i64()), upd, [], [0], [0], 1, update_computation=body)
    else:
        out = _rounds(flat, pos[:, 0], upd, body)
    return mv.reshape(out, t.shape)


def _rounds(flat, pos, upd, body):
    """multiply / min / max with gradients: round r applies every target's r-th update
    (in schedule order) with a unique-index gather, ``body``, scatter-set, so every
    step has a gradient rule and the values equal one scatter with ``body``."""
    from .ops.indexing import gather, scatter
    from .ops.movement import reshape

    src = np.flatnonzero(pos < flat.size)  # dropped updates take no round
    pos = pos[src]
    if not pos.size:
        return flat
    order = np.argsort(pos, kind="stable")
    sp = pos[order]
    start = np.ones(sp.size, bool)
    start[1:] = sp[1:] != sp[:-1]
    ranks = np.empty(sp.size, np.int64)
    idx = np.arange(sp.size)
    ranks[order] = idx - np.maximum.accumulate(np.where(start, idx, 0))
    out = flat
    for r in range(int(ranks.max()) + 1):
        which = np.flatnonzero(ranks == r)
        where = _wrap(pos[which].reshape(-1, 1), _i64())
        cur = gather(out, where, [], [0], [0], 1, [1])
        u = gather(upd, _wrap(src[which].reshape(-1, 1), _i64()), [], [0], [0], 1, [1])
        out = scatter(
            out,
            where,
            reshape(body(cur, u), [which.size]),
            [],
            [0],
            [0],
            1,
            update_computation=_overwrite,
            unique_indices=True,
        )
    return out


class _AtIndex:
    __slots__ = ("_key", "_t")

    def __init__(self, t, key):
        self._t, self._key = t, key

    # mode (as JAX): None / "promise_in_bounds" raise on an out-of-bounds index, "clip"
    # clamps it; get: "fill" / "drop" give fill_value there; updates: "drop" skips it

    def get(self, mode=None, fill_value=None):
        """``t[key]``."""
        if mode == "drop":
            mode = "fill"
        return getitem(self._t, self._key, mode, fill_value)

    def set(self, values, mode=None):
        """A new tensor with ``t[key]`` replaced by ``values`` (duplicates: last wins)."""
        return update(self._t, self._key, values, "set", mode=mode)

    def add(self, values, mode=None):
        """A new tensor with ``values`` added at ``t[key]`` (duplicates accumulate)."""
        return update(self._t, self._key, values, "add", mode=mode)

    def multiply(self, values, mode=None):
        """A new tensor with ``t[key]`` multiplied by ``values`` (duplicates: all)."""
        return update(self._t, self._key, values, "multiply", mode=mode)

    mul = multiply

    def min(self, values, mode=None):
        """A new tensor with ``minimum(t[key], values)`` at ``t[key]``."""
        return update(self._t, self._key, values, "min", mode=mode)

    def max(self, values, mode=None):
        """A new tensor with ``maximum(t[key], values)`` at ``t[key]``."""
        return update(self._t, self._key, values, "max", mode=mode)

    def __repr__(self):
        return f"<{self._t.type}.at[{self._key!r}]>"


class At:
    """``t.at``: index it (``t.at[key]``) for functional updates, as ``jax.Array.at``."""

    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def __getitem__(self, key):
        return _AtIndex(self._t, key)


def setitem(t, key, value):
    """``t[key] = value``: rebind ``t`` to ``t.at[key].set(value)`` (copy-on-write)."""
    from .autodiff.tape import rebind

    rebind(t, lambda old: update(old, key, value, "set", op="setitem"), "setitem")
