"""Indexing kernels: gather, scatter, and the key transforms of sort / top_k.

No checks and no Python objects here: ``xops.ops.indexing`` validates, normalises the
index arrays (int32 as they are, else int64; moved so that the index vector is the last
dim; uint64 values saturated to the int64 range) and describes every layout with flat
element strides.

Race-free patterns (results never depend on the thread count):

* ``gather`` is **output-parallel**: iteration b (a window; or a run, when there are
  more runs than windows) writes only its own part of the result; so is
  ``gather_rows`` (row gathers: iteration b writes output rows of block b only).
* ``scatter_starts`` and ``scatter_targets`` are output-parallel over update windows.
* ``bucket_windows`` + ``scatter_apply`` are **owner-computes**: the result is cut into
  chunks along one axis; chunk c's owner copies the chunk's slab of the input and
  applies, in increasing window order, exactly the update elements that land in chunk
  c. Every result element is therefore updated by one thread, in the schedule order,
  whatever the number of threads. The owner lists come from a (serial) counting sort of
  the windows by chunk. ``bucket_rows`` + ``scatter_rows`` are the same pattern for
  row scatters (whole rows of dim 0), with a smaller kernel.
* the sort-key transforms are output-parallel (the NaN / -0 count of
  ``float_order_keys`` is an integer ``+=`` reduction, exact in any order), and so is
  ``top_k_rows`` (iteration r writes row r's k indices).

Offsets that are known to be non-negative index as uint64: Numba then drops its
negative-index wraparound checks and LLVM vectorises the unit-stride copy loops (2-3x
on row gathers). Helpers inlined with ``scalar`` stay loop-free or tuple-free: an
inlined helper that returned a tuple from a loop made the gather loop 6x slower.

Bounds: ``gather`` clamps every start component to [0, dim - slice_size] before use;
``scatter_starts`` clamps window starts into [-window, dim], a range in which a start is
out of bounds for exactly the same window offsets as the true start and in which no
arithmetic can overflow; ``scatter_apply``/``scatter_targets`` then touch only window
offsets whose target is inside the result. No kernel reads or writes out of bounds,
whatever the index values.
"""

import numpy as np
from numba import prange

from .config import _OPTIONS, kernel, scalar
from .elementwise import ieee_maximum, ieee_minimum

# scatter op codes (xops.ops.indexing maps recognised bodies onto them)
OVERWRITE, ADD, MULTIPLY, MAXIMUM, MINIMUM = 0, 1, 2, 3, 4
OP_CODES = {
    "overwrite": OVERWRITE,
    "add": ADD,
    "multiply": MULTIPLY,
    "maximum": MAXIMUM,
    "minimum": MINIMUM,
}


def _outlined(py_func):
    """A helper compiled as a function of its own (config's options, not inlined into
    its caller): for the general paths of a loop whose fast path is a short one. Inlined
    next to it, their code made the fast path slower (1.3x on row scatters, 1.2x on row
    gathers)."""
    import numba

    return numba.njit(**_OPTIONS)(py_func)


# ---------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------


@scalar
def _copy_run(src, out, s, o, n, istep, ostep):
    """out[o + j*ostep] = src[s + j*istep] for j < n. Offsets are non-negative here, so
    they index as uint64: no wraparound checks, and the unit-stride loop vectorises."""
    us = np.uint64(s)
    uo = np.uint64(o)
    if istep == 1 and ostep == 1:
        for j in range(np.uint64(n)):
            out[uo + j] = src[us + j]
    else:
        ui = np.uint64(istep)
        ur = np.uint64(ostep)
        for j in range(np.uint64(n)):
            out[uo + j * ur] = src[us + j * ui]


@scalar
def _copy_rows_of(src, out, sbase, obase, m, s0, o0, n):
    """out[obase[i] + o0 + j] = src[sbase[i] + s0 + j] for i < m, j < n (non-negative
    offsets: uint64)."""
    for i in range(m):
        us = np.uint64(sbase[i] + s0)
        uo = np.uint64(obase[i] + o0)
        for j in range(n):
            out[uo + j] = src[us + j]


