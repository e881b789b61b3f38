"""Convolution kernels. ``xops.ops.convolution`` turns a convolution into a batched
matrix multiply (NumPy's BLAS) with one of two packings:

* ``im2col`` (columns): copy every window of the *padded* input (the spec's
  ``padded_lhs``: padding and lhs-dilation holes already materialised as zeros) into a
  matrix whose rows are (channel, kernel tap) and whose columns are output positions —
  or the transpose of that ("im2row"), when the kernel is wider than the output.
  Then ``weights @ columns``.
* ``window_sum`` (kn2row): first ``Y = weights @ input`` at every *input* position
  (rows = (output feature, kernel tap)), then each output element sums, over the
  kernel taps, the Y entry its window reads — through an offset table that sends
  padding cells and dilation holes to a zero slot. This wins when there are fewer
  output than input features, or with lhs dilation (transposed convolution), since
  it never materialises the zeros. ``window_sum_rows`` does the same sums without a
  table for one or two spatial dims with stride 1 along the last (the input
  gradient of a stride-1 layer): Y's rows end in zero columns, so that each tap's
  whole band of rows is one contiguous run of vector adds.

``im2col`` only copies bits, so it runs on unsigned words of the element's width
(float32 as uint32; float64, int64 and complex64 as uint64; complex128 as two float64
passes into interleaved columns): two specialisations cover every type.
``window_sum`` adds, so it is typed: float32 and float64 (complex sums run on their
real and imaginary lanes), int64 only for integer sums that float64 cannot hold exactly;
``window_sum_rows`` float32 and float64 only.

All offsets are unsigned (uint64): with signed indices Numba must handle negative
(wrap-around) indexing on every access, which stops LLVM from vectorising the copy
loops (measured 5-10x slower).
"""

import numpy as np
from numba import prange

from . import config as _config
from .config import kernel, scalar


@scalar
def _copy_grid(src, dst, s0, e0, n_a, src_a, dst_a, n_b, src_b, dst_b, unit):
    """``dst[e0 + a*dst_a + b*dst_b] = src[s0 + a*src_a + b*src_b]`` for a < n_a, b < n_b:
    one of im2col's two loop orders (``unit``: both inner steps are 1, a plain copy loop
    apart so that LLVM vectorises it)."""
    for a in range(n_a):
        s = s0 + a * src_a
        e = e0 + a * dst_a
        if unit:
            for b in range(n_b):
                dst[e + b] = src[s + b]
        else:
            for b in range(n_b):
                dst[e + b * dst_b] = src[s + b * src_b]


@kernel
def im2col(
    src, plane, table, kw_n, kw_step, ow_n, ow_step, dst, d0, d_n, d_c, d_k, d_p, n_chan, inner_k
):
    """Output-parallel: iteration ``i`` = (image ``n``, channel ``c``) writes only the
    entries of its own (n, c) — element (n, c, k, p) sits at
    ``d0 + n*d_n + c*d_c + k*d_k + p*d_p`` and (c, k) -> row is one-to-one — so no two
    iterations write the same word and the result does not depend on the thread count.

    ``src``: the padded image planes (N*C planes of ``plane`` words), flat. Kernel tap
    k = ko * kw_n + kw, output position p = oo * ow_n + ow (row-major; the last spatial
    dim innermost); the tap reads plane word ``table[ko, oo] + kw*kw_step + ow*ow_step``.
    ``inner_k``: loop over kw innermost (contiguous writes when d_k == 1) instead of ow.
    """
    u = np.uint64
    n_ko, n_oo = table.shape
    n_planes = src.size // plane
    kw_n_, kw_step_, ow_n_, ow_step_ = u(kw_n), u(kw_step), u(ow_n), u(ow_step)
    d_k_, d_p_ = u(d_k), u(d_p)
    unit = (d_k == 1 and kw_step == 1) if inner_k else (d_p == 1 and ow_step == 1)
    for i in prange(n_planes):
        n = i // n_chan
        c = i - n * n_chan
        src0 = u(i) * u(plane)
        dst0 = u(d0 + n * d_n + c * d_c)
        for ko in range(n_ko):
            for oo in range(n_oo):
                s0 = src0 + table[ko, oo]
                e0 = dst0 + u(ko) * kw_n_ * d_k_ + u(oo) * ow_n_ * d_p_
                if inner_k:
                    _copy_grid(src, dst, s0, e0, ow_n_, ow_step_, d_p_, kw_n_, kw_step_, d_k_, unit)
                else:
                    _copy_grid(src, dst, s0, e0, kw_n_, kw_step_, d_k_, ow_n_, ow_step_, d_p_, unit)


