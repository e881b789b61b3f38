"""The geometry tables of the convolution kernels (``xops.kernels.convolution``), one
per shape and attribute set (cached): where each kernel tap reads in the input for each
output position. ``xops.ops.convolution`` builds them and hands them to the kernels;
also the views the 2-D kernels and the GEMMs read (``_words``, ``_per_chan``)."""

import functools
import math

import numpy as np


@functools.lru_cache(maxsize=64)
def _affine_table(padded, k_spatial, out_spatial, strides, rhs_dilation):
    """For im2col: (table, kw_n, kw_step, ow_n, ow_step). ``table[ko, oo]`` is the flat
    offset in a padded plane of the window element for the outer kernel taps ``ko`` and
    outer output positions ``oo`` (all spatial dims but the last); along the last dim
    the offset grows by ``kw_step`` per tap and ``ow_step`` per position."""
    n = len(padded)
    if n == 0:
        return np.zeros((1, 1), np.uint64), 1, 1, 1, 1
    flat = [math.prod(padded[d + 1 :]) for d in range(n)]
    base = np.zeros(list(k_spatial[:-1]) + list(out_spatial[:-1]), np.int64)
    m = n - 1
    for d in range(m):
        k = np.arange(k_spatial[d])[:, None]
        o = np.arange(out_spatial[d])[None, :]
        shape = [1] * (2 * m)
        shape[d], shape[m + d] = k_spatial[d], out_spatial[d]
        base += ((o * strides[d] + k * rhs_dilation[d]) * flat[d]).reshape(shape)
    table = np.ascontiguousarray(
        base.reshape(math.prod(k_spatial[:-1]), math.prod(out_spatial[:-1])), np.uint64
    )
    table.flags.writeable = False
    return table, k_spatial[-1], rhs_dilation[-1], out_spatial[-1], strides[-1]