@scalar
def _copy_rows(src, out, sbase, obase, m, s0, o0, n):
    """_copy_rows_of, with a constant row length for rows of 8, 4 and 2 items (8 items:
    64 bytes, 16 f32 as uint64 words): a row then costs half the instructions of the
    runtime-length loop (vectorised, with alias checks and remainder loops), so twice as
    many rows' cache misses fit in the CPU's window: 100k random 64-byte rows of a 64 MiB
    table took 0.87 ms instead of 1.7 on one thread. (The length test stays outside the
    row loop: inside it, the code Numba loads from its cache ran 1.5x slower than the
    freshly compiled code.)"""
    if n == 8:
        _copy_rows_of(src, out, sbase, obase, m, s0, o0, np.uint64(8))
    elif n == 4:
        _copy_rows_of(src, out, sbase, obase, m, s0, o0, np.uint64(4))
    elif n == 2:
        _copy_rows_of(src, out, sbase, obase, m, s0, o0, np.uint64(2))
    else:
        _copy_rows_of(src, out, sbase, obase, m, s0, o0, n)


_GATHER_BLOCK = 2048


@_outlined
def _gather_runs(src, out, sbase, obase, runs_src, runs_out, run_len, istep, ostep):
    """The general copies of gather: every run r of every window i."""
    for i in range(sbase.size):
        for r in range(runs_src.size):
            _copy_run(
                src, out, sbase[i] + runs_src[r], obase[i] + runs_out[r], run_len, istep, ostep
            )


@scalar
def _gather_offsets(idx, his, sstr, bshape, rstr, bsrc, b0, b1, sbase, obase):
    """sbase/obase[b - b0] = operand / result offset of gather window b, b0 <= b < b1:
    the batch coordinates (row-major over bshape) times rstr / bsrc, plus each start
    component clamped to [0, his[k]] times sstr[k]."""
    nbd = bshape.size
    for b in range(b0, b1):
        sb = 0
        ob = 0
        if nbd == 1:
            sb = b * bsrc[0]
            ob = b * rstr[0]
        elif nbd > 1:
            rem = b
            for j in range(nbd - 1, -1, -1):
                rem, c = divmod(rem, bshape[j])
                ob += c * rstr[j]
                sb += c * bsrc[j]
        for k in range(idx.shape[1]):
            v = idx[b, k]
            if v < 0:
                v = 0
            elif v > his[k]:
                v = his[k]
            sb += v * sstr[k]
        sbase[b - b0] = sb
        obase[b - b0] = ob


@kernel
def gather(src, idx, his, sstr, bshape, rstr, bsrc, runs_src, runs_out, run_len, istep, ostep, out):
    """Output-parallel over windows b (or over runs r when there are more runs than
    windows): out[ob + runs_out[r] + j*ostep] = src[sb + runs_src[r] + j*istep] for
    j < run_len.

    ``idx`` (nb, K) int64 start indices; component k is clamped to [0, his[k]] and
    scaled by the operand stride sstr[k]. Window b's batch coordinates (``bshape``,
    row-major) give its result offset ob (strides ``rstr``) and its operand batching
    offset (strides ``bsrc``, 0 for batch dims that are not batching dims).

    Parallel over blocks of windows (over runs when a few windows have many runs).
    """
    nb = idx.shape[0]
    nr = runs_src.size
    if nb >= nr or nb >= 64:
        # blocks of windows: the block's offsets first, then its copies (a short copy
        # loop lets the CPU overlap many random reads; one fused loop ran 2x slower)
        nblk = (nb + _GATHER_BLOCK - 1) // _GATHER_BLOCK
        for blk in prange(nblk):
            b0 = blk * _GATHER_BLOCK
            b1 = min(nb, b0 + _GATHER_BLOCK)
            sbase = np.empty(b1 - b0, np.int64)
            obase = np.empty(b1 - b0, np.int64)
            _gather_offsets(idx, his, sstr, bshape, rstr, bsrc, b0, b1, sbase, obase)
            if nr == 1 and istep == 1 and ostep == 1:
                _copy_rows(
                    src, out, sbase, obase, b1 - b0, runs_src[0], runs_out[0], np.uint64(run_len)
                )
            else:
                _gather_runs(src, out, sbase, obase, runs_src, runs_out, run_len, istep, ostep)
    else:  # few windows with many runs each: parallel over the runs
        sbase = np.empty(nb, np.int64)
        obase = np.empty(nb, np.int64)
        _gather_offsets(idx, his, sstr, bshape, rstr, bsrc, 0, nb, sbase, obase)
        for r in prange(nr):
            _gather_runs(
                src,
                out,
                sbase,
                obase,
                runs_src[r : r + 1],
                runs_out[r : r + 1],
                run_len,
                istep,
                ostep,
            )


