"""Sorting: stablehlo.sort and XLA's TopK.

* **sort** always returns the *stable* order, also for ``is_stable=False`` (the spec
  allows any order of comparator-equal elements then; xops picks the stable one).
  ``dimension`` may be negative (004 C4). The comparator gets ``(lhs_0, rhs_0, lhs_1,
  rhs_1, ...)`` and must be a strict weak order. With FLOAT compare, NaN is not ordered
  (the spec's precondition fails); the fast path then orders every NaN after +inf
  (LT: last, GT: first), as one value. TOTALORDER orders NaNs by sign and payload.
* **top_k** (XLA TopK, seed 001): along the last dim, ``largest`` or smallest, ties in
  order of index; floats compare by totalOrder (+NaN largest, -NaN smallest, -0 < +0).
  Indices are i32.

**Fast paths.** sort with
``xo.compare(lhs_0, rhs_0, "LT" | "GT"[, compare_type])`` on the first operand (the
others are passengers) maps the keys to unsigned integers with a Numba kernel
(totalOrder bits, or FLOAT order) and sorts them with NumPy's SIMD sort (a stable
argsort appends the position to keys of up to 32 bits, so the fast unstable sort
applies); any other comparator runs a bottom-up merge sort whose comparisons are
vectorised over a whole merge level (about log2(n)^2 / 2 comparator calls on all
elements at once). top_k runs a row-parallel Numba heap kernel for k <= 256, a stable
sort of each row otherwise.
"""

import numpy as np

from ..autodiff.helpers import zeros_like as _zeros_like
from ..autodiff.tape import keep, primitive
from ..dtypes import as_dtype, from_compute
from ..kernels import indexing as K
from ..tensor import _wrap
from ._core import as_tensor, attr_bool, attr_int, check, compute, operands, tstr
from . import _device_grads
from ._bodies import call, check_arity, compare_call, outputs
from ._indexing_common import _UINT_BY_SIZE, _prod, _ro, _variadic, _zero_d
from .reduction import _check_shapes
from .scatter import scatter

__all__ = ["sort", "top_k"]

_TOP_K_BUFFER = 256  # top_k: the row kernel's heap; larger k sort the whole row


# ---------------------------------------------------------------------------------------
# sort
# ---------------------------------------------------------------------------------------


def _default_comparator(lhs, rhs, *passengers):
    """Ascending on the first operand: TOTALORDER for floats, the type's default compare
    otherwise (the comparator of ``xo.sort(x)`` when none is given)."""
    from .elementwise import compare

    return compare(lhs, rhs, "LT", "TOTALORDER" if lhs.dtype.is_float else None)


@primitive("sort", quantized_params=("inputs",), body_params=("comparator",))
def sort(inputs, dimension=-1, is_stable=False, comparator=None):
    """stablehlo.sort: sort ``inputs`` together along ``dimension`` by ``comparator``.

    ``comparator(lhs_0, rhs_0, lhs_1, rhs_1, ...)`` returns an i1 "lhs < rhs"; it must be
    a strict weak order. The default sorts ascending on the first operand (TOTALORDER for
    floats: -NaN first, +NaN last, -0 before +0), the others follow. ``dimension`` may
    be negative (004 C4). A Tensor gives a Tensor, a sequence a tuple. The order is
    always stable (see the module docstring).

    >>> xo.sort(xo.tensor([3.0, 1.0, 2.0]))   # [1, 2, 3]
    xo.tensor([1., 2., 3.], f32[3])
    >>> k, v = xo.sort([xo.tensor([2, 1, 2]), xo.tensor([10, 20, 30])], 0,
    ...                comparator=lambda a, b, c, d: xo.compare(a, b, "GT"))  # [2,2,1] [10,30,20]
    """
    xs, seq, dim, cmp = sort_checks(inputs, dimension, is_stable, comparator)
    keep("sort", dimension=dim)
    res = _sort_impl(xs, dim, cmp)
    return tuple(res) if seq else res[0]


