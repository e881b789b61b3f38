"""CUDA kernel of ``sort``: a stable, row-parallel bottom-up merge sort of unsigned keys.

The CPU op's checks (:func:`xops.ops.sorting.sort_checks`) run first; the comparator is
tried on 0-d CPU zeros of the inputs' types, so no data is read on the host. The kernel
takes the comparators the CPU op's fast path recognises: ``xo.compare(lhs_0, rhs_0, "LT" |
"GT"[, compare_type])`` on the first operand (the others are passengers), and the default
comparator (ascending, totalOrder for floats). Any other comparator, and complex keys,
run the CPU's generic merge sort in xops ops on the device (:func:`_sort_generic`,
session 22; bit for bit as the CPU: the same comparator calls decide the same
destinations), and so does their gradient.

It sorts exactly as the CPU fast path does, so results are bit-exact with it, the order of
equal keys included (always the stable order, as on the CPU, whatever ``is_stable``):

1. **keys** (output-parallel, one thread per element): each element of the first operand
   becomes a uint64 key whose order is the comparator's, read from its raw bits: signed
   integers with the sign bit flipped, unsigned as they are; floats by IEEE totalOrder
   (TOTALORDER and the default comparator: -NaN < -inf < ... < -0 < +0 < ... < +NaN) or,
   for FLOAT compare, by value with -0 = +0 and every NaN one value above +inf; 1-byte
   types (i1, si8/ui8, the f8 and sub-byte types) through a 256-entry table made by the
   CPU op's own key function. ``GT`` complements the key. Keys are laid out row by row
   (a row: the elements along ``dimension``), beside their positions in the row.
2. **runs** (one thread per run of ``RUN`` elements): a stable insertion sort of the run.
3. **merge levels** (one thread per element, ``log2(n / RUN)`` launches): each element
   finds its place in the merged pair of runs by a binary search in the partner run
   (a left element counts the partner's keys strictly below its own, a right element
   those at or below its own), which is the stable merge; keys and positions go to the
   other buffer (ping-pong). Every thread writes only its own destination.
4. **permute** (output-parallel): every operand is gathered along ``dimension`` by the
   sorted positions, as raw bits (any element type can be a passenger).

All rows sort at once in every step; nothing depends on the thread count.
"""

import math

import numpy as np
from numba import cuda

from ...autodiff.tape import keep
from ...dtypes import as_dtype
from ...ops.reduction import _body_call
from ...ops.sorting import _comparator_plan, _sort_keys, sort_checks, top_k_checks
from ...tensor import _wrap
from ...registry import op as _op
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d, on_device

__all__ = ["KERNELS", "RUN"]

RUN = 8  # elements per run of the insertion-sort pass
_I32 = as_dtype("i32")
_I64 = as_dtype("i64")
_UNSIGNED, _SIGNED, _TOTAL, _FLOAT, _TABLE = range(5)  # key modes


@cuda.jit(device=True)
def _unravel3(i, d1, d2):
    """(i0, i1, i2) of flat index i into a C-ordered (., d1, d2) array."""
    rest = i // d2
    i0 = rest // d1
    return i0, rest - i0 * d1, i - rest * d2


def _keys(src, table, mode, sign, full, infb, desc, n, inner, keys, pos):
    """Element t of the row layout (row r = t // n, position j): the key of
    src[(o * n + j) * inner + b], where the row r is (o, b)."""
    t = cuda.grid(1)
    if t < keys.shape[0]:
        o, b, j = _unravel3(t, inner, n)
        v = np.uint64(src[(o * n + j) * inner + b])
        if mode == 0:
            k = v
        elif mode == 1:
            k = v ^ sign
        elif mode == 2:
            k = full - v if v & sign else v | sign
        elif mode == 3:
            a = v & (full ^ sign)
            if a > infb:  # NaN: one value above +inf
                k = full
            elif a == 0:  # -0 counts as +0
                k = sign
            else:
                k = full - v if v & sign else v | sign
        else:
            k = table[v]
        if desc:
            k = ~k
        keys[t] = k
        pos[t] = j