@scalar
def _gather_row_range(src, idx, out, i0, i1, hi, w):
    """out row i = src row clamp(idx[i], 0, hi) for i0 <= i < i1, rows of ``w`` words
    (uint64 offsets: no wraparound checks, the copy vectorises)."""
    for i in range(i0, i1):
        v = np.int64(idx[i])
        if v < 0:
            v = 0
        elif v > hi:
            v = hi
        us = np.uint64(v) * w
        uo = np.uint64(i) * w
        for j in range(w):
            out[uo + j] = src[us + j]


@kernel
def gather_rows(src, idx, out, w):
    """Row gather (operand rows of ``w`` words, flat): out row i = src row
    clamp(idx[i], 0, rows - 1). Output-parallel over blocks of _GATHER_BLOCK rows (each
    output row written by one iteration). Rows of 8 words (16 f32) get a constant-length
    copy. One fused loop per row: 25k random 64-byte rows of a 16 MiB table took 0.11
    ms on 2 threads, against 0.22 ms for ``gather``'s offsets-then-copies blocks."""
    m = idx.size
    hi = src.size // max(w, 1) - 1
    nblk = (m + _GATHER_BLOCK - 1) // _GATHER_BLOCK
    for blk in prange(nblk):
        i0 = blk * _GATHER_BLOCK
        i1 = min(m, i0 + _GATHER_BLOCK)
        if w == 8:
            _gather_row_range(src, idx, out, i0, i1, hi, np.uint64(8))
        else:
            _gather_row_range(src, idx, out, i0, i1, hi, np.uint64(w))


# ---------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------


@kernel
def scatter_starts(idx, kdim, bshape, bdim, ustr_b, dims, wsize, rstr, starts, ubase, rbase):
    """Output-parallel over windows b (row-major over the update scatter dims ``bshape``).

    starts[b, d]: window b's start along result dim d (scatter index component mapped by
    ``kdim``, batch coordinate mapped by ``bdim`` >= 0, else 0), clamped into
    [-wsize[d], dims[d]]. ubase[b]: flat offset of window b's first update element.
    rbase[b]: flat result offset of the window's first element if the whole window is
    in bounds; -1 if only part of it is; -2 if none of it is.
    """
    nb = starts.shape[0]
    rank = starts.shape[1]
    nk = idx.shape[1]
    nbd = bshape.size
    for b in prange(nb):
        for d in range(rank):
            starts[b, d] = 0
        ub = 0
        if nbd == 1:
            ub = b * ustr_b[0]
            if bdim[0] >= 0:
                starts[b, bdim[0]] = b
        elif nbd > 1:
            rem = b
            for j in range(nbd - 1, -1, -1):
                rem, c = divmod(rem, bshape[j])
                ub += c * ustr_b[j]
                if bdim[j] >= 0:
                    starts[b, bdim[j]] = c
        for k in range(nk):
            starts[b, kdim[k]] = idx[b, k]
        full = True
        empty = False
        rb = 0
        for d in range(rank):
            v = starts[b, d]
            if v < -wsize[d]:
                v = -wsize[d]
            elif v > dims[d]:
                v = dims[d]
            starts[b, d] = v
            if v < 0 or v + wsize[d] > dims[d]:
                full = False
                if max(0, -v) >= min(wsize[d], dims[d] - v):
                    empty = True
            rb += v * rstr[d]
        ubase[b] = ub
        rbase[b] = rb if full else (-2 if empty else -1)