@kernel
def window_sum(y, table, out):
    """Output-parallel: iteration ``i`` = (image ``n``, output feature ``o``) writes only
    ``out[n, o, :]``: ``out[n, o, p] = sum_k y[o*K + k, n, table[k, p]]``, summed in
    increasing k (a fixed order: the result does not depend on the thread count).

    ``y``: (O*K, N, L+1), every kernel tap's products with every input position of
    every image, slot L zero; ``table``: (K, P) unsigned offsets (uint32 unless a plane
    has 2**32 elements), L for padding cells and dilation holes.
    """
    n_img, n_out, n_pos = out.shape
    n_taps = table.shape[0]
    for i in prange(n_img * n_out):
        n = i // n_out
        o = i - n * n_out
        row = out[n, o]
        for p in range(n_pos):
            row[p] = 0
        for k in range(n_taps):
            yk = y[o * n_taps + k, n]
            tk = table[k]
            for p in range(n_pos):
                row[p] += yk[tk[p]]


# -- two-dimensional im2col: no padded copy, contiguous runs along the last dim --------
#
# Geometry (computed once per shape in xops.ops.convolution): ``rows[kh, i]`` is the
# source row that kernel row kh reads for output row i, or -1 (padding); ``runs[kw]`` =
# (j0, count, j_step, s0, s_step): along the last dim, kernel column kw reads source
# column s0 + q*s_step into output column j0 + q*j_step for q < count, and padding
# (or an lhs-dilation hole) everywhere else. ``band[kh]`` = (i0, i1, h0) where the
# output rows i0 <= i < i1 read the source rows h0 + (i - i0) and every other row is
# padding (i1 = -1 where rows[kh] is not such a band). When, besides, source and output
# rows have one length and the run has unit steps, a tap's whole band is one linear
# run (output (i, j) <- source (h0 + i - i0, s0 + j - j0)): one long loop instead of a
# short one per row; the columns outside [j0, j0 + count) are then fixed up.


@kernel
def im2col_2d(src, n_img, n_chan, s_n, s_c, s_h, rows, band, runs, dst, d_n, d_r, n_ow):
    """Output-parallel: iteration ``it`` = (image n, channel c) writes only the rows
    (c, kh, kw) of image n — element (n, row, i, j) sits at ``n*d_n + row*d_r + i*n_ow
    + j`` — so no two iterations write the same word. Pure copies of words (uint32 or
    uint64 views), padding written as zero words.

    ``src``: flat words; image n, channel c, row h starts at ``n*s_n + c*s_c + h*s_h``.
    """
    u = np.uint64
    n_kh, n_oh = rows.shape
    n_kw = runs.shape[0]
    n_taps = n_kh * n_kw
    zero = dst.dtype.type(0)
    for it in prange(n_img * n_chan):
        n = it // n_chan
        c = it - n * n_chan
        s_base = n * s_n + c * s_c
        for kh in range(n_kh):
            for kw in range(n_kw):
                run = runs[kw]
                j0, count, j_step, s0, s_step = run[0], run[1], run[2], run[3], run[4]
                d_base = u(n * d_n + (c * n_taps + kh * n_kw + kw) * d_r)
                i0, i1, h0 = band[kh, 0], band[kh, 1], band[kh, 2]
                s = s_base + h0 * s_h + s0 - j0
                linear = i1 >= 0 and count > 0 and j_step == 1 and s_step == 1 and n_ow == s_h
                if linear and s >= 0 and s + (i1 - i0) * n_ow <= src.size:
                    for j in range(i0 * n_ow):
                        dst[d_base + u(j)] = zero
                    e = d_base + u(i0 * n_ow)
                    for q in range((i1 - i0) * n_ow):
                        dst[e + u(q)] = src[u(s) + u(q)]
                    for j in range(i1 * n_ow, n_oh * n_ow):
                        dst[d_base + u(j)] = zero
                    for i in range(i0, i1):  # the columns outside the run
                        e = d_base + u(i * n_ow)
                        for j in range(n_ow - count):
                            dst[e + u(j if j < j0 else j + count)] = zero
                    continue
                for i in range(n_oh):
                    e = d_base + u(i * n_ow)
                    h = rows[kh, i]
                    for j in range(n_ow):
                        dst[e + u(j)] = zero
                    if h >= 0:
                        s = s_base + h * s_h + s0
                        for q in range(count):
                            dst[e + u(j0 + q * j_step)] = src[u(s + q * s_step)]