def _runs(keys, pos, n, nruns, total):
    """A stable insertion sort of run s (of RUN elements) of row r, thread r * nruns + s."""
    t = cuda.grid(1)
    if t < total:
        r = t // nruns
        s = (t - r * nruns) * RUN
        base = r * n + s
        e = RUN if n - s > RUN else n - s
        for a in range(1, e):
            key = keys[base + a]
            p = pos[base + a]
            b = a - 1
            while b >= 0 and keys[base + b] > key:
                keys[base + b + 1] = keys[base + b]
                pos[base + b + 1] = pos[base + b]
                b -= 1
            keys[base + b + 1] = key
            pos[base + b + 1] = p


def _merge(ka, pa, kb, pb, n, width):
    """Element t's place in the stable merge of its run (of ``width``) and the partner run;
    writes it to kb/pb."""
    t = cuda.grid(1)
    if t < ka.shape[0]:
        r = t // n
        j = t - r * n
        base = r * n
        start = (j // (2 * width)) * (2 * width)
        mid = start + width if start + width < n else n
        end = start + 2 * width if start + 2 * width < n else n
        key = ka[t]
        if j < mid:  # left run: after the partner's keys strictly below mine
            lo = mid
            hi = end
            while lo < hi:
                m = (lo + hi) // 2
                if ka[base + m] < key:
                    lo = m + 1
                else:
                    hi = m
            dest = j + (lo - mid)
        else:  # right run: after the partner's keys at or below mine
            lo = start
            hi = mid
            while lo < hi:
                m = (lo + hi) // 2
                if ka[base + m] <= key:
                    lo = m + 1
                else:
                    hi = m
            dest = start + (j - mid) + (lo - start)
        kb[base + dest] = key
        pb[base + dest] = pa[t]


def _permute(src, pos, n, inner, out):
    """out[(o, j, b)] = src[(o, pos[row (o, b), j], b)]."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        o, j, b = _unravel3(i, n, inner)
        out[i] = src[(o * n + pos[(o * inner + b) * n + j]) * inner + b]


def _raw(devarr):
    """A flat view of a device array as unsigned integers of its item size (complex128:
    as it is): data moves as raw bits, one kernel specialisation per size."""
    a = flat(devarr)
    size = a.dtype.itemsize
    return a.view(np.dtype(f"u{size}")) if size in (1, 2, 4, 8) else a


def _zero_stand_in(x):
    """A 0-d CPU zero of x's element type: what the comparator check is tried on (the
    CPU op takes x's first element; reading it here would be a host round trip)."""
    return _wrap(np.zeros((), x._dtype.np), x._dtype)


_tables = {}


def _table(dt, ctype, descending):
    """The 256 keys (uint64, on the device) of a 1-byte element type's bit patterns, made
    by the CPU op's key function (cached per type and order)."""
    key = (dt.name, ctype, descending)
    t = _tables.get(key)
    if t is None:
        patterns = np.arange(256, dtype=np.uint8).view(dt.np)
        keys, _ = _sort_keys(patterns, dt, ctype, descending)
        if keys.dtype.kind == "i":  # order-preserving map to unsigned
            keys = (keys.astype(np.int64) ^ np.int64(-(1 << 63))).view(np.uint64)
        t = _tables[key] = cuda.to_device(keys.astype(np.uint64))
    return t


def _key_plan(dt, ctype, descending):
    """(mode, sign, full, infb, desc, table) of the keys kernel for the first operand's
    element type dt, as the CPU op's _sort_keys orders it."""
    if dt.itemsize == 1:
        return _TABLE, 0, 0, 0, False, _table(dt, ctype, descending)
    bits = dt.bits
    sign, full = 1 << (bits - 1), (1 << bits) - 1
    infb = 0
    if dt.kind == "float" and ctype in ("TOTALORDER", "DEFAULT_TOTAL"):
        mode = _TOTAL
    elif dt.kind == "float":
        mode = _FLOAT
        infb = int(np.array(np.inf, dt.np).view(np.dtype(f"u{dt.itemsize}")))
    else:  # integers (a quantized type: its storage integers, as on the CPU)
        mode = _SIGNED if np.dtype(dt.np).kind == "i" else _UNSIGNED
    return mode, sign, full, infb, descending, None


def sort(inputs, dimension=-1, is_stable=False, comparator=None):
    """The kernel; it takes the arguments as the CPU op does (same signature)."""
    xs, seq, dim, cmp = sort_checks(inputs, dimension, is_stable, comparator, _zero_stand_in)
    keep("sort", dimension=dim)
    for i, x in enumerate(xs):
        on_device("sort", x, f"inputs[{i}]")
    plan = _comparator_plan(cmp, len(xs))
    dt = xs[0]._dtype
    if plan is None or dt.kind == "complex":  # (the generic merge sort, in xops ops)
        res = _sort_generic(xs, dim, cmp)
        return tuple(res) if seq else res[0]
    shape = xs[0].shape
    n = shape[dim]
    inner = math.prod(shape[dim + 1 :])
    outs = [device_empty(shape, x._dtype.np) for x in xs]
    if xs[0].size:
        pos = _sorted_positions(xs[0], n, inner, plan[1], plan[0] == "GT")
        for x, out in zip(xs, outs):
            launch_1d(_k(_permute), x.size, _raw(x._value), pos, n, inner, _raw(out))
    res = [from_holder(out, x._dtype) for out, x in zip(outs, xs)]
    return tuple(res) if seq else res[0]


def _sort_generic(xs, dim, cmp):
    """Any comparator (and complex keys): the CPU's merge sort (xops.ops.sorting.
    _sort_generic) in xops ops on device tensors. The sort dimension goes last and the
    rows are flattened; level by level (run width 1, 2, 4, ...) every element of a left
    run finds by binary search how many elements of its partner run come before it
    (``cmp(right_j, me)``: a fixed number of halvings, one comparator call on every
    element at once per step), the counts are made non-decreasing along the run (a
    prefix maximum: a no-op for a strict weak order), the left elements go to own +
    count, and each right element q past the left elements of its partner whose count is
    at most q (a binary search over those counts), to q + their number: the stable merge,
    the CPU's destinations. Every operand is then scattered to its destinations. Index
    arithmetic that depends on the shapes alone is NumPy's, copied to the device."""
    op = "sort"
    xs = [from_holder(x._value, x._dtype) for x in xs]
    shape, r = list(xs[0].shape), xs[0].ndim
    n = shape[dim]
    rows = math.prod(shape) // n if n else 0
    if n < 2 or rows == 0:
        return xs
    order = [d for d in range(r) if d != dim] + [dim]
    moved = [x if dim == r - 1 else _op.transpose(x, order) for x in xs]
    cur = [_op.reshape(x, [rows * n]) for x in moved]
    total = rows * n
    i1 = as_dtype("i1")

    def dev(a, dt=_I64):  # a host array of the shapes' arithmetic, per row, on the device
        a = np.broadcast_to(a, (rows, n))
        return _wrap(np.ascontiguousarray(a, dt.np).reshape(-1), dt).to("cuda")

    def at(t, idx):  # t[idx] for a flat tensor t and an int64 index tensor
        return _op.gather(t, _op.reshape(idx, [total, 1]), [], [0], [0], 1, [1])

    def search(lo, hi, goes_right):  # the first place in [lo, hi) where not goes_right
        for _ in range(width.bit_length()):  # (ranges of at most ``width`` elements)
            active = _op.compare(lo, hi, "LT")
            mid = _op.divide(_op.add(lo, hi), 2)
            right = goes_right(_op.minimum(mid, total - 1))
            lo = _op.select(_op.and_(active, right), _op.add(mid, 1), lo)
            hi = _op.select(_op.and_(active, _op.not_(right)), mid, hi)
        return lo

    p = np.arange(n, dtype=np.int64)
    base = np.arange(rows, dtype=np.int64)[:, None] * n
    width = 1
    while width < n:
        run = p // width
        left = ((run & 1) == 0) & ((run + 1) * width < n)  # left runs with a partner
        lo0 = base + np.minimum((run + 1) * width, n)  # the partner run, flat
        hi0 = base + np.minimum((run + 1) * width + width, n)

        def before(other):  # the partner's element at ``other`` comes before me
            args = []
            for f in cur:
                args += [at(f, other), f]
            (b,) = _body_call(op, "C5", "comparator", cmp, args, [total], [i1])
            return b

        found = search(dev(lo0), dev(hi0), before)
        count = _op.select(dev(left, i1), _op.subtract(found, dev(lo0)), dev(0))
        count = _prefix_max(count, rows, n, width)
        first = base + (run >> 1) * 2 * width  # the merged pair's start, flat
        q = p - run * width  # the place in the own run
        dest_left = _op.add(dev(first + q), count)
        partner = base + (run - 1) * width  # a right run's left partner (full), flat
        qd = dev(q)
        at_most_q = lambda m: _op.compare(at(count, m), qd, "LE")  # noqa: E731
        past = search(dev(partner), dev(partner + width), at_most_q)
        dest_right = _op.add(dev(first + q), _op.subtract(past, dev(partner)))
        dest = _op.select(dev((run & 1) == 1, i1), dest_right, dest_left)
        idx = _op.reshape(dest, [total, 1])
        cur = [_op.scatter(f, idx, f, [], [0], [0], 1, update_computation=_overwrite) for f in cur]
        width *= 2
    out = [_op.reshape(f, list(moved[0].shape)) for f in cur]
    if dim != r - 1:
        back = [int(d) for d in np.argsort(order)]
        out = [_op.transpose(f, back) for f in out]
    return out


def _overwrite(a, b):
    return b


def _prefix_max(count, rows, n, width):
    """The running maximum of the flat int64 device tensor ``count`` (rows of n) along
    each run of ``width`` elements: a reduce_window maximum over each run's prefix."""
    nruns = -(-n // width)
    c = _op.reshape(count, [rows, n])
    zero = _wrap(np.zeros((), np.int64), _I64).to("cuda")
    c = _op.pad(c, zero, [0, 0], [0, nruns * width - n], [0, 0])
    c = _op.reshape(c, [rows, nruns, width])
    c = _op.reduce_window(
        c, zero, [1, 1, width], padding=[(0, 0), (0, 0), (width - 1, 0)], body=_op.maximum
    )
    c = _op.slice(_op.reshape(c, [rows, nruns * width]), [0, 0], [rows, n], [1, 1])
    return _op.reshape(c, [rows * n])


def _sorted_positions(x, n, inner, ctype, descending):
    """The stable order of device tensor x's rows (the n elements along a dimension with
    ``inner`` elements after it) under compare type ``ctype`` (descending: reversed),
    as positions in the row: an int64 device array in the row layout (row by row)."""
    total = x.size
    mode, sign, full, infb, desc, table = _key_plan(x._dtype, ctype, descending)
    if table is None:
        table = cuda.device_array(1, np.uint64)
    keys = cuda.device_array(total, np.uint64)
    pos = cuda.device_array(total, np.int64)
    launch_1d(
        _k(_keys),
        total,
        _raw(x._value),
        table,
        mode,
        np.uint64(sign),
        np.uint64(full),
        np.uint64(infb),
        desc,
        n,
        inner,
        keys,
        pos,
    )
    rows = total // n
    nruns = -(-n // RUN)
    if n > 1:
        launch_1d(_k(_runs), rows * nruns, keys, pos, n, nruns, rows * nruns)
    width = RUN
    if width < n:
        keys2 = cuda.device_array(total, np.uint64)
        pos2 = cuda.device_array(total, np.int64)
        while width < n:
            launch_1d(_k(_merge), total, keys, pos, keys2, pos2, n, width)
            keys, pos, keys2, pos2 = keys2, pos2, keys, pos
            width *= 2
    return pos


def _top_k_gather(src, pos, n, k, values, indices):
    """values[r, j] = src[r, pos[r, j]] and indices[r, j] = pos[r, j] for j < k (rows of
    n; ``values`` as raw bits)."""
    i = cuda.grid(1)
    if i < values.shape[0]:
        r = i // k
        p = pos[r * n + i - r * k]
        values[i] = src[r * n + p]
        indices[i] = p


def top_k(operand, k, largest=True):
    """The kernel of ``top_k`` (same signature as the CPU op): the stable sort of each
    last-dim row by totalOrder keys (complemented for ``largest``, so equal values keep
    their index order, as on the CPU), then the first k of each row gathered."""
    x, kk, largest = top_k_checks(operand, k, largest)
    on_device("top_k", x, "operand")
    dt = x._dtype
    n = tuple(x.shape)[-1]
    oshape = tuple(x.shape)[:-1] + (kk,)
    values = device_empty(oshape, dt.np)
    indices = device_empty(oshape, np.int32)
    m = math.prod(oshape)
    if m:
        pos = _sorted_positions(x, n, 1, "TOTALORDER", largest)
        args = (_raw(x._value), pos, n, kk, _raw(values), flat(indices))
        launch_1d(_k(_top_k_gather), m, *args)
    return from_holder(values, dt), from_holder(indices, _I32)


KERNELS = {"sort": sort, "top_k": top_k}