@scalar
def _slots(counts):
    """A counting sort's middle: counts[c + 1] (chunk c's count) becomes chunk c's first
    slot, counts[c]; returns ``first`` (first[c]: where chunk c's list starts; first[-1]:
    the total)."""
    for c in range(counts.size - 1):
        counts[c + 1] += counts[c]
    return counts.copy()


@kernel
def bucket_windows(starts, rbase, ubase, wsize, dims, axis, shift, nchunks, ent):
    """Owner lists for scatter_apply, a stable counting sort of the windows by chunk
    (rows [c << shift, (c+1) << shift) along ``axis``). Returns ``first``: entries
    first[c] .. first[c+1]-1 of ``ent`` (long enough for every window's chunks) are the
    windows with an in-bounds element in chunk c, in increasing order. Entry q is
    (rbase[b], ubase[b]) if window b is wholly in bounds and in this one chunk, else
    (-1, b); the apply loop reads them in sequence (reading rbase and ubase at random
    window numbers there cost 0.7 ms per 100k row windows).

    Called serially (``.serial``): a light O(windows) pass (chunk numbers by shift: a
    division per window made it 3x slower); a parallel counting sort over blocks of
    windows was no faster on 2 cores and cost 1.5 s more compile time."""
    nb = starts.shape[0]
    ws = wsize[axis]
    dm = dims[axis]
    counts = np.zeros(nchunks + 1, np.int64)
    for b in range(nb):
        if rbase[b] != -2:
            s = starts[b, axis]
            for c in range(max(s, 0) >> shift, ((min(s + ws, dm) - 1) >> shift) + 1):
                counts[c + 1] += 1
    first = _slots(counts)
    for b in range(nb):
        if rbase[b] != -2:
            s = starts[b, axis]
            c0 = max(s, 0) >> shift
            c1 = (min(s + ws, dm) - 1) >> shift
            for c in range(c0, c1 + 1):
                q = counts[c]
                if c0 == c1 and rbase[b] >= 0:
                    ent[q, 0] = rbase[b]
                    ent[q, 1] = ubase[b]
                else:
                    ent[q, 0] = -1
                    ent[q, 1] = b
                counts[c] = q + 1
    return first


@kernel
def bucket_rows(idx, dim, rstride, ustride, shift, nchunks, ent):
    """bucket_windows for row scatters: one index component addressing the partition
    axis (``dim`` long, ``rstride`` elements a row), windows of one whole row, update
    window b at b * ``ustride``, no batching dims. Window b is row v = idx[b, 0] if 0 <= v
    < dim, with entry (v * rstride, b * ustride), and wholly out of bounds otherwise: the
    same lists as scatter_starts + bucket_windows give, straight from the indices (that
    pair took twice as long). Called serially, like bucket_windows."""
    counts = np.zeros(nchunks + 1, np.int64)
    for b in range(idx.shape[0]):
        v = idx[b, 0]
        if v >= 0 and v < dim:
            counts[(v >> shift) + 1] += 1
    first = _slots(counts)
    for b in range(idx.shape[0]):
        v = idx[b, 0]
        if v >= 0 and v < dim:
            q = counts[v >> shift]
            ent[q, 0] = v * rstride
            ent[q, 1] = b * ustride
            counts[v >> shift] = q + 1
    return first


@scalar
def _combine(a, b, op):
    """op(a, b) for the scatter op codes: for the loops that serve every op (strided runs,
    windows cut by a bound or a chunk edge)."""
    if op == OVERWRITE:
        return b
    if op == ADD:
        return a + b
    if op == MULTIPLY:
        return a * b
    if op == MAXIMUM:
        return ieee_maximum(a, b)
    return ieee_minimum(a, b)


@scalar
def _apply_run(out, upd, ro, uo, n, rstep, ustep, op):
    """out[ro + x*rstep] = op(out[...], upd[uo + x*ustep]) for x < n (uint64 offsets):
    one loop per op, and unit strides apart, so that LLVM can vectorise them."""
    if rstep == 1 and ustep == 1:
        if op == OVERWRITE:
            for x in range(n):
                out[ro + x] = upd[uo + x]
        elif op == ADD:
            for x in range(n):
                out[ro + x] = out[ro + x] + upd[uo + x]
        elif op == MULTIPLY:
            for x in range(n):
                out[ro + x] = out[ro + x] * upd[uo + x]
        elif op == MAXIMUM:
            for x in range(n):
                out[ro + x] = ieee_maximum(out[ro + x], upd[uo + x])
        else:
            for x in range(n):
                out[ro + x] = ieee_minimum(out[ro + x], upd[uo + x])
    else:
        for x in range(n):
            t = ro + x * rstep
            out[t] = _combine(out[t], upd[uo + x * ustep], op)