def _window_sum_rows(y, taps, out, n_w, n_oh, n_ow, acc):
    """``window_sum`` for one or two spatial dims with stride 1 and no lhs dilation along
    the last, each tap's whole band of rows one linear run: output-parallel, iteration
    ``c`` takes a block of consecutive (output feature o, image n) pairs, in that order,
    and writes only their ``out[n, o]`` (with its own scratch row ``acc[c]``).

    ``y``: (O*K, N, H*n_w): Y at every input position, in rows of n_w = W + s words
    whose last s columns are the tap's product with zero columns. The sums run in a
    scratch plane of (n_oh, n_w), so that output (i, j) <- source (i, j) + d is one run
    ``taps[k] = (first, last, d)`` for tap k: the padding columns on either side of a
    row read the zero columns (the previous row's, on the left; the run starts inside
    the plane) and the columns past the output width are scratch. Taps add in
    increasing order, ``window_sum``'s.

    A zero column's product is +0, -0 or NaN (an infinite or NaN weight); the padding
    cells outside the runs do not add it: adding +-0 to a sum that starts at +0 never
    changes it, and the caller sets the cells of a NaN tap to NaN. Every element is
    ``window_sum``'s sum bit for bit, whatever the blocks.
    """
    u = np.uint64
    n_img = y.shape[1]
    n_taps = taps.shape[0]
    n_out = out.shape[1]
    n_it = n_img * n_out
    n_blocks = acc.shape[0]
    per = (n_it + n_blocks - 1) // n_blocks
    zero = out.dtype.type(0)
    for c in prange(n_blocks):
        plane = acc[c]
        end = (c + 1) * per
        for it in range(c * per, end if end < n_it else n_it):  # (no min(): its compile)
            o = it // n_img  # consecutive iterations read consecutive images' Y planes
            n = it - o * n_img
            for e in range(n_oh * n_w):
                plane[e] = zero
            for k in range(n_taps):
                yk = y[o * n_taps + k, n]
                d = taps[k, 2]
                for e in range(taps[k, 0], taps[k, 1]):
                    plane[u(e)] += yk[u(e + d)]
            row = out[n, o]
            for i in range(n_oh):
                for j in range(n_ow):
                    row[u(i * n_ow + j)] = plane[u(i * n_w + j)]


_WINDOW_SUM_ROWS = kernel(_window_sum_rows)
_SCRATCH_BLOCKS = 64  # (output feature, image) blocks of the parallel variant


def window_sum_rows(n, y, taps, out, n_w, n_oh, n_ow):
    """Runs :func:`_window_sum_rows` (``n``: the work, as for every kernel) with its
    scratch rows made here: one for the serial variant, one per block for the parallel
    one. (Allocated inside the kernel, the scratch cost the main job's first call ~0.3 s
    of compiling np.zeros; a row per block keeps the results independent of the thread
    count.)"""
    blocks = (
        1 if n < _config.PARALLEL_THRESHOLD else min(out.shape[0] * out.shape[1], _SCRATCH_BLOCKS)
    )
    acc = np.empty((max(blocks, 1), n_oh * n_w), out.dtype)
    _WINDOW_SUM_ROWS(n, y, taps, out, n_w, n_oh, n_ow, acc)
