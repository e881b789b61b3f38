"""Scatter with any update computation on the device: the CPU's vectorised rounds
(:func:`xops.ops.scatter._scatter_generic`) on device tensors.

Used by scatter for every call its kernel does not take (any other body, a built-in body
on an element type the kernel does not take, several inputs) and by select_and_scatter
for any scatter body its window kernel does not take. Every update element has a target
(a flat result position, -1 where it falls outside the result: skipped) and a place in
the schedule order. The updates are grouped by target stably (so a target's updates stay
in schedule order) and round k applies every target's k-th update with one body call on
whole tensors: the current values at the round's targets, the round's updates, the
body, the results written back. The body calls, their arguments and their order are the
CPU's, so results are bit for bit the CPU's where the body's ops are exact on the device.

Steps (xops ops on device tensors, and four small kernels below):

1. ``sort`` (stable) of the targets, the update positions as a passenger: each target's
   updates together, in schedule order (out-of-bounds ones first).
2. ``_ranks`` (output-parallel): each element's rank in its group, by a binary search
   for the group's first element; out-of-bounds elements get a rank past every round.
3. ``sort`` (stable) by rank: round k is one contiguous slice, in ascending target order
   (the CPU's order within a round).
4. ``_bounds`` (each round's first element writes the round's start): the number of
   rounds and the round boundaries. **Host reads**: that count (one int64), then the
   boundaries (rounds + 1 int64s): they steer the host's loop over the rounds. No
   operand, update or index value is read on the host.
5. ``_take`` of the updates into round order (once); per round: ``_take`` of the current
   values at the round's targets, one body call on the round's slices, ``_put`` of its
   results back (output-parallel over the round's elements: targets are unique within a
   round, so no two threads write one element). A round costs a few launches per input,
   proportional to its size; a scatter without duplicate targets runs one round.

The kernels move raw words (8-byte words for 16-byte types), so every element type
passes through unchanged. The scatter kernel of :mod:`.indexing` would serve step 5's
writes (the overwrite body) but is parallel only over the window dims no index moves,
one thread for element scatters such as these.
"""

import numpy as np
from numba import cuda

from ...autodiff.helpers import _on
from ...device import default_device
from ...dtypes import as_dtype
from ...ops._bodies import checked_results
from ...registry import op as _op
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d, numba_cuda

__all__ = ["fold_rounds", "words"]

_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_I64 = as_dtype("i64")


# ---------------------------------------------------------------------------------------
# kernels (plain numba.cuda, no device-function calls)
# ---------------------------------------------------------------------------------------


def _ranks(tgt, rank):
    """rank[i] = i - (the first position of tgt[i]'s value) in the sorted ``tgt``;
    n = len(tgt) (past every round) where tgt[i] < 0 (out of bounds)."""
    i = cuda.grid(1)
    n = tgt.shape[0]
    if i < n:
        v = tgt[i]
        if v < 0:
            rank[i] = n
        else:
            lo = 0
            hi = i
            while lo < hi:
                m = (lo + hi) // 2
                if tgt[m] < v:
                    lo = m + 1
                else:
                    hi = m
            rank[i] = i - lo


def _bounds(rank, out):
    """``rank`` sorted, n long, ranks 0..R-1 then n's: out[k] = the start of round k
    (written by its first element), out[R] = the end of the last round and out[n + 1] =
    R (written by its last element; by element 0 where there is no round)."""
    i = cuda.grid(1)
    n = rank.shape[0]
    if i < n:
        r = rank[i]
        if r < n:
            if i == 0 or rank[i - 1] != r:
                out[r] = i
            if i == n - 1 or rank[i + 1] >= n:
                out[r + 1] = i + 1
                out[n + 1] = r + 1
        elif i == 0:
            out[n + 1] = 0


def _take(src, t, words, out):
    """Output-parallel over words: element i of ``out`` = element t[i] of ``src``."""
    e = cuda.grid(1)
    if e < out.shape[0]:
        i = e // words
        out[e] = src[t[i] * words + (e - i * words)]


def _put(dst, t, src, words, step, n):
    """Word e < n: element t[i] of ``dst`` = element i * step of ``src`` (step 0: one
    value for every target). The targets t are unique: each thread owns its word."""
    e = cuda.grid(1)
    if e < n:
        i = e // words
        w = e - i * words
        dst[t[i] * words + w] = src[i * step * words + w]


# ---------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------


def words(devarr):
    """(the flat array as unsigned words, words per element): 16-byte elements as two
    uint64 words."""
    a = flat(devarr)
    size = a.dtype.itemsize
    w = _WORDS[min(size, 8)]
    return (a if a.dtype == w else a.view(w)), max(size // 8, 1)


def _copy(t):
    """A fresh device copy of ``t`` (the rounds write into it)."""
    out = device_empty(t.shape, t._dtype.np)
    if t.size:
        flat(out).copy_to_device(flat(t._value))
    return out


def _taken(src, idx, dt):
    """A new device array of element type ``dt``: ``src`` (a device array) at the int64
    device array ``idx``."""
    out = device_empty((idx.shape[0],), dt.np)
    dst, w = words(out)
    launch_1d(_k(_take), dst.shape[0], words(src)[0], idx, w, dst)
    return out


def fold_rounds(results, targets, sources, updates, body, dts, where):
    """The rounds of the module docstring: new flat device tensors, ``results`` (flat
    device tensors of ``dts``) with ``updates`` (flat device tensors of ``dts``) folded
    in by ``body``. ``targets``: the flat i64 device tensor of the update elements'
    targets in schedule order (-1: skipped); ``sources``: the position of each in the
    updates (an i64 device tensor like ``targets``), or None for the updates' own
    order. ``where``: (op, label, what) of the body's checks and errors."""
    outs = [_copy(r) for r in results]
    m = targets.shape[0]
    if m == 0 or results[0].size == 0:
        return [from_holder(o, dt) for o, dt in zip(outs, dts)]
    if sources is None:
        with default_device(targets.device):
            sources = _op.iota(0, [m], "i64")
    tgt, src = _op.sort([targets, sources], 0, True)
    rank = numba_cuda().device_array(m, np.int64)
    launch_1d(_k(_ranks), m, flat(tgt._value), rank)
    ranked = _op.sort([from_holder(rank, _I64), tgt, src], 0, True)
    rank, tgt, src = (flat(r._value) for r in ranked)
    ends = numba_cuda().device_array(m + 2, np.int64)
    launch_1d(_k(_bounds), m, rank, ends)
    nrounds = int(ends[m + 1 : m + 2].copy_to_host()[0])  # (host reads: see the docstring)
    if nrounds == 0:
        return [from_holder(o, dt) for o, dt in zip(outs, dts)]
    bounds = [int(b) for b in ends[: nrounds + 1].copy_to_host()]
    upd = [_taken(flat(u._value), src, dt) for u, dt in zip(updates, dts)]
    op, label, what = where
    for k in range(nrounds):
        b, e = bounds[k], bounds[k + 1]
        t = tgt[b:e]
        args = [from_holder(_taken(o, t, dt), dt) for o, dt in zip(outs, dts)]
        args += [from_holder(u[b:e], dt) for u, dt in zip(upd, dts)]
        ref = args[0]
        for o, v in zip(outs, checked_results(op, label, what, body, args, dts, (e - b,))):
            v = _on(v, ref)  # (a constant the body made on the host)
            dst, w = words(o)
            src_words, _ = words(v._value)
            n = (e - b) * w
            launch_1d(_k(_put), n, dst, t, src_words, w, 1 if v.ndim else 0, n)
    return [from_holder(o, dt) for o, dt in zip(outs, dts)]