@_outlined
def _apply_window(out, upd, starts, ubase, wsize, ustr, rstr, dims, axis, clo, chi, b, op):
    """Apply window b's in-bounds elements in rows [clo, chi) along ``axis``: an odometer
    over dims 0..R-2 and a run along dim R-1 (flat offsets index as uint64). Its own
    function (inlined into scatter_apply's entry loop it made row updates 1.3x slower),
    with one generic loop (the op tested per element): it serves only windows cut by the
    bounds or a chunk edge, and ten specialised loops here doubled its compile time."""
    rank = starts.shape[1]
    last = rank - 1
    lo = np.empty(rank, np.int64)
    hi = np.empty(rank, np.int64)
    w = np.empty(rank, np.int64)
    for d in range(rank):
        s = starts[b, d]
        a = max(0, -s)
        e = min(wsize[d], dims[d] - s)
        if d == axis:
            a = max(a, clo - s)
            e = min(e, chi - s)
        if a >= e:
            return
        lo[d] = a
        hi[d] = e
        w[d] = a
    n = np.uint64(hi[last] - lo[last])
    rs = np.uint64(rstr[last])
    us = np.uint64(ustr[last])
    while True:
        roff = (starts[b, last] + lo[last]) * rstr[last]
        uoff = ubase[b] + lo[last] * ustr[last]
        for d in range(last):
            roff += (starts[b, d] + w[d]) * rstr[d]
            uoff += w[d] * ustr[d]
        ro = np.uint64(roff)
        uo = np.uint64(uoff)
        for x in range(n):
            t = ro + x * rs
            out[t] = _combine(out[t], upd[uo + x * us], op)
        d = last - 1  # odometer over dims last-1 .. 0
        while d >= 0:
            w[d] += 1
            if w[d] < hi[d]:
                break
            w[d] = lo[d]
            d -= 1
        if d < 0:
            return


@scalar
def _add(a, b):
    """The add body, as a function for _rows_of."""
    return a + b


@scalar
def _second(a, b):
    """The overwrite body ``lambda a, b: b``, as a function for _rows_of."""
    return b


@scalar
def _rows_of(out, upd, ent, q0, q1, n, combine):
    """scatter_rows' entries q0..q1-1, whole rows of ``n`` items: a loop of its own per
    body (``combine``: each call compiles its own loop; with the op tested per entry,
    row updates took 1.5x as long)."""
    for q in range(q0, q1):
        ro = np.uint64(ent[q, 0])
        uo = np.uint64(ent[q, 1])
        for x in range(n):
            out[ro + x] = combine(out[ro + x], upd[uo + x])


@kernel
def scatter_rows(inp, out, upd, first, ent, row, rows, shift, op, copy_input):
    """Owner-computes over chunks c of whole rows (rows [c << shift, (c+1) << shift) of
    ``rows``, each ``row`` items, flat): chunk c's owner copies its slab of ``inp`` into
    ``out`` (if ``copy_input``), then applies chunk c's entries of ``ent`` (bucket_rows:
    (result offset, update offset) of whole in-bounds rows, in increasing window order)
    while the slab is in cache: out[t] = op(out[t], upd[u]). Every result row is updated
    by one thread, in index order, whatever the thread count. The row scatters' kernel:
    without scatter_apply's general windows it compiles in a fraction of the time."""
    n = np.uint64(row)
    for c in prange(first.size - 1):
        clo = c << shift
        chi = min(clo + (1 << shift), rows)
        if copy_input:
            _copy_run(inp, out, clo * row, clo * row, (chi - clo) * row, 1, 1)
        if op == ADD:
            _rows_of(out, upd, ent, first[c], first[c + 1], n, _add)
        elif op == OVERWRITE:
            _rows_of(out, upd, ent, first[c], first[c + 1], n, _second)
        else:
            for q in range(first[c], first[c + 1]):
                _apply_run(out, upd, np.uint64(ent[q, 0]), np.uint64(ent[q, 1]), n, 1, 1, op)