def sort_checks(inputs, dimension, is_stable, comparator, stand_in=_zero_d):
    """sort's constraint checks (the CUDA kernel runs them too): ``(inputs as Tensors,
    given as a sequence, dimension in [0, rank), comparator)``. The comparator is tried
    on 0-d ``stand_in(x)`` values of each input's type (a CPU tensor each)."""
    op = "sort"
    xs, seq = _variadic(op, inputs, "inputs")
    _check_shapes(op, ("C1", "C3"), xs)
    r = xs[0].ndim
    dim = attr_int(op, "I2", "dimension", dimension)
    check(
        -r <= dim < r,
        op,
        "C4",
        lambda: f"dimension must be in [-{r}, {r}) for {tstr(xs[0])}, got {dim}",
    )
    attr_bool(op, "I3", "is_stable", is_stable)
    cmp = _default_comparator if comparator is None else comparator
    check(callable(cmp), op, "C5", lambda: f"comparator must be callable, got {cmp!r}")
    _check_comparator(xs, cmp, stand_in)
    return xs, seq, dim % r, cmp


def _check_comparator(xs, cmp, stand_in):
    """C5: the comparator maps 2N 0-d values of the inputs' types to a 0-d i1."""
    check_arity("sort", "C5", "comparator", cmp, 2 * len(xs))
    args = [z for x in xs for z in (stand_in(x),) * 2]
    (out,) = outputs("sort", "C5", "comparator", cmp(*args), 1)
    check(
        out.ndim == 0 and out._dtype.kind == "bool",
        "sort",
        "C5",
        lambda: f"comparator must return a 0-d i1 tensor, got {tstr(out)}",
    )


def _comparator_plan(cmp, n):
    """(direction, compare_type) if ``cmp`` is ``xo.compare(lhs_0, rhs_0, "LT" | "GT"[,
    compare_type])`` (the 2n parameters in order, only the first two used), else None."""
    if cmp is _default_comparator:
        return "LT", "DEFAULT_TOTAL"
    call = compare_call(cmp, 2 * n)
    if call is None or call[0] not in ("LT", "GT"):
        return None
    return call


def _sort_impl(xs, dim, cmp):
    moved = [np.moveaxis(x._value, dim, -1) for x in xs]
    plan = _comparator_plan(cmp, len(xs))
    out = None
    if plan is not None and xs[0]._dtype.kind != "complex":
        out = _sort_fast(xs, moved, *plan)
    if out is None:
        out = _sort_generic(xs, moved, cmp)
    return [_wrap(np.ascontiguousarray(np.moveaxis(a, -1, dim)), x._dtype) for a, x in zip(out, xs)]


def _sort_keys(a, dt, ctype, descending):
    """Unsigned integer keys of holder array ``a`` (element type dt) ordered as
    ``compare(., ., LT, ctype)`` orders them (reversed if ``descending``), and
    ``decode``: a function from sorted keys back to holder values, or None where keys
    do not determine values (then only a permutation may be taken)."""
    a = np.ascontiguousarray(a)
    if dt.kind == "float" and dt.name != "f8E8M0FNU" and ctype in ("TOTALORDER", "DEFAULT_TOTAL"):
        width = np.uint64 if dt.itemsize == 8 else np.uint32
        u = a.view(_UINT_BY_SIZE[dt.itemsize]).astype(width, copy=False)
        sign, full = width(1 << (dt.bits - 1)), width((1 << dt.bits) - 1)
        keys = np.empty(a.shape, width)
        K.total_order_keys(a.size, _ro(u.reshape(-1)), sign, full, descending, keys.reshape(-1))

        def decode(k):
            k = np.ascontiguousarray(k)
            v = np.empty(k.shape, width)
            K.total_order_decode(k.size, _ro(k.reshape(-1)), sign, full, descending, v.reshape(-1))
            return v.astype(_UINT_BY_SIZE[dt.itemsize], copy=False).view(dt.np)

        return keys, decode
    if dt.kind == "float":  # FLOAT compare: -0 = +0, NaN unordered (after +inf here)
        x = np.ascontiguousarray(compute(_wrap(a, dt)))
        width = np.uint64 if x.dtype == np.float64 else np.uint32
        bits = 64 if width is np.uint64 else 32
        sign, full = width(1 << (bits - 1)), width((1 << bits) - 1)
        keys = np.empty(x.shape, width)
        special = K.float_order_keys(
            x.size,
            _ro(x.reshape(-1)),
            _ro(x.view(width).reshape(-1)),
            sign,
            full,
            descending,
            keys.reshape(-1),
        )
        if special:
            return keys, None

        def decode(k):  # no NaN and no -0: the keys are totalOrder keys of x
            k = np.ascontiguousarray(k)
            v = np.empty(k.shape, width)
            K.total_order_decode(k.size, _ro(k.reshape(-1)), sign, full, descending, v.reshape(-1))
            return from_compute(v.view(x.dtype), dt)

        return keys, decode
    # integers and i1 (and f8E8M0FNU, whose bit pattern order is its value order)
    v = a.view(np.uint8) if dt.name == "f8E8M0FNU" else compute(_wrap(a, dt))
    if v.dtype == np.bool_:
        v = v.view(np.uint8)
    if descending:
        v = ~v
    v = np.ascontiguousarray(v)

    def decode_int(k):
        k = ~k if descending else k
        if dt.name == "f8E8M0FNU":
            return k.view(dt.np)
        if dt.kind == "bool":
            return k.view(np.bool_)
        return from_compute(k, dt)

    return v, decode_int