@functools.lru_cache(maxsize=64)
def _window_table(
    in_spatial, k_spatial, out_spatial, strides, padding, lhs_dilation, rhs_dilation, lanes
):
    """For window_sum: (K, P*lanes) offsets, uint32 (uint64 for planes of 2**32 words).
    For kernel tap k and output position p (row-major), the flat offset in an
    (unpadded, undilated) input plane of the element that tap reads, or the plane size
    (a zero slot) for padding cells and dilation holes. lanes=2 addresses complex
    elements as (real, imaginary) pairs of reals."""
    n = len(in_spatial)
    flat = [math.prod(in_spatial[d + 1 :]) for d in range(n)]
    offset = np.zeros(list(k_spatial) + list(out_spatial), np.int64)
    valid = np.ones(offset.shape, bool)
    for d in range(n):
        k = np.arange(k_spatial[d])[:, None]
        o = np.arange(out_spatial[d])[None, :]
        dilated = 0 if in_spatial[d] == 0 else (in_spatial[d] - 1) * lhs_dilation[d] + 1
        q = o * strides[d] + k * rhs_dilation[d] - padding[d][0]  # in the dilated input
        ok = (q >= 0) & (q < dilated) & (q % lhs_dilation[d] == 0)
        shape = [1] * (2 * n)
        shape[d], shape[n + d] = k_spatial[d], out_spatial[d]
        offset += ((q // lhs_dilation[d]) * flat[d]).reshape(shape)
        valid &= ok.reshape(shape)
    offset[~valid] = math.prod(in_spatial)
    table = offset.reshape(math.prod(k_spatial), math.prod(out_spatial))
    if lanes > 1:
        table = (table[:, :, None] * lanes + np.arange(lanes)).reshape(table.shape[0], -1)
    # uint32 offsets halve the table's memory traffic (the kernel is gather-bound)
    small = (math.prod(in_spatial) + 1) * lanes <= np.iinfo(np.uint32).max
    table = np.ascontiguousarray(table, np.uint32 if small else np.uint64)
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=64)
def _geometry_2d(in_hw, k_hw, out_hw, strides, padding, lhs_dilation, rhs_dilation):
    """(rows, band, runs) for the 2-D kernels (see xops.kernels.convolution): ``rows[kh,
    i]`` the input row that kernel row kh reads for output row i (-1: padding or a
    dilation hole); ``band[kh]`` = (i0, i1, h0) where rows[kh] is -1 but for i0 <= i < i1
    reading h0 + i - i0 (i1 = -1 otherwise); ``runs[kw]`` = (j0, count, j_step, s0,
    s_step), the output columns j0 + q*j_step (q < count) that kernel column kw reads
    from input columns s0 + q*s_step (an arithmetic progression: the solutions of a
    linear congruence in an interval)."""
    tables = []
    for d in range(2):
        k = np.arange(k_hw[d])[:, None]
        o = np.arange(out_hw[d])[None, :]
        q = o * strides[d] + k * rhs_dilation[d] - padding[d][0]  # in the dilated input
        ld = lhs_dilation[d]
        ok = (q >= 0) & (q <= (in_hw[d] - 1) * ld) & (q % ld == 0)
        tables.append(np.where(ok, q // ld, -1))
    rows = np.ascontiguousarray(tables[0], np.int64)
    band = np.zeros((k_hw[0], 3), np.int64)
    for kh, src in enumerate(rows):
        valid = np.flatnonzero(src >= 0)
        if valid.size and (src[valid] == src[valid[0]] + valid - valid[0]).all():
            if valid[-1] - valid[0] + 1 == valid.size:
                band[kh] = (valid[0], valid[-1] + 1, src[valid[0]])
                continue
        band[kh] = (0, 0 if valid.size == 0 else -1, 0)
    runs = np.zeros((k_hw[1], 5), np.int64)
    for kw, src in enumerate(tables[1]):
        js = np.flatnonzero(src >= 0)
        if js.size == 0:
            runs[kw] = (0, 0, 1, 0, 1)
            continue
        j_step = int(js[1] - js[0]) if js.size > 1 else 1
        s_step = int(src[js[1]] - src[js[0]]) if js.size > 1 else 1
        runs[kw] = (js[0], js.size, j_step, src[js[0]], s_step)
    for t in (rows, band, runs):
        t.flags.writeable = False
    return rows, band, runs


@functools.lru_cache(maxsize=64)
def _row_taps_table(in_hw, k_hw, out_hw, strides, padding, lhs_dilation, rhs_dilation, slots):
    """``window_sum_rows``'s taps (first, last, d) from the geometry tables (see
    ``_geometry_2d``) and each tap's padding cells (K, P), or None where a kernel row's
    input rows are no band or a run would read past the zero columns."""
    rows, band, runs = _geometry_2d(
        in_hw, k_hw, out_hw, strides, padding, lhs_dilation, rhs_dilation
    )
    n_w, (n_oh, n_ow) = in_hw[1] + slots, out_hw
    taps = np.zeros((k_hw[0] * k_hw[1], 3), np.int64)
    padding_cells = np.ones((k_hw[0] * k_hw[1], n_oh, n_ow), bool)
    for kh in range(k_hw[0]):
        i0, i1, h0 = (int(v) for v in band[kh])
        if i1 < 0:
            return None
        for kw in range(k_hw[1]):
            j0, count = int(runs[kw, 0]), int(runs[kw, 1])
            if i1 <= i0 or count == 0:
                continue  # only padding: no run
            shift = int(runs[kw, 3]) - j0  # source column - output column
            if shift < -slots or n_ow + shift > n_w:
                return None
            d = (h0 - i0) * n_w + shift
            k = kh * k_hw[1] + kw
            taps[k] = (max(i0 * n_w, -d), (i1 - 1) * n_w + n_ow, d)
            padding_cells[k, i0:i1, j0 : j0 + count] = False
    padding_cells = padding_cells.reshape(len(taps), -1)
    for t in (taps, padding_cells):
        t.flags.writeable = False
    return taps, padding_cells


def _words_ok(src, work):
    """Whether the 2-D kernels can read ``src`` in place: work type, unit last stride."""
    return src.dtype == work and src.strides[-1] == work.itemsize and min(src.strides) >= 0


def _words(src, word):
    """``src`` (N, C, H, W) as one flat array of ``word`` spanning it, and its strides
    in elements."""
    step = [s // src.itemsize for s in src.strides]
    span = sum((d - 1) * s for d, s in zip(src.shape, step)) + 1 if src.size else 0
    if span == src.size:  # dense (C order, or channel-first as a convolution leaves it):
        # the same words as a plain view, cheaper than as_strided (4.4 vs 6.5 us)
        dense = src
        if not src.flags.c_contiguous:
            dense = np.transpose(src, sorted(range(src.ndim), key=lambda d: -step[d]))
        if dense.flags.c_contiguous:
            return dense.reshape(-1).view(word), step
    return np.lib.stride_tricks.as_strided(src, (span,), (src.itemsize,)).view(word), step


def _per_chan(w, chan, b_p, limit):
    """W (O, C, *kernel) as (C, O, K) in place for one GEMM per input feature against
    (B*P, K) rows, or None: where that is no plain view, or the products' results
    (O, B*P) have more than ``limit`` elements, or C is 1.

    The kernel gradient's kernel is the output cotangent with its batch dim as the
    input feature dim, so W arrives as a transposed view whose (O, C*K) matrix would
    be a copy of the whole cotangent; im2row then writes one contiguous block of rows
    per input feature and runs one GEMM per feature, reading W in place. (The rows as
    one (B*P, C*K) matrix put B*P rows ``C*K`` words apart, where a thin GEMM loses
    most of its time to cache conflicts while packing them: 7.9 against 3.2 ms, one
    thread, on CIFAR's kernel gradient at batch 64.)"""
    per_chan = np.transpose(w, (1, 0, *range(2, w.ndim)))
    if chan == 1 or w.shape[0] * b_p > limit or not per_chan.flags.c_contiguous:
        return None
    return per_chan.reshape(chan, w.shape[0], -1)