@kernel
def scatter_apply(
    inp,
    out,
    upd,
    first,
    ent,
    starts,
    ubase,
    wsize,
    ustr,
    rstr,
    dims,
    axis,
    shift,
    op,
    copy_input,
    runs_r,
    runs_u,
    run_len,
    rstep,
    ustep,
):
    """Owner-computes over chunks c of the result along ``axis`` (rows [c << shift,
    (c+1) << shift)): chunk c's owner first copies its slab of ``inp`` into ``out`` (if
    ``copy_input``), then applies chunk c's entries of ``ent`` (bucket_windows: windows
    in increasing order) while the slab is still in cache: out[t] = op(out[t], upd[u])
    for each window's in-bounds elements t in chunk c. ``op``: OVERWRITE, ADD, MULTIPLY,
    MAXIMUM, MINIMUM. (A 64 MiB copy followed by 100k random row updates into it took
    1.4x as long as this fused loop.)

    An entry (rb >= 0, ub), a window wholly in bounds and in this chunk, is applied run
    by run (``runs_r``/``runs_u``: the runs' offsets, all windows have the same shape,
    one run for row windows); an entry (-1, b) goes to _apply_window. Flat offsets are
    non-negative and index as uint64 (no wraparound checks).
    """
    nchunks = first.size - 1
    outer = 1
    for d in range(axis):
        outer *= dims[d]
    nr = runs_r.size
    urun = np.uint64(run_len)
    urs = np.uint64(rstep)
    uus = np.uint64(ustep)
    for c in prange(nchunks):
        clo = c << shift
        chi = min(clo + (1 << shift), dims[axis])
        if copy_input:
            slab = dims[axis] * rstr[axis]
            for q in range(outer):
                _copy_run(
                    inp,
                    out,
                    q * slab + clo * rstr[axis],
                    q * slab + clo * rstr[axis],
                    (chi - clo) * rstr[axis],
                    1,
                    1,
                )
        for q in range(first[c], first[c + 1]):
            rb = ent[q, 0]
            if rb < 0:
                _apply_window(
                    out, upd, starts, ubase, wsize, ustr, rstr, dims, axis, clo, chi, ent[q, 1], op
                )
            else:
                for r in range(nr):
                    _apply_run(
                        out,
                        upd,
                        np.uint64(rb + runs_r[r]),
                        np.uint64(ent[q, 1] + runs_u[r]),
                        urun,
                        urs,
                        uus,
                        op,
                    )


@kernel
def scatter_targets(starts, ubase, wsize, ustr, rstr, dims, tgt, src):
    """Output-parallel over windows b: for the j-th element of window b (row-major over
    the window box), tgt[b*nw + j] = its flat result offset, or -1 if out of bounds, and
    src[b*nw + j] = its flat update offset. The list order is the scatter schedule."""
    nb = starts.shape[0]
    rank = starts.shape[1]
    nw = 1
    for d in range(rank):
        nw *= wsize[d]
    for b in prange(nb):
        w = np.zeros(rank, np.int64)
        for j in range(nw):
            roff = 0
            uoff = ubase[b]
            ok = True
            for d in range(rank):
                p = starts[b, d] + w[d]
                if p < 0 or p >= dims[d]:
                    ok = False
                roff += p * rstr[d]
                uoff += w[d] * ustr[d]
            tgt[b * nw + j] = roff if ok else -1
            src[b * nw + j] = uoff
            d = rank - 1
            while d >= 0:
                w[d] += 1
                if w[d] < wsize[d]:
                    break
                w[d] = 0
                d -= 1


# ---------------------------------------------------------------------------------------
# sort / top_k keys
# ---------------------------------------------------------------------------------------


@scalar
def _total_order_key(v, sign, full):
    """The totalOrder key of the float bit pattern v: negative patterns (sign bit set)
    reversed below the positive ones."""
    return full - v if v & sign else v | sign