def _stable_argsort(keys):
    """Stable argsort along the last axis. Keys of at most 32 bits are made unique by
    appending the position (key << 32 | i), so NumPy's fast (SIMD) sort of uint64
    applies; wider keys use NumPy's stable sort."""
    n = keys.shape[-1]
    if keys.dtype.itemsize <= 4 and n < (1 << 32):
        if keys.dtype.kind == "i":  # order-preserving map to unsigned
            keys = keys.astype(np.int64) - np.int64(np.iinfo(keys.dtype).min)
        comp = keys.astype(np.uint64) << np.uint64(32)
        comp |= np.arange(n, dtype=np.uint64)
        comp.sort(axis=-1)
        return (comp & np.uint64(0xFFFFFFFF)).astype(np.intp)
    return np.argsort(keys, axis=-1, kind="stable")


def _sort_fast(xs, moved, direction, ctype):
    dt = xs[0]._dtype
    keys, decode = _sort_keys(moved[0], dt, ctype, direction == "GT")
    if len(xs) == 1 and decode is not None:
        # keys determine values: sort them (equal keys are equal bits, so any order of
        # equal keys is the stable one)
        return [decode(np.sort(keys, axis=-1))]
    perm = _stable_argsort(keys)
    return [np.take_along_axis(a, perm, axis=-1) for a in moved]