@kernel
def total_order_keys(u, sign, full, descending, keys):
    """Output-parallel. keys[i]: an unsigned integer (u's width) whose order is IEEE
    totalOrder of the float pattern u[i] with sign bit ``sign`` and all-ones pattern
    ``full`` (scalars of u's dtype: no integer literal mixes into unsigned arithmetic)
    (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN): negative patterns are reversed
    below the positive ones. The FNUZ formats' NaN (sign bit only) lands just below +0,
    as in xo.compare. ``descending`` complements the key (reverses the order)."""
    for i in prange(u.size):
        k = _total_order_key(u[i], sign, full)
        if descending:
            k = ~k
        keys[i] = k


@kernel
def total_order_decode(keys, sign, full, descending, u):
    """Output-parallel. The inverse of total_order_keys."""
    mag = full ^ sign
    for i in prange(keys.size):
        k = keys[i]
        if descending:
            k = ~k
        if k & sign:
            u[i] = k & mag
        else:
            u[i] = full - k


@kernel
def float_order_keys(x, u, sign, full, descending, keys):
    """Output-parallel. keys[i] orders the float x[i] (bit pattern u[i], sign bit
    ``sign``) as FLOAT compare does where that is a strict weak order: by totalOrder,
    except that -0 counts as +0 and every NaN as one value above +inf. Returns the
    number of NaNs and -0s (where this order and totalOrder differ); the count is an
    integer ``+=`` reduction."""
    count = 0
    for i in prange(x.size):
        v = u[i]
        if x[i] != x[i]:
            k = full
            count += 1
        elif x[i] == 0:
            k = sign
            if v & sign:
                count += 1
        else:
            k = _total_order_key(v, sign, full)
        if descending:
            k = ~k
        keys[i] = k
    return count


@scalar
def _worse(bk, bi, a, b):
    """Heap order of top_k_rows: entry a is worse than entry b (larger key, or equal key
    and larger position)."""
    return bk[a] > bk[b] or (bk[a] == bk[b] and bi[a] > bi[b])


@kernel
def top_k_rows(keys, k, out):
    """Output-parallel over rows: out[row, :k] = the positions of the k smallest keys of
    the row, ascending by (key, position), so equal keys come in order of position.

    Each row keeps its k best (key, position) pairs in a max-heap (worst on top); an
    element enters only if its key is strictly below the worst one (a later position
    never beats an equal key): O(n log k) per row, about one comparison per element on
    random rows. The k survivors are then sorted (insertion sort: k is small)."""
    rows = keys.shape[0]
    n = keys.shape[1]
    for r in prange(rows):
        bk = np.empty(k, keys.dtype)
        bi = np.empty(k, np.int64)
        m = 0
        for j in range(n):
            v = keys[r, j]
            if m < k:  # fill: sift up
                p = m
                m += 1
                bk[p] = v
                bi[p] = j
                while p > 0:
                    q = (p - 1) // 2
                    if not _worse(bk, bi, p, q):
                        break
                    bk[p], bk[q] = bk[q], bk[p]
                    bi[p], bi[q] = bi[q], bi[p]
                    p = q
            elif v < bk[0]:  # replace the worst: sift down
                bk[0] = v
                bi[0] = j
                p = 0
                while True:
                    c = 2 * p + 1
                    if c >= k:
                        break
                    if c + 1 < k and _worse(bk, bi, c + 1, c):
                        c += 1
                    if not _worse(bk, bi, c, p):
                        break
                    bk[p], bk[c] = bk[c], bk[p]
                    bi[p], bi[c] = bi[c], bi[p]
                    p = c
        for a in range(1, k):  # sort ascending by (key, position)
            vk = bk[a]
            vi = bi[a]
            p = a
            while p > 0 and (bk[p - 1] > vk or (bk[p - 1] == vk and bi[p - 1] > vi)):
                bk[p] = bk[p - 1]
                bi[p] = bi[p - 1]
                p -= 1
            bk[p] = vk
            bi[p] = vi
        for j in range(k):
            out[r, j] = bi[j]