def _sort_generic(xs, moved, cmp):
    """Bottom-up merge sort of the rows, vectorised over a whole merge level.

    Each element of a left run finds, by binary search, how many elements of its right
    partner run are strictly before it (``cmp(right_j, me)``); all these searches probe
    together, one comparator call per step on every element at once (about
    log2(width) calls per level). The left elements' counts are made non-decreasing
    along the run (a no-op for a strict weak order; for a comparator that is not one it
    keeps the result a permutation), the left elements go to position own + count and
    the right ones fill the remaining slots in order, which is the stable merge: a
    right element goes after every comparator-equal left element.
    """
    shape = moved[0].shape
    n = shape[-1]
    rows = _prod(shape[:-1])
    cur = [np.ascontiguousarray(a).reshape(-1) for a in moved]
    dts = [x._dtype for x in xs]
    i1 = as_dtype("i1")
    if n < 2 or rows == 0:
        return [c.reshape(shape) for c in cur]
    p = np.arange(n, dtype=np.int64)
    base = (np.arange(rows, dtype=np.int64) * n)[:, None]
    width = 1
    while width < n:
        run = p // width
        left = ((run & 1) == 0) & ((run + 1) * width < n)  # left runs that have a partner
        lo0 = np.minimum((run + 1) * width, n)
        hi0 = np.minimum(lo0 + width, n)
        cols = np.nonzero(left)[0]
        me = (base + cols).reshape(-1)
        lo = np.broadcast_to(lo0[cols], (rows, cols.size)).reshape(-1).copy()
        hi = np.broadcast_to(hi0[cols], (rows, cols.size)).reshape(-1).copy()
        row0 = np.broadcast_to(base, (rows, cols.size)).reshape(-1)
        active = np.arange(me.size)
        while active.size:
            mid = (lo[active] + hi[active]) // 2
            other = row0[active] + mid
            mine = me[active]
            args = []
            for f, dt in zip(cur, dts):
                args += [_wrap(f[other], dt), _wrap(f[mine], dt)]
            # right_mid before me:
            (before,) = call("sort", "C5", "comparator", cmp, args, [i1], active.shape)
            lo[active] = np.where(before, mid + 1, lo[active])
            hi[active] = np.where(before, hi[active], mid)
            active = active[lo[active] < hi[active]]
        nruns = -(-n // width)
        count = np.zeros((rows, nruns * width), np.int64)
        count[:, cols] = (lo - np.broadcast_to(lo0[cols], (rows, cols.size)).reshape(-1)).reshape(
            rows, cols.size
        )
        count = np.maximum.accumulate(count.reshape(rows, nruns, width), axis=2)
        count = count.reshape(rows, -1)[:, :n]
        stays = ~left & (run & 1 == 0)  # a last run without partner keeps its place
        dest_left = base + (run >> 1) * 2 * width + (p - run * width) + count
        movers = left | stays
        occupied = np.zeros(rows * n, bool)
        dl = dest_left[:, movers].reshape(-1)
        occupied[dl] = True
        dest_right = np.flatnonzero(~occupied)
        nxt = []
        for f in cur:
            g = np.empty_like(f)
            f2 = f.reshape(rows, n)
            g[dl] = f2[:, movers].reshape(-1)
            g[dest_right] = f2[:, ~movers].reshape(-1)
            nxt.append(g)
        cur = nxt
        width *= 2
    return [c.reshape(shape) for c in cur]


@sort.defvjp
def _sort_vjp(g, out, inputs, dimension, is_stable, comparator):
    """Each input's cotangent is g un-permuted: a gather of g at the inverse of the sort
    permutation (found by sorting an iota alongside), batched over the other dims."""
    xs, seq = _variadic("sort", inputs, "inputs")
    gs = list(g) if isinstance(g, tuple) else [g]
    dim = dimension  # (kept parsed by the op: in [0, rank))
    cmp = _default_comparator if comparator is None else comparator
    if any(x.device.kind != "cpu" for x in xs):  # the permutation found on the device
        plan = _comparator_plan(cmp, len(xs))
        if plan is None or xs[0]._dtype.kind == "complex":  # (the device's generic sort)
            grads = _device_grads.sort_grads_generic(sort, xs, gs, dim, cmp)
        else:
            grads = _device_grads.sort_grads(sort, xs, gs, dim, plan)
        return ((grads if seq else grads[0]),)
    perm = _sort_permutation(xs, dim, cmp)
    inv = np.argsort(perm, axis=dim, kind="stable")
    idx = _wrap(inv[..., None], as_dtype("i64"))
    grads = _device_grads.unpermute(xs, gs, idx, dim)
    return ((grads if seq else grads[0]),)


def _sort_permutation(xs, dim, cmp):
    """The stable permutation sort applies along ``dim`` (for gradients): sort an iota
    alongside as the last passenger."""
    shape = xs[0].shape
    iota = np.broadcast_to(
        np.arange(shape[dim], dtype=np.int64).reshape(
            [-1 if d == dim else 1 for d in range(len(shape))]
        ),
        shape,
    )
    it = _wrap(np.ascontiguousarray(iota), as_dtype("i64"))
    plan = _comparator_plan(cmp, len(xs))
    moved = [np.moveaxis(x._value, dim, -1) for x in xs + [it]]
    out = None
    if plan is not None and xs[0]._dtype.kind != "complex":
        keys, _ = _sort_keys(moved[0], xs[0]._dtype, plan[1], plan[0] == "GT")
        out = np.take_along_axis(moved[-1], _stable_argsort(keys), axis=-1)
    if out is None:

        def with_iota(*args):
            return cmp(*args[:-2])

        out = _sort_generic(xs + [it], moved, with_iota)[-1]
    return np.ascontiguousarray(np.moveaxis(out, -1, dim))


# ---------------------------------------------------------------------------------------
# top_k (XLA TopK)
# ---------------------------------------------------------------------------------------


@primitive("top_k", quantized="dequantize", spec="xla")
def top_k(operand, k, largest=True):
    """XLA TopK (seed 001): the ``k`` largest (or smallest) entries along the last dim
    and their indices, as ``(values, indices)`` with ``indices`` i32; equal values come
    in order of index. Floats compare by totalOrder (+NaN largest, -0 < +0). XLA has no
    constraint labels; xops uses I1 (rank >= 1), I2 (0 <= k <= last dim), I3 (largest
    is a bool).

    >>> xo.top_k(xo.tensor([1.0, 5.0, 3.0, 5.0]), 2)   # ([5, 5], [1, 3])
    (xo.tensor([5., 5.], f32[2]), xo.tensor([1, 3], i32[2]))
    """
    x, kk, largest = top_k_checks(operand, k, largest)
    dt = x._dtype
    n = x.shape[-1]
    keys, _ = _sort_keys(x._value, dt, "TOTALORDER", largest)
    rows = _prod(x.shape[:-1])
    if 0 < kk <= _TOP_K_BUFFER and kk < n and rows:
        # a row-parallel kernel: each row keeps its k best in a small heap
        if keys.dtype.kind == "i":  # order-preserving map to unsigned, one kernel type
            keys = (keys.astype(np.int64) ^ np.int64(-1 << 63)).view(np.uint64)
        else:
            keys = keys.astype(np.uint64, copy=False)
        idx = np.empty((rows, kk), np.int64)
        K.top_k_rows(keys.size, _ro(np.ascontiguousarray(keys).reshape(rows, n)), kk, idx)
        idx = idx.reshape(x.shape[:-1] + (kk,))
    elif kk == 0:
        idx = np.zeros(x.shape[:-1] + (0,), np.int64)
    else:
        idx = _stable_argsort(keys)[..., :kk]
    values = np.take_along_axis(x._value, idx, axis=-1)
    return _wrap(np.ascontiguousarray(values), dt), _wrap(idx.astype(np.int32), as_dtype("i32"))


def top_k_checks(operand, k, largest):
    """top_k's checks, on the operand's type only (the CUDA kernel runs them too):
    ``(operand tensor, k, largest as a bool)``."""
    op = "top_k"
    x = operands(op, operand, names=["operand"])[0]
    check(x.ndim >= 1, op, "I1", lambda: f"operand must have rank >= 1, got {tstr(x)}")
    kk = attr_int(op, "I2", "k", k)
    n = tuple(x.shape)[-1]  # (a tuple: a CUDA simulator shape refuses index -1)
    check(
        0 <= kk <= n,
        op,
        "I2",
        lambda: f"k must be in [0, {n}] (the last dim of {tstr(x)}), got {kk}",
    )
    attr_bool(op, "I3", "largest", largest)
    check(
        x._dtype.kind != "complex",
        op,
        "I1",
        lambda: f"operand must have a real or integer element type, got {tstr(x)}",
    )
    return x, kk, bool(largest)


@top_k.defvjp
def _top_k_vjp(g, out, operand, k, largest):
    """Scatter the values' cotangent into zeros at the returned indices (row by row)."""
    x = as_tensor(operand)
    gv = g[0] if isinstance(g, tuple) else g
    r = x.ndim
    from .elementwise import add

    batch = list(range(r - 1))
    return (
        scatter(
            _zeros_like(x),
            out[1],
            gv,
            [],
            [r - 1],
            [r - 1],
            r,
            update_computation=add,
            input_batching_dims=batch,
            scatter_indices_batching_dims=batch,
        ),
        None,
        None,
    )
